--- Tether for Neovim: previews and review of an AI agent's tool calls through `tether serve`.
---
--- `require('tether').setup(opts)` is optional: the commands, the LspAttach hook and the highlight
--- groups exist from plugin/tether.lua already. setup() validates `opts` (every mistake named by its
--- field), makes them the active config, and passes the server options to `vim.lsp.config('tether')`.
--- It can be called again: state is replaced, never accumulated.
local M = {}

local api = vim.api

--- Autocommands and highlights; idempotent (the augroup is cleared every time).
function M.bootstrap()
  local preview = require('tether.preview')
  preview.define_highlights()
  local group = api.nvim_create_augroup('tether', { clear = true })
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = preview.define_highlights })
  api.nvim_create_autocmd('LspAttach', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == require('tether.lsp').NAME then
        require('tether.lsp').on_attach(client, ev.buf)
      end
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    callback = function(ev)
      local preview = package.loaded['tether.preview']
      if preview then
        preview.proposals[ev.buf], preview.drawn[ev.buf] = nil, nil
      end
    end,
  })
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'TetherApprovalAsked', 'TetherApprovalAnswered' },
    callback = function(ev)
      require('tether.chat').on_approval(ev)
    end,
  })
  api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      require('tether.lsp').on_progress(ev)
    end,
  })
end

---@param opts? table see `:help tether-config`
function M.setup(opts)
  local config = require('tether.config')
  local cfg, errors, warnings = config.build(opts)
  for _, w in ipairs(warnings) do
    require('tether.log').warn('setup(): ' .. w)
  end
  if #errors > 0 then
    error('tether: setup(): ' .. table.concat(errors, '; '), 0)
  end
  config.current = cfg
  if vim.lsp.config ~= nil then
    vim.lsp.config(require('tether.lsp').NAME, {
      cmd = cfg.cmd,
      init_options = config.init_options(cfg),
    })
  end
  M.bootstrap()
  if vim.lsp.enable == nil then
    M.autostart_010()
  end
end

--- The statusline component: the session's permissions, `⚠ workspace` highlighted when that mode
--- is on (`:h tether-statusline`). `opts.plain` gives the text without highlight codes.
---@param opts? { plain?: boolean }
---@return string
function M.statusline(opts)
  return require('tether.status').statusline(opts)
end

--- Neovim 0.10 has no `vim.lsp.enable`: start the server per file buffer with `vim.lsp.start`,
--- using the same `lsp/tether.lua` config (root: the enclosing git repository).
function M.autostart_010()
  local group = api.nvim_create_augroup('tether.autostart', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    callback = function(ev)
      if vim.bo[ev.buf].buftype ~= '' or api.nvim_buf_get_name(ev.buf) == '' then
        return
      end
      local root = vim.fs.root(ev.buf, { '.git' })
      if not root then
        return
      end
      local files = api.nvim_get_runtime_file('lsp/tether.lua', false)
      local base = dofile(files[1])
      base.root_dir = nil
      vim.lsp.start(vim.tbl_extend('force', base, { name = 'tether', root_dir = root }), { bufnr = ev.buf })
    end,
  })
end

return M
