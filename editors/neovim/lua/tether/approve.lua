--- Approvals: the server's `tether/approve` request (docs/lsp.md, "Approvals") answered in Neovim.
---
--- When the policy's verdict is *ask*, the tool call waits while the server asks us. We show the
--- question in a floating window (the command, the segments that need approval and why, the sandbox,
--- and for "Always allow" the exact rule and its file), ask with `vim.ui.select` for one of exactly
--- "Allow once", "Allow for this session", "Always allow", "Deny", and after Deny with `vim.ui.input`
--- for an optional message to the model.
---
--- Why a coroutine: Neovim (0.10+) runs the handler of a server-to-client request inside a coroutine
--- and sends the handler's return value as the response. Neovim's own `window/showMessageRequest`
--- handler yields there and resumes from `vim.ui.select`'s callback; we do the same, so the editor
--- stays responsive while the question is open (with an asynchronous `vim.ui.select`, such as
--- telescope's or fzf-lua's). Outside a coroutine we fall back to a blocking `inputlist()`.
---
--- Fail closed: a malformed question, a dismissed prompt, the question's timeout, or the server
--- taking the question back (`$/cancelRequest`) all answer `deny`.
local M = {}

local api = vim.api

M.METHOD = 'tether/approve'

--- The four choices, in the order shown; titles exactly as the server's showMessageRequest uses.
M.CHOICES = {
  { title = 'Allow once', choice = 'allow_once' },
  { title = 'Allow for this session', choice = 'allow_session' },
  { title = 'Always allow', choice = 'allow_always' },
  { title = 'Deny', choice = 'deny' },
}

M.MESSAGE_PROMPT = 'Tether: message to the model (optional, <Enter> for none): '

local MAX_MESSAGE_CHARS = 4000

local present, one_line = require('tether.ui').present, require('tether.ui').one_line

--- A word as a shell would need it written (display only).
local function shell_word(word)
  word = tostring(word)
  if word ~= '' and not word:find("[^%w%-%./_=:,+@%%]") then
    return word
  end
  return "'" .. word:gsub("'", "'\\''") .. "'"
end

---@param argv string[]
---@return string
function M.argv_text(argv)
  return table.concat(vim.tbl_map(shell_word, argv), ' ')
end

--- Check the request's params; the reason names what is wrong (then the answer is deny).
---@param params any
---@return boolean ok, string? reason
function M.validate(params)
  if type(params) ~= 'table' then
    return false, 'the question is not an object'
  end
  if type(params.command) ~= 'string' or params.command == '' then
    return false, 'the question has no command'
  end
  if type(params.segments) ~= 'table' or not vim.islist(params.segments) then
    return false, 'the question has no list of segments'
  end
  for i, seg in ipairs(params.segments) do
    if type(seg) ~= 'table' or type(seg.argv) ~= 'table' or not vim.islist(seg.argv) then
      return false, string.format('segment %d has no argv list', i)
    end
    for _, word in ipairs(seg.argv) do
      if type(word) ~= 'string' then
        return false, string.format('segment %d has a word that is not a string', i)
      end
    end
  end
  return true, nil
end

--- "2 min", "45 s": how long the question waits before it is a deny.
local function duration(ms)
  local s = math.floor(ms / 1000)
  if s >= 120 then
    return string.format('%d min', math.floor(s / 60))
  end
  return string.format('%d s', s)
end

