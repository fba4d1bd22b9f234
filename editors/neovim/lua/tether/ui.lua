--- Scratch buffers, the confirmation float, and the pure formatters that fill them.
---
--- Formatters return `lines, highlights` (highlights as `{row, col_start, col_end, group}`) and
--- touch no buffer, so tests check them directly.
local M = {}

local api = vim.api
local ns = api.nvim_create_namespace('tether.ui')

--- Text for one line of a buffer: newlines folded to spaces.
---@return string
local function one_line(s)
  return (tostring(s or ''):gsub('[\r\n]+', ' '))
end
M.one_line = one_line

--- A JSON value that is there: not nil and not JSON null (`vim.NIL`).
function M.present(v)
  return v ~= nil and v ~= vim.NIL
end

--- Audit log entries (newest last, docs/audit-log.md) as lines.
---@param entries table[]
---@return string[] lines, table[] highlights
function M.format_log(entries)
  local lines, hls = {}, {}
  table.insert(
    lines,
    string.format('Tether tool log — last %d call%s (newest last)', #entries, #entries == 1 and '' or 's')
  )
  table.insert(hls, { 0, 0, -1, 'TetherHeader' })
  for _, e in ipairs(entries) do
    local time = one_line(e.timestamp or e.time or '')
    local tool = one_line(e.tool or '?')
    local status, group
    if e.success then
      status, group = e.dry_run and 'dry-run' or 'ok', 'TetherOk'
    elseif type(e.decision) == 'table' and e.decision.allowed == false then
      status, group = 'denied', 'TetherDenied'
    else
      status, group = 'error', 'TetherError'
    end
    local summary = ''
    local input = e.input
    if type(input) == 'table' then
      summary = input.command or input.path or input.pattern or input.operation or ''
      if type(summary) ~= 'string' then
        summary = vim.json.encode(summary)
      end
    end
    local line = string.format('%s  %-7s %-14s %s', time, status, tool, one_line(summary))
    if not e.success and e.error then
      line = line .. '  — ' .. one_line(e.error)
    end
    local row = #lines
    table.insert(lines, line)
    table.insert(hls, { row, 0, #time, 'TetherTime' })
    table.insert(hls, { row, #time + 2, #time + 2 + #status, group })
    table.insert(hls, { row, #time + 2 + 8, #time + 2 + 8 + #tool, 'TetherTool' })
  end
  if #entries == 0 then
    table.insert(lines, '(no tool calls recorded yet)')
  end
  return lines, hls
end

--- Checkpoints (newest first) as lines.
---@param checkpoints table[] `{id, time, tool, message, files}`
function M.format_checkpoints(checkpoints)
  local lines, hls =
    { 'Tether checkpoints (newest first; :AgentRollback N restores before the N-th)' }, { { 0, 0, -1, 'TetherHeader' } }
  for i, cp in ipairs(checkpoints) do
    local files = cp.files or {}
    local row = #lines
    local head = string.format('%3d  %s  %s  %s', i, one_line(cp.id), one_line(cp.time), one_line(cp.tool))
    table.insert(lines, head .. (cp.message and cp.message ~= '' and ('  ' .. one_line(cp.message)) or ''))
    table.insert(hls, { row, 5, 5 + #one_line(cp.id), 'TetherTool' })
    table.insert(
      lines,
      string.format('     %d file%s changed since: %s', #files, #files == 1 and '' or 's', table.concat(files, ', '))
    )
    table.insert(hls, { row + 1, 0, -1, 'TetherTime' })
  end
  if #checkpoints == 0 then
    table.insert(lines, '(no checkpoints yet: one is taken before every change)')
  end
  return lines, hls
end

--- What a rollback would do (the dry-run result of `tether.rollback`).
---@param plan table `{restored, deleted, created, target}`
---@param label string e.g. "1 step"
function M.format_rollback_plan(plan, label)
  local lines, hls = {}, {}
  local target = plan.target
  if type(target) == 'table' then
    target = target.id or vim.json.encode(target)
  end
  table.insert(lines, string.format('Roll back %s (to %s)?', label, one_line(target or '?')))
  table.insert(hls, { 0, 0, -1, 'TetherHeader' })
  local function section(name, list, group, mark)
    for _, path in ipairs(list or {}) do
      table.insert(hls, { #lines, 0, 2, group })
      table.insert(lines, string.format('%s %s (%s)', mark, one_line(path), name))
    end
  end
  section('restored', plan.restored, 'TetherDenied', '~')
  section('deleted', plan.deleted, 'TetherError', '-')
  section('re-created', plan.created, 'TetherOk', '+')
  if #lines == 1 then
    table.insert(lines, '(no file would change)')
  end
  table.insert(lines, '')
  table.insert(lines, '[y] roll back   [n] cancel')
  table.insert(hls, { #lines - 1, 0, -1, 'TetherHint' })
  return lines, hls
end

--- The gate's result object of a bash_command (docs/lsp.md) as lines.
---@param command string
---@param res table gate result
function M.format_run(command, res)
  local lines, hls = { '$ ' .. one_line(command) }, { { 0, 0, -1, 'TetherHeader' } }
  local r = res.result or {}
  if not res.ok then
    local text = res.text or r.error or 'failed'
    for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
      table.insert(hls, { #lines, 0, -1, 'TetherError' })
      table.insert(lines, l)
    end
    return lines, hls
  end
  if res.dryRun then
    table.insert(hls, { #lines, 0, -1, 'TetherDenied' })
    table.insert(lines, 'dry run (not permitted by the current permissions, see :AgentMode): ' .. one_line(res.text))
    return lines, hls
  end
  for _, l in ipairs(vim.split(r.stdout or '', '\n', { plain = true, trimempty = true })) do
    table.insert(lines, l)
  end
  for _, l in ipairs(vim.split(r.stderr or '', '\n', { plain = true, trimempty = true })) do
    table.insert(hls, { #lines, 0, -1, 'TetherDenied' })
    table.insert(lines, l)
  end
  local footer = string.format(
    '[exit %s, %s ms%s]',
    tostring(r.exit_code),
    tostring(r.duration_ms or '?'),
    r.timed_out and ', timed out' or ''
  )
  table.insert(hls, { #lines, 0, -1, r.exit_code == 0 and 'TetherOk' or 'TetherError' })
  table.insert(lines, footer)
  return lines, hls
end

--- An agent turn (the `tether.ask` result) as lines: prompt, answer, one line per tool call.
---@param prompt string
---@param res table `{text, stopReason, message?, toolCalls: [{name, summary, verdict, reason?, proposalId?, isError}], cost}`
function M.format_ask(prompt, res)
  local lines, hls = { '> ' .. one_line(prompt), '' }, { { 0, 0, -1, 'TetherHeader' } }
  vim.list_extend(lines, vim.split(res.text or '', '\n', { plain = true }))
  local calls = res.toolCalls or {}
  if #calls > 0 then
    table.insert(lines, '')
    table.insert(hls, { #lines, 0, -1, 'TetherHeader' })
    table.insert(lines, string.format('Tool calls (%d):', #calls))
  end
  for _, call in ipairs(calls) do
    local verdict = tostring(call.verdict or (call.isError and 'error' or 'ok'))
    local line = string.format('• %s %s — %s', one_line(call.name or '?'), one_line(call.summary or ''), verdict)
    if call.proposalId then
      line = line .. ' (proposal ' .. call.proposalId .. ')'
    end
    if call.isError and call.reason then
      line = line .. ': ' .. one_line(call.reason)
    end
    table.insert(hls, { #lines, 0, -1, call.isError and 'TetherDenied' or 'TetherTool' })
    table.insert(lines, line)
  end
  table.insert(lines, '')
  if res.message then
    table.insert(hls, { #lines, 0, -1, 'TetherError' })
    table.insert(lines, one_line(res.message))
  end
  table.insert(hls, { #lines, 0, -1, 'TetherHint' })
  table.insert(lines, string.format('[%s; cost $%s]', tostring(res.stopReason), tostring(res.cost)))
  return lines, hls
end

--- A `nofile` buffer named `name` (reused if it exists), filled and shown in a split.
---@param name string e.g. 'tether://log'
---@param lines string[]
---@param hls table[]
---@return integer bufnr
function M.scratch(name, lines, hls)
  local bufnr = vim.fn.bufnr('^' .. vim.pesc(name) .. '$')
  if bufnr == -1 then
    bufnr = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(bufnr, name)
    vim.bo[bufnr].bufhidden = 'hide'
    vim.bo[bufnr].swapfile = false
    vim.bo[bufnr].filetype = 'tether'
  end
  vim.bo[bufnr].modifiable = true
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  for _, h in ipairs(hls) do
    local row, col, stop, group = h[1], h[2], h[3], h[4]
    local len = #(lines[row + 1] or '')
    api.nvim_buf_set_extmark(bufnr, ns, row, math.min(col, len), {
      end_row = row,
      end_col = (stop < 0 or stop > len) and len or stop,
      hl_group = group,
    })
  end
  local win = vim.fn.bufwinid(bufnr)
  if win == -1 then
    vim.cmd('botright split')
    api.nvim_win_set_buf(0, bufnr)
  else
    api.nvim_set_current_win(win)
  end
  return bufnr
end

--- Fill a new scratch buffer with `lines` and their highlights, and open it in a float sized to
--- fit. Shared by the confirmation, the approval question and `:AgentExplain`.
---@param lines string[]
---@param hls table[]
---@param opts { title: string, enter: boolean, row?: integer, reserve?: integer }
---   enter: focus the float; row: fixed top row (default centred); reserve: rows kept free below
---@return integer win, integer bufnr
function M.open_float(lines, hls, opts)
  local bufnr = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  for _, h in ipairs(hls) do
    local len = #(lines[h[1] + 1] or '')
    api.nvim_buf_set_extmark(bufnr, ns, h[1], math.min(h[2], len), {
      end_row = h[1],
      end_col = (h[3] < 0 or h[3] > len) and len or h[3],
      hl_group = h[4],
    })
  end
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].bufhidden = 'wipe'
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.max(vim.o.columns - 4, 20))
  local height = math.min(#lines, math.max(vim.o.lines - (opts.reserve or 6), 3))
  local win = api.nvim_open_win(bufnr, opts.enter, {
    relative = 'editor',
    width = width,
    height = height,
    row = opts.row or math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = require('tether.config').get().border,
    title = opts.title,
    focusable = opts.enter,
    zindex = (not opts.enter) and 150 or nil,
  })
  return win, bufnr
end

--- A focused float answered by keys: `answers` maps each key to the value `on_answer` receives;
--- leaving the window answers `on_leave`. It answers once, and closes.
---@param answers table<string, any>
---@return integer win, integer bufnr
local function keyed_float(lines, hls, title, answers, on_leave, on_answer)
  local win, bufnr = M.open_float(lines, hls, { title = title, enter = true })
  local answered = false
  local function answer(value)
    if answered then
      return
    end
    answered = true
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
    on_answer(value)
  end
  for key, value in pairs(answers) do
    vim.keymap.set('n', key, function()
      answer(value)
    end, { buffer = bufnr, nowait = true })
  end
  api.nvim_create_autocmd('WinLeave', {
    buffer = bufnr,
    once = true,
    callback = function()
      vim.schedule(function()
        answer(on_leave)
      end)
    end,
  })
  return win, bufnr
end

--- A float showing `lines`, answered with y (yes) or n/q/<Esc> (no). `on_answer(true|false)`.
--- Why a float with keys and not `vim.fn.confirm`: the list of files can be long, and the float
--- shows it scrollable and highlighted, next to the code.
---@return integer win, integer bufnr
function M.confirm_float(lines, hls, on_answer)
  local keys = { y = true, Y = true, n = false, N = false, q = false, ['<Esc>'] = false }
  return keyed_float(lines, hls, ' tether ', keys, false, on_answer)
end

--- A float to read (`:AgentExplain`): focused, closed with q or <Esc> or by leaving it.
---@return integer win, integer bufnr
function M.info_float(lines, hls, title)
  return keyed_float(lines, hls, title, { q = 'closed', ['<Esc>'] = 'closed' }, 'left', function() end)
end

return M
