--- What the session may do, as the server last said (`tether.status`, `tether.setPermissions`), and
--- the statusline component that shows it.
---
--- Why the server's answer and not the configured permissions: the project config may narrow them
--- and a read-only (untrusted) workspace has none; the statusline must show what actually applies.
--- `workspace` mode (any program may run in the sandbox with the workspace writable) is marked
--- with `⚠ workspace` in the TetherWorkspace highlight, so it is never on unnoticed.
local M = {}

---@class tether.SessionState
---@field permissions string  canonical spelling, e.g. "read,command,workspace"
---@field readOnly boolean    the workspace is untrusted: no permissions at all

---@type table<integer, tether.SessionState>
M.by_client = {}

--- Remember the state of a client from a `tether.status` or `tether.setPermissions` result.
---@param client_id integer
---@param res table
function M.set(client_id, res)
  if type(res) ~= 'table' or type(res.permissions) ~= 'string' then
    return
  end
  local previous = M.by_client[client_id] or {}
  M.by_client[client_id] = {
    permissions = res.permissions,
    -- setPermissions does not repeat readOnly; it keeps what tether.status said.
    readOnly = res.readOnly == nil and previous.readOnly == true or res.readOnly == true,
  }
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus, { bang = true })
  end)
end

--- Ask the server for its state (asynchronously: this runs on attach, never blocks typing).
---@param client vim.lsp.Client
function M.refresh(client)
  require('tether.lsp').exec('tether.status', {}, { client = client }, function(err, res)
    if not err then
      M.set(client.id, res)
    end
  end)
end

--- The statusline segments for a state (pure; tested): `{ {text, highlight group}, ... }`.
--- No state (no client, or no answer yet) is no segment: the statusline stays empty.
---@param state tether.SessionState?
---@return { [1]: string, [2]: string }[]
function M.segments(state)
  if type(state) ~= 'table' or type(state.permissions) ~= 'string' then
    return {}
  end
  if state.readOnly then
    return { { 'tether: read-only', 'TetherStatus' } }
  end
  local words = {}
  for part in vim.gsplit(state.permissions, ',', { plain = true }) do
    if vim.trim(part) ~= 'workspace' then
      table.insert(words, vim.trim(part))
    end
  end
  if not require('tether.config').has_workspace(state.permissions) then
    return { { 'tether: ' .. state.permissions, 'TetherStatus' } }
  end
  local out = { { 'tether:', 'TetherStatus' } }
  if #words > 0 then
    out[1][1] = 'tether: ' .. table.concat(words, ',')
  end
  table.insert(out, { ' ⚠ workspace', 'TetherWorkspace' })
  return out
end

--- The state of the tether client for `bufnr` (or any tether client), if known.
---@param bufnr? integer
---@return tether.SessionState?
function M.current(bufnr)
  local client = require('tether.lsp').get_client(bufnr)
  return client and M.by_client[client.id] or nil
end

--- Segments as a 'statusline' string: `%#Group#text` parts, `%` escaped, then `%*`.
---@param segments { [1]: string, [2]: string }[]
---@return string
function M.render(segments)
  if #segments == 0 then
    return ''
  end
  local out = {}
  for _, seg in ipairs(segments) do
    table.insert(out, string.format('%%#%s#%s', seg[2], (seg[1]:gsub('%%', '%%%%'))))
  end
  return table.concat(out) .. '%*'
end

--- The statusline component: `require('tether').statusline()` (see `:h tether-statusline`).
---@param opts? { plain?: boolean }  plain: text only, for statusline plugins that color it themselves
---@return string
function M.statusline(opts)
  local segments = M.segments(M.current(vim.api.nvim_get_current_buf()))
  if opts and opts.plain then
    return table.concat(
      vim.tbl_map(function(s)
        return s[1]
      end, segments)
    )
  end
  return M.render(segments)
end

return M
