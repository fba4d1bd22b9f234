--- The plugin's side of the LSP connection: finding the client, calling the server's commands
--- (docs/lsp.md), and reacting to `tether/event` and progress.
local M = {}

M.NAME = 'tether'

-- Neovim 0.11 made client methods take `self` (`client:request`); 0.10 has plain function fields.
local HAS_METHODS = vim.fn.has('nvim-0.11') == 1

local function request(client, ...)
  if HAS_METHODS then
    return client:request(...)
  end
  return client.request(...)
end

local function request_sync(client, ...)
  if HAS_METHODS then
    return client:request_sync(...)
  end
  return client.request_sync(...)
end

local NO_CLIENT = "no tether language server is running for this buffer: add vim.lsp.enable('tether') "
  .. 'to your config and open a file inside a git workspace (:help tether-setup)'

--- The tether client for `bufnr`, else any running tether client (scratch buffers such as the log
--- view are not attached, and commands there should still work).
---@param bufnr? integer
---@return vim.lsp.Client? client, string? err
function M.get_client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  -- The proposed side of a diff tab acts for the file buffer it was opened from.
  local source = vim.b[bufnr].tether_source
  if source and vim.api.nvim_buf_is_valid(source) then
    bufnr = source
  end
  local clients = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr })
  if #clients == 0 then
    clients = vim.lsp.get_clients({ name = M.NAME })
  end
  if #clients == 0 then
    return nil, NO_CLIENT
  end
  return clients[1], nil
end

--- JSON cannot tell an empty Lua table from an empty list; the server wants objects.
local function as_object(args)
  if args == nil or next(args) == nil then
    return vim.empty_dict()
  end
  return args
end
M.as_object = as_object

--- Call a server command with its one object argument (docs/lsp.md).
--- Why `workspace/executeCommand` directly and not `client:exec_cmd`: exec_cmd silently drops a
--- command the server did not advertise, and never calls the handler; we always want an answer.
---@param command string e.g. 'tether.accept'
---@param args table? the argument object
---@param opts { client?: vim.lsp.Client, bufnr?: integer }
---@param cb fun(err: string?, result: table?)
function M.exec(command, args, opts, cb)
  local client, err = opts.client, nil
  if not client then
    client, err = M.get_client(opts.bufnr)
  end
  if not client then
    cb(err, nil)
    return
  end
  local params = { command = command, arguments = { as_object(args) } }
  require('tether.log').write('debug', 'request %s %s', command, vim.json.encode(params.arguments[1]))
  local ok = request(client, 'workspace/executeCommand', params, function(rpc_err, result)
    if rpc_err then
      local msg = type(rpc_err) == 'table' and (rpc_err.message or vim.inspect(rpc_err)) or tostring(rpc_err)
      require('tether.log').write('warn', '%s failed: %s', command, msg)
      cb(string.format('%s: %s', command, msg), nil)
    else
      cb(nil, result or {})
    end
  end, opts.bufnr)
  if not ok then
    cb(string.format('%s: the language server has stopped', command), nil)
  end
end

--- Synchronous variant for `:checkhealth` (which must return its report in one go).
---@return table? result, string? err
function M.exec_sync(client, command, args, timeout_ms)
  local response, err = request_sync(
    client,
    'workspace/executeCommand',
    { command = command, arguments = { as_object(args) } },
    timeout_ms or 3000
  )
  if not response then
    return nil, err or 'no response'
  end
  if response.err then
    return nil, response.err.message or vim.inspect(response.err)
  end
  return response.result, nil
end

local EVENT_WORDS = {
  executed = 'ran',
  dry_run = 'dry run of',
  denied = 'denied',
  failed = 'failed',
  proposed = 'proposed an edit with',
  accepted = 'accepted',
  partially_accepted = 'partially accepted',
  rejected = 'rejected',
  stale = 'stale proposal from',
  rolled_back = 'rolled back',
}

--- One line for a `tether/event` (pure; tested).
---@param ev table `{tool, decision, state, proposalId?, checkpoint?}`
---@return string text, integer level
function M.describe_event(ev)
  local state = ev.state or '?'
  -- An answered approval question is its own audited call (tool `approval`): say what was decided.
  if ev.tool == 'approval' then
    if state == 'denied' then
      local why = type(ev.decision) == 'table' and type(ev.decision.reason) == 'string' and ev.decision.reason
      return 'approval: denied' .. (why and (' (' .. why .. ')') or ''), vim.log.levels.WARN
    end
    return 'approval: allowed', vim.log.levels.INFO
  end
  -- A dry run that produced a proposal is the usual way edits arrive: say so.
  if state == 'dry_run' and ev.proposalId then
    state = 'proposed'
  end
  local text = string.format('%s %s', EVENT_WORDS[state] or state, ev.tool or '?')
  if ev.proposalId then
    text = text .. ' (' .. ev.proposalId .. ')'
  end
  if state == 'denied' and type(ev.decision) == 'table' and ev.decision.reason then
    text = text .. ': ' .. ev.decision.reason
  end
  local level = vim.log.levels.INFO
  if state == 'denied' or state == 'stale' then
    level = vim.log.levels.WARN
  elseif state == 'failed' then
    level = vim.log.levels.ERROR
  end
  return text, level
end

--- Handler for the server's `tether/event` notification: redraw and tell the user.
function M.on_event(_, params, ctx)
  local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    require('tether.preview').refresh(client)
  end
  if type(params) ~= 'table' or type(params.state) ~= 'string' then
    require('tether.log').write('warn', 'ignoring malformed tether/event: %s', vim.inspect(params))
    return
  end
  if require('tether.config').get().notify_events then
    local text, level = M.describe_event(params)
    require('tether.log').notify(text, level)
  end
end

--- Per buffer when the tether client attaches: commands and the first preview.
---@param client vim.lsp.Client
---@param bufnr integer
function M.on_attach(client, bufnr)
  if client.handlers and client.handlers['tether/event'] == nil then
    client.handlers['tether/event'] = M.on_event
  end
  if client.handlers and client.handlers['tether/turn'] == nil then
    client.handlers['tether/turn'] = require('tether.chat').on_turn
  end
  -- A client started from a config of the user's own (not lsp/tether.lua) still answers approvals.
  if client.handlers and client.handlers['tether/approve'] == nil then
    client.handlers['tether/approve'] = require('tether.approve').handler
    client.handlers['$/cancelRequest'] = require('tether.approve').on_cancel
  end
  require('tether.commands').attach_buffer(bufnr)
  require('tether.preview').refresh(client)
  if require('tether.status').by_client[client.id] == nil then
    require('tether.status').refresh(client)
  end
end

--- `LspProgress` for the tether client → vim.notify (begin and end only: reports are too chatty).
function M.on_progress(ev)
  if not require('tether.config').get().notify_progress then
    return
  end
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= M.NAME then
    return
  end
  local value = ev.data.params and ev.data.params.value or {}
  if value.kind == 'begin' then
    require('tether.log').info((value.title or 'working') .. (value.message and (': ' .. value.message) or '') .. '…')
  elseif value.kind == 'end' then
    require('tether.log').info((value.message or 'done'))
  end
end

return M
