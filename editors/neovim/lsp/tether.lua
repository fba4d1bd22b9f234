---@brief
--- Tether's language server, `tether serve` (the `tether` command of the tether Python package).
--- Enable with `vim.lsp.enable('tether')`; options come from `require('tether').setup()`.
--- Attaches to every filetype in a git workspace; previews come from the server's diagnostics and
--- from the plugin's extmarks (:help tether).
local config = require('tether.config')
local cfg = config.get()

---@type vim.lsp.Config
return {
  cmd = cfg.cmd,
  -- Only buffers of real files inside a git workspace. Why not plain `root_markers`: an unnamed
  -- buffer resolves markers from the cwd, which would start a server for whatever repository
  -- Neovim happened to be started in.
  root_dir = function(bufnr, on_dir)
    if vim.api.nvim_buf_get_name(bufnr) == '' then
      return
    end
    local root = vim.fs.root(bufnr, { '.git' })
    if root then
      on_dir(root)
    end
  end,
  workspace_required = true,
  init_options = config.init_options(cfg),
  handlers = {
    ['tether/event'] = function(...)
      return require('tether.lsp').on_event(...)
    end,
    ['tether/turn'] = function(...)
      return require('tether.chat').on_turn(...)
    end,
    -- A request: the handler's return value is the answer (it yields while the person decides).
    ['tether/approve'] = function(...)
      return require('tether.approve').handler(...)
    end,
    ['$/cancelRequest'] = function(...)
      return require('tether.approve').on_cancel(...)
    end,
  },
}
