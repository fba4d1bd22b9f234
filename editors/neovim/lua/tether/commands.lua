--- The `:Agent*` commands: argument parsing and completion (pure, tested without a server), and
--- what each command asks the server (docs/lsp.md).
---
--- Every command exists globally (defined from plugin/tether.lua, so they work without setup()) and
--- buffer-locally in each buffer the tether client attaches to (nvim-lspconfig's rule). Both run
--- the same code; the global one finds the running client, or says clearly that none is running.
local M = {}

local api = vim.api

local function log()
  return require('tether.log')
end
local function lsp()
  return require('tether.lsp')
end
local function preview()
  return require('tether.preview')
end

-- Argument parsing ----------------------------------------------------------------------------------

--- `:AgentRollback [N|checkpoint-id]` → the `tether.rollback` argument.
---@param arg string
---@return table? args, string? err
function M.parse_rollback(arg)
  arg = vim.trim(arg or '')
  if arg == '' then
    return { steps = 1 }, nil
  end
  -- A short number is a count of steps; a checkpoint id is 7+ hex digits (git-like) or `c-…`.
  if arg:match('^%d+$') and #arg <= 6 then
    local n = tonumber(arg)
    if n >= 1 and n <= 10000 then
      return { steps = n }, nil
    end
  elseif (arg:match('^%x+$') and #arg >= 7 and #arg <= 64) or arg:match('^c%-[%w%-]+$') then
    return { checkpoint = arg }, nil
  end
  return nil,
    string.format(
      ":AgentRollback takes a number of steps (a positive integer, default 1) or a checkpoint id (see :AgentCheckpoints), not '%s'",
      arg
    )
end

--- `:AgentLog [N]` → the `tether.toolLog` argument.
---@return table? args, string? err
function M.parse_log(arg, default_n)
  arg = vim.trim(arg or '')
  if arg == '' then
    return { n = default_n }, nil
  end
  if arg:match('^%d+$') and tonumber(arg) >= 1 then
    return { n = tonumber(arg) }, nil
  end
  return nil, string.format(":AgentLog takes a positive number of entries (default %d), not '%s'", default_n, arg)
end

--- `:AgentAccept` / `:AgentReject` take nothing (the hunk under the cursor) or `%` (the proposal).
---@return boolean? whole, string? err
function M.parse_scope(name, arg)
  arg = vim.trim(arg or '')
  if arg == '' then
    return false, nil
  end
  if arg == '%' then
    return true, nil
  end
  return nil,
    string.format(":%s takes no argument (the hunk under the cursor) or %% (the whole proposal), not '%s'", name, arg)
end

--- `:AgentMode` completion: the words, also after a comma ("read,w<Tab>" → "read,write").
---@param arglead string
---@return string[]
function M.complete_mode(arglead)
  local prefix, last = arglead:match('^(.*,)([^,]*)$')
  if not prefix then
    prefix, last = '', arglead
  end
  local used = {}
  for word in prefix:gmatch('[^,]+') do
    used[vim.trim(word)] = true
  end
  local out = {}
  for _, word in ipairs(require('tether.config').PERMISSION_WORDS) do
    -- After a comma: no `none` or `all`; after `all,` only the word `all` lacks (workspace).
    local in_all = vim.list_contains({ 'read', 'write', 'command' }, word)
    local combinable = prefix == '' or (word ~= 'none' and word ~= 'all' and not (used.all and in_all))
    if combinable and not used[word] and vim.startswith(word, last) then
      table.insert(out, prefix .. word)
    end
  end
  if prefix == '' and arglead == '' then
    table.insert(out, 'read,write')
  end
  return out
end

local function complete_pending_ids(arglead)
  local ids, seen = {}, {}
  local client = lsp().get_client()
  local res = client and lsp().exec_sync(client, 'tether.proposals', {}, 500)
  local lists = res and { res.proposals or {} } or preview().proposals
  for _, list in pairs(lists) do
    for _, p in ipairs(list) do
      local open = p.state ~= 'accepted' and p.state ~= 'rejected'
      if open and not seen[p.id] and vim.startswith(p.id, arglead) then
        seen[p.id] = true
        table.insert(ids, p.id)
      end
    end
  end
  table.sort(ids)
  return ids
end

local function complete_rollback(arglead)
  local client = lsp().get_client()
  if not client then
    return {}
  end
  local res = lsp().exec_sync(client, 'tether.checkpoints', {}, 500)
  local out = {}
  for i, cp in ipairs(res and res.checkpoints or {}) do
    for _, cand in ipairs({ tostring(i), cp.id }) do
      if vim.startswith(cand, arglead) then
        table.insert(out, cand)
      end
    end
  end
  return out
end

-- Helpers --------------------------------------------------------------------------------------------

local function plural(n, word)
  return string.format('%d %s%s', n, word, n == 1 and '' or 's')
end

local function refresh_all()
  for _, client in ipairs(vim.lsp.get_clients({ name = lsp().NAME })) do
    preview().refresh(client)
  end
end

local function workspace_of(client)
  local folder = client.workspace_folders and client.workspace_folders[1]
  if folder then
    return vim.uri_to_fname(folder.uri)
  end
  return client.root_dir
end

--- After a rollback: reload the buffers of files it changed on disk, so the user sees them. A buffer
--- with unsaved changes is left alone, with a warning (reloading would lose them).
local function reload_buffers(client, res)
  local root = workspace_of(client)
  if not root then
    return
  end
  local kept = {}
  -- The server already brings open buffers in line with the disk (workspace/applyEdit), which
  -- leaves them 'modified' although they equal the file; those are marked unmodified.
  for _, key in ipairs({ 'restored', 'deleted', 'created' }) do
    for _, rel in ipairs(res[key] or {}) do
      local full = vim.fs.joinpath(root, rel)
      for _, b in ipairs(api.nvim_list_bufs()) do
        if api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' then
          local name = api.nvim_buf_get_name(b)
          if
            name ~= '' and (vim.uv.fs_realpath(name) or name) == (vim.uv.fs_realpath(full) or full) or name == full
          then
            local on_disk = vim.uv.fs_stat(full) and vim.fn.readfile(full) or nil
            if vim.bo[b].modified and on_disk and vim.deep_equal(on_disk, api.nvim_buf_get_lines(b, 0, -1, false)) then
              vim.bo[b].modified = false
            elseif vim.bo[b].modified then
              table.insert(kept, rel)
            elseif vim.uv.fs_stat(full) then
              api.nvim_buf_call(b, function()
                vim.cmd('silent edit!')
              end)
            end
          end
        end
      end
    end
  end
  if #kept > 0 then
    log().warn('unsaved changes kept in ' .. table.concat(kept, ', ') .. ' (:edit! loads the rolled-back file)')
  end
end

local function rollback_summary(res)
  return string.format(
    'rolled back: %d restored, %d deleted, %d re-created (undo with :AgentRollback 1; checkpoint %s)',
    #(res.restored or {}),
    #(res.deleted or {}),
    #(res.created or {}),
    tostring(res.checkpoint)
  )
end

-- Command implementations ------------------------------------------------------------------------------

local conversations = {}

local impl = {}

function impl.AgentAsk(p, bufnr)
  local prompt = vim.trim(p.args)
  if prompt == '' then
    return log().error(':AgentAsk needs a prompt, e.g. :AgentAsk add a docstring to main()')
  end
  local client, err = lsp().get_client(bufnr)
  if not client then
    return log().error(err)
  end
  if p.bang then
    conversations[client.id] = nil
  end
  log().info('asking the agent…')
  lsp().exec(
    'tether.ask',
    { prompt = prompt, conversationId = conversations[client.id] },
    { client = client, bufnr = bufnr },
    function(e, res)
      if e then
        return log().error(e)
      end
      conversations[client.id] = res.conversationId
      local lines, hls = require('tether.ui').format_ask(prompt, res)
      require('tether.ui').scratch('tether://ask', lines, hls)
      refresh_all()
    end
  )
end

function impl.AgentRollback(p, bufnr)
  local args, perr = M.parse_rollback(p.args)
  if not args then
    return log().error(perr)
  end
  local client, err = lsp().get_client(bufnr)
  if not client then
    return log().error(err)
  end
  local label = args.steps and plural(args.steps, 'step') or args.checkpoint
  local function run()
    lsp().exec('tether.rollback', args, { client = client, bufnr = bufnr }, function(e, res)
      if e then
        return log().error(e)
      end
      reload_buffers(client, res)
      log().info(rollback_summary(res))
      refresh_all()
    end)
  end
  if p.bang then
    return run()
  end
  local dry = vim.tbl_extend('force', args, { dryRun = true })
  lsp().exec('tether.rollback', dry, { client = client, bufnr = bufnr }, function(e, plan)
    if e then
      return log().error(e)
    end
    local lines, hls = require('tether.ui').format_rollback_plan(plan, label)
    require('tether.ui').confirm_float(lines, hls, function(yes)
      if yes then
        run()
      else
        log().info('rollback cancelled')
      end
    end)
  end)
end

function impl.AgentCheckpoints(_, bufnr)
  lsp().exec('tether.checkpoints', {}, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    local lines, hls = require('tether.ui').format_checkpoints(res.checkpoints or {})
    require('tether.ui').scratch('tether://checkpoints', lines, hls)
  end)
end

function impl.AgentLog(p, bufnr)
  local args, perr = M.parse_log(p.args, require('tether.config').get().log_entries)
  if not args then
    return log().error(perr)
  end
  lsp().exec('tether.toolLog', args, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    local lines, hls = require('tether.ui').format_log(res.entries or {})
    require('tether.ui').scratch('tether://log', lines, hls)
  end)
end

--- Report the permissions the server answered, and remember them for the statusline. Turning on
--- `workspace` mode is a warning, with what it means, so it is never switched on unnoticed.
local function report_permissions(client, res, changed)
  require('tether.status').set(client.id, res)
  local perms = tostring(res.permissions)
  if require('tether.config').has_workspace(perms) then
    local text = 'permissions: ' .. perms .. ' — ⚠ workspace mode: any program may run in the sandbox with the '
      .. 'workspace writable (no network, protected paths read-only, checkpoint first)'
    return log().notify(text, changed and vim.log.levels.WARN or vim.log.levels.INFO)
  end
  log().info('permissions: ' .. perms .. (res.readOnly == true and ' (read-only workspace)' or ''))
end

function impl.AgentMode(p, bufnr)
  local arg = vim.trim(p.args)
  local perms, perr = nil, nil
  if arg ~= '' then
    perms, perr = require('tether.config').parse_permissions(arg)
    if not perms then
      return log().error(':AgentMode: ' .. perr)
    end
  end
  local client, err = lsp().get_client(bufnr)
  if not client then
    return log().error(err)
  end
  if arg == '' then
    return lsp().exec('tether.status', {}, { client = client, bufnr = bufnr }, function(e, res)
      if e then
        return log().error(e)
      end
      report_permissions(client, res, false)
    end)
  end
  lsp().exec('tether.setPermissions', { permissions = perms }, { client = client, bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    report_permissions(client, res, true)
  end)
end

--- Accept or reject: the hunk under the cursor, or with `%` the whole proposal. Works in a file
--- buffer (extmark previews) and in the right side of an `:AgentDiff` tab.
local function decide(name, command, p, bufnr)
  local whole, perr = M.parse_scope(name, p.args)
  if whole == nil then
    return log().error(perr)
  end
  local row = api.nvim_win_get_cursor(0)[1]
  local id, hunk
  if vim.b[bufnr].tether_proposal then
    id, hunk = require('tether.diff').hunk_at(bufnr, row)
  else
    local proposal
    if whole then
      local err
      proposal, err = preview().proposal_for(bufnr, row - 1)
      if not proposal then
        return log().error(string.format(':%s %%: %s', name, err))
      end
    else
      proposal, hunk = preview().hunk_at(bufnr, row - 1)
    end
    id = proposal and proposal.id
  end
  if not id or (not whole and not hunk) then
    return log().error(
      string.format('no pending tether hunk under the cursor (:%s %% acts on the whole proposal)', name)
    )
  end
  local args = { id = id }
  if not whole then
    args.hunks = { hunk.index }
  end
  lsp().exec(command, args, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    local which = whole and 'proposal ' .. id or string.format('hunk %d of %s', hunk.index, id)
    local verb = command == 'tether.accept' and 'accepted' or 'rejected'
    log().info(string.format('%s %s (%s)', verb, which, (res.proposal or {}).state or '?'))
    refresh_all()
  end)
end

function impl.AgentAccept(p, bufnr)
  decide('AgentAccept', 'tether.accept', p, bufnr)
end

function impl.AgentReject(p, bufnr)
  decide('AgentReject', 'tether.reject', p, bufnr)
end

function impl.AgentDiff(p, bufnr)
  local id = vim.trim(p.args)
  if id == '' then
    local proposal, err = preview().proposal_for(bufnr, api.nvim_win_get_cursor(0)[1] - 1)
    if not proposal then
      return log().error(':AgentDiff: ' .. err .. ' (or give a proposal id)')
    end
    id = proposal.id
  elseif not id:match('^p%-%x+$') then
    return log().error(string.format(":AgentDiff takes a proposal id like p-1a2b3c4d, not '%s'", id))
  end
  require('tether.diff').open(bufnr, id)
end

function impl.AgentRun(p, bufnr)
  local command = vim.trim(p.args)
  lsp().exec(
    'tether.runTool',
    { name = 'bash_command', input = { command = command } },
    { bufnr = bufnr },
    function(e, res)
      if e then
        return log().error(e)
      end
      local lines, hls = require('tether.ui').format_run(command, res.result or {})
      require('tether.ui').scratch('tether://run', lines, hls)
      refresh_all()
    end
  )
end

function impl.AgentCheck(p, bufnr)
  local command = vim.trim(p.args)
  lsp().exec('tether.checkCommand', { command = command }, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    local text =
      string.format('%s (%s): %s', res.allowed and 'allowed' or 'denied', tostring(res.rule), tostring(res.reason))
    if res.suggestion and res.suggestion ~= vim.NIL then
      text = text .. ' — ' .. tostring(res.suggestion)
    end
    log().notify(text, res.allowed and vim.log.levels.INFO or vim.log.levels.WARN)
  end)
end

function impl.AgentExplain(p, bufnr)
  local explain = require('tether.explain')
  local args, perr = explain.parse(p.args)
  if not args then
    return log().error(perr)
  end
  lsp().exec('tether.explain', args, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    local lines, hls = explain.format(args.command, res)
    require('tether.ui').info_float(lines, hls, ' tether explain ')
  end)
end

function impl.AgentChat(p, bufnr)
  local id = vim.trim(p.args)
  require('tether.chat').open({ id = id ~= '' and id or nil, fresh = p.bang, bufnr = bufnr })
end

--- `:AgentAllowSecret {path}`: the person lets the agent read one secret file until the server stops
--- (`tether.allowSecret`, audited). Named in every secret-file refusal; asks before it allows.
function impl.AgentAllowSecret(p, bufnr)
  local path = vim.trim(p.args)
  local prompt = string.format('Let the agent read %s until the server stops? Its content will reach the model.', path)
  if vim.fn.confirm(prompt, '&Allow\n&No', 2, 'Warning') ~= 1 then
    return log().info('not allowed: ' .. path)
  end
  lsp().exec('tether.allowSecret', { path = path }, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    log().info(string.format('the agent may read %s until the server stops', res.path or path))
  end)
end

function impl.AgentCancel(_, bufnr)
  lsp().exec('tether.cancel', {}, { bufnr = bufnr }, function(e, res)
    if e then
      return log().error(e)
    end
    log().info(res.cancelled and 'cancelled the running work' or 'nothing to cancel')
  end)
end

-- Definitions ----------------------------------------------------------------------------------------

---@type table<string, table>
M.specs = {
  AgentAsk = { nargs = '+', bang = true, desc = 'Ask the agent (! starts a new conversation)' },
  AgentChat = {
    nargs = '?',
    bang = true,
    complete = function(arglead)
      return require('tether.chat').complete(arglead)
    end,
    desc = 'Open the chat with the agent ({id} resumes a conversation, ! starts a new one)',
  },
  AgentRollback = {
    nargs = '?',
    bang = true,
    complete = complete_rollback,
    desc = 'Undo the last N tool calls (! without asking)',
  },
  AgentCheckpoints = { nargs = 0, desc = 'List tether checkpoints' },
  AgentLog = { nargs = '?', desc = 'Show the last N audited tool calls' },
  AgentMode = {
    nargs = '?',
    complete = function(arglead)
      return M.complete_mode(arglead)
    end,
    desc = 'Set (or show) the agent permissions',
  },
  AgentAccept = {
    nargs = '?',
    complete = function()
      return { '%' }
    end,
    desc = 'Accept the proposal hunk under the cursor (% for all)',
  },
  AgentReject = {
    nargs = '?',
    complete = function()
      return { '%' }
    end,
    desc = 'Reject the proposal hunk under the cursor (% for all)',
  },
  AgentDiff = { nargs = '?', complete = complete_pending_ids, desc = 'Show a proposal in a diff tab' },
  AgentRun = { nargs = '+', complete = 'shellcmd', desc = 'Run a command through the tether gate' },
  AgentExplain = {
    nargs = '+',
    complete = function(arglead, cmdline)
      if cmdline:match('^%s*AgentExplain%s+%S*$') and vim.startswith('--mode', arglead) then
        return { '--mode' }
      end
      if cmdline:match('%-%-mode%s+%S*$') then
        return vim.tbl_filter(function(m)
          return vim.startswith(m, arglead)
        end, require('tether.explain').MODES)
      end
      return vim.fn.getcompletion(arglead, 'shellcmd')
    end,
    desc = 'Explain the policy decision on a command, layer by layer',
  },
  AgentCancel = { nargs = 0, desc = 'Cancel the running agent turn or command' },
  AgentAllowSecret = {
    nargs = 1,
    complete = 'file',
    desc = 'Let the agent read one secret file (e.g. .env) until the server stops',
  },
  AgentCheck = { nargs = '+', complete = 'shellcmd', desc = 'Would the tether policy allow this command?' },
}

--- Run command `name` with the user-command `params`, guarding against any Lua error so a bug shows
--- as one readable message (and a log line) instead of a stack trace.
function M.run(name, params)
  local bufnr = api.nvim_get_current_buf()
  local ok, err = xpcall(impl[name], debug.traceback, params, bufnr)
  if not ok then
    require('tether.log').write('error', ':%s failed: %s', name, err)
    require('tether.log').error(
      string.format(':%s failed: %s (details in %s)', name, tostring(err):match('[^\n]*'), require('tether.log').path())
    )
  end
end

local function options(name, spec)
  local opts = { nargs = spec.nargs, bang = spec.bang, desc = spec.desc, force = true }
  if type(spec.complete) == 'function' then
    opts.complete = function(arglead, cmdline, pos)
      return spec.complete(arglead, cmdline, pos)
    end
  else
    opts.complete = spec.complete
  end
  return function(params)
    M.run(name, params)
  end, opts
end

function M.define_global()
  for name, spec in pairs(M.specs) do
    local fn, opts = options(name, spec)
    api.nvim_create_user_command(name, fn, opts)
  end
end

---@param bufnr integer
function M.attach_buffer(bufnr)
  for name, spec in pairs(M.specs) do
    local fn, opts = options(name, spec)
    api.nvim_buf_create_user_command(bufnr, name, fn, opts)
  end
end

return M