--- The question as lines and highlights `{row, col_start, col_end, group}` (pure; tested).
---@param p table the `tether/approve` params (already validated)
---@return string[] lines, table[] highlights
function M.format(p)
  local lines, hls = {}, {}
  local function add(text, group)
    if group then
      table.insert(hls, { #lines, 0, -1, group })
    end
    table.insert(lines, text)
  end
  local mode = present(p.mode) and (' (' .. one_line(p.mode) .. ' mode)') or ''
  local tool = present(p.tool) and p.tool ~= 'bash_command' and (' with ' .. one_line(p.tool)) or ''
  add('The agent wants to run' .. tool .. mode .. ':', 'TetherHeader')
  for _, l in ipairs(vim.split(p.command, '\n', { plain = true })) do
    add('  $ ' .. l, 'TetherTool')
  end
  add('')
  add(#p.segments == 1 and 'This part needs your approval:' or 'These parts need your approval:', 'TetherHeader')
  for _, seg in ipairs(p.segments) do
    add('  • ' .. M.argv_text(seg.argv), 'TetherTool')
    local why = one_line(present(seg.reason) and seg.reason or p.reason or '')
    local rule = present(seg.rule) and seg.rule or p.rule
    add('      ' .. why .. (present(rule) and ('  [' .. one_line(rule) .. ']') or ''), 'TetherDenied')
  end
  if #p.segments == 0 and present(p.reason) then
    add('  ' .. one_line(p.reason) .. (present(p.rule) and ('  [' .. one_line(p.rule) .. ']') or ''), 'TetherDenied')
  end
  add('')
  local sb = type(p.sandbox) == 'table' and p.sandbox or {}
  if present(sb.backend) then
    local writable = type(sb.writable) == 'table' and #sb.writable > 0 and table.concat(sb.writable, ', ') or 'nothing'
    add(
      string.format(
        'Sandbox: %s, network %s, writable: %s',
        one_line(sb.backend),
        one_line(present(sb.network) and sb.network or 'none'),
        one_line(writable)
      )
    )
  else
    add('Sandbox: not stated by the server')
  end
  local always = p.always
  if type(always) == 'table' and type(always.file) == 'string' and type(always.toml) == 'string' then
    add('"Always allow" adds this rule to ' .. one_line(always.file) .. ':', 'TetherHeader')
    for _, l in ipairs(vim.split(vim.trim(always.toml), '\n', { plain = true })) do
      add('    ' .. l, 'TetherHint')
    end
  else
    add('"Always allow": the server names no rule to write for this call.', 'TetherHint')
  end
  if type(p.timeoutMs) == 'number' and p.timeoutMs > 0 then
    add(string.format('No answer within %s is a deny.', duration(p.timeoutMs)), 'TetherHint')
  end
  return lines, hls
end

--- The response for a chosen title and an optional message (pure; tested). Anything but one of
--- the four titles is a deny; an empty message is no message.
---@param title string?
---@param message string?
---@return { choice: string, message?: string }
function M.result(title, message)
  local choice = 'deny'
  for _, c in ipairs(M.CHOICES) do
    if c.title == title then
      choice = c.choice
    end
  end
  local out = { choice = choice }
  if type(message) == 'string' then
    message = vim.trim(message)
    if message ~= '' then
      out.message = message:sub(1, MAX_MESSAGE_CHARS)
    end
  end
  return out
end

local function titles()
  return vim.tbl_map(function(c)
    return c.title
  end, M.CHOICES)
end

-- The float -------------------------------------------------------------------------------------------

--- Show the question without taking the focus (the prompt that follows needs it), at the top,
--- leaving room below for the prompt (inputlist or a picker).
---@return integer? win
function M.open_float(lines, hls)
  local ok, win = pcall(require('tether.ui').open_float, lines, hls, {
    title = ' tether: approve? ',
    enter = false,
    row = 1,
    reserve = 12,
  })
  return ok and win or nil
end

-- Asking ------------------------------------------------------------------------------------------------

---@class tether.Approval
---@field params table
---@field client_id integer?
---@field done fun(result: table)
---@field finished boolean
---@field win integer?
---@field timer uv.uv_timer_t?

---@type tether.Approval?
M.active = nil
---@type tether.Approval[]
M.queue = {}

local start_next

--- Tell whoever listens (the chat buffer, a user's own autocmd) about a question or its answer:
--- `User` autocmds `TetherApprovalAsked` (data: the `tether/approve` params) and
--- `TetherApprovalAnswered` (data: `{id, choice, message?}`). A listener's error never loses the answer.
local function announce(pattern, data)
  pcall(api.nvim_exec_autocmds, 'User', { pattern = pattern, data = data, modeline = false })
end

--- Answer an approval once: close its float, stop its timer, hand over the result, show the next.
---@param a tether.Approval
---@param result table
local function finish(a, result)
  if a.finished then
    return
  end
  a.finished = true
  if a.timer then
    a.timer:stop()
    a.timer:close()
    a.timer = nil
  end
  if a.win and api.nvim_win_is_valid(a.win) then
    api.nvim_win_close(a.win, true)
  end
  require('tether.log').write('info', 'approval %s: %s', tostring(a.params.id), result.choice)
  if M.active == a then
    M.active = nil
  end
  for i = #M.queue, 1, -1 do
    if M.queue[i] == a then
      table.remove(M.queue, i)
    end
  end
  a.done(result)
  announce('TetherApprovalAnswered', { id = a.params.id, choice = result.choice, message = result.message })
  vim.schedule(start_next)
end

local function show(a)
  M.active = a
  local lines, hls = M.format(a.params)
  a.win = M.open_float(lines, hls)
  local timeout = a.params.timeoutMs
  if type(timeout) == 'number' and timeout > 0 then
    a.timer = vim.uv.new_timer()
    a.timer:start(
      timeout,
      0,
      vim.schedule_wrap(function()
        if not a.finished then
          require('tether.log').warn('approval of `' .. one_line(a.params.command) .. '` timed out: denied')
          finish(a, M.result(nil))
        end
      end)
    )
  end
  pcall(vim.cmd.redraw)
  local prompt = 'Tether: allow `' .. one_line(a.params.command) .. '`?'
  vim.ui.select(titles(), { prompt = prompt, kind = 'tether_approval' }, function(title)
    if a.finished then
      return
    end
    if title ~= 'Deny' then
      return finish(a, M.result(title))
    end
    vim.ui.input({ prompt = M.MESSAGE_PROMPT }, function(message)
      finish(a, M.result('Deny', message))
    end)
  end)
end

start_next = function()
  if M.active ~= nil then
    return
  end
  local a = table.remove(M.queue, 1)
  if a then
    show(a)
  end
end

--- Ask the person; `done(result)` is called exactly once. Questions are shown one at a time.
---@param params table validated `tether/approve` params
---@param client_id integer?
---@param done fun(result: table)
function M.ask(params, client_id, done)
  table.insert(M.queue, { params = params, client_id = client_id, done = done, finished = false })
  announce('TetherApprovalAsked', params)
  start_next()
end

--- Answer the open question `id` from somewhere else than the prompt (the chat buffer's keys).
--- The prompt that was shown for it is left to close on its own; its late answer is ignored.
---@param id string the question's `id`
---@param title string one of the CHOICES titles (anything else is a deny)
---@param message string? for a deny: the message to the model
---@return boolean answered false when no open question has that id
function M.answer(id, title, message)
  local open = { M.active }
  vim.list_extend(open, M.queue)
  for _, a in ipairs(open) do
    if a.params.id == id and not a.finished then
      finish(a, M.result(title, message))
      return true
    end
  end
  return false
end

--- The server took its questions back (`$/cancelRequest`: the call was cancelled or timed out). The
--- notification carries the JSON-RPC id, which handlers never see, so every open question of that
--- client is answered deny; the server discards answers it no longer waits for.
---@param client_id integer?
function M.cancel_client(client_id)
  for i = #M.queue, 1, -1 do
    local a = M.queue[i]
    if a.client_id == client_id then
      table.remove(M.queue, i)
      finish(a, M.result(nil))
    end
  end
  if M.active and M.active.client_id == client_id then
    require('tether.log').info('the server withdrew its question about `' .. one_line(M.active.params.command) .. '`')
    finish(M.active, M.result(nil))
  end
end

--- Without a coroutine (never the case for server requests on 0.10+): ask with a blocking inputlist.
local function ask_blocking(params)
  local lines = M.format(params)
  local items = { 'Tether: approve?' }
  vim.list_extend(items, lines)
  for i, t in ipairs(titles()) do
    table.insert(items, string.format('%d: %s', i, t))
  end
  local n = vim.fn.inputlist(items)
  local title = M.CHOICES[n] and M.CHOICES[n].title or nil
  if title == 'Deny' then
    return M.result(title, vim.fn.input(M.MESSAGE_PROMPT))
  end
  return M.result(title)
end

--- The `tether/approve` handler. Its return value is the response.
---@param params any
---@param ctx table?
---@return table result
function M.handler(_, params, ctx)
  local ok, reason = M.validate(params)
  if not ok then
    require('tether.log').warn('denied a malformed approval question from the server: ' .. reason)
    return M.result(nil)
  end
  local co, is_main = coroutine.running()
  if not co or is_main then
    return ask_blocking(params)
  end
  M.ask(params, ctx and ctx.client_id, function(result)
    -- Scheduled so the resume never happens before the yield (a synchronous vim.ui.select).
    vim.schedule(function()
      coroutine.resume(co, result)
    end)
  end)
  return coroutine.yield()
end

--- The `$/cancelRequest` notification handler.
function M.on_cancel(_, _, ctx)
  M.cancel_client(ctx and ctx.client_id)
end

return M
