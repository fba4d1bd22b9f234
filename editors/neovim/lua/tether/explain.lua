--- `:AgentExplain [--mode M] {cmd}`: every layer of one policy decision (the server's
--- `tether.explain`, the same result as `tether explain --json`), shown in a float.
---
--- The result has at least `{verdict, rule, reason, segments, sandbox, hooks, checkpoint}`
--- (docs/policy.md). Rendering is pure and tolerant: keys the server does not send are left out,
--- unknown shapes are shown as JSON rather than dropped, so a newer server never shows less.
local M = {}

M.MODES = { 'read', 'command', 'workspace' }

local VERDICT_GROUP = { allow = 'TetherOk', ask = 'TetherDenied', deny = 'TetherError' }

local present, one_line = require('tether.ui').present, require('tether.ui').one_line

local function text_of(v)
  if type(v) == 'string' then
    return one_line(v)
  end
  return one_line(vim.json.encode(v))
end

--- `--mode M` / `--mode=M` then the command (pure; tested).
---@param arg string
---@return table? args `{command, mode?}`, string? err
function M.parse(arg)
  arg = vim.trim(arg or '')
  local mode, rest = arg:match('^%-%-mode=(%S*)%s*(.*)$')
  if not mode then
    mode, rest = arg:match('^%-%-mode%s+(%S+)%s*(.*)$')
  end
  if mode and not vim.list_contains(M.MODES, mode) then
    return nil,
      string.format(":AgentExplain: unknown mode '%s' (expected %s)", mode, table.concat(M.MODES, ', '))
  end
  local command = vim.trim(mode and rest or arg)
  if command == '' then
    return nil, ':AgentExplain needs a command, e.g. :AgentExplain git commit -m wip (or --mode workspace make)'
  end
  local out = { command = command }
  if mode then
    out.mode = mode
  end
  return out, nil
end

--- A segment's command words.
local function segment_text(seg)
  if type(seg.argv) == 'table' then
    return require('tether.approve').argv_text(seg.argv)
  end
  return text_of(seg.command or seg.text or seg)
end

--- The result as lines and highlights `{row, col_start, col_end, group}` (pure; tested).
---@param command string
---@param res table the `tether.explain` result
---@return string[] lines, table[] highlights
function M.format(command, res)
  local lines, hls = {}, {}
  local function add(text, group, from, to)
    if group then
      table.insert(hls, { #lines, from or 0, to or -1, group })
    end
    table.insert(lines, text)
  end
  add('$ ' .. one_line(command), 'TetherHeader')
  local verdict = present(res.verdict) and tostring(res.verdict) or '?'
  local head = 'Verdict: ' .. verdict:upper()
  local tail = ''
  if present(res.rule) then
    tail = tail .. '  [' .. one_line(res.rule) .. ']'
  end
  if present(res.reason) then
    tail = tail .. '  ' .. one_line(res.reason)
  end
  add(head .. tail, VERDICT_GROUP[verdict] or 'TetherError', 0, #head)
  if present(res.mode) then
    add('Mode: ' .. one_line(res.mode))
  end
  if present(res.suggestion) then
    add('Suggestion: ' .. one_line(res.suggestion), 'TetherHint')
  end
  local segments = type(res.segments) == 'table' and res.segments or {}
  add('')
  add(string.format('Segments (%d):', #segments), 'TetherHeader')
  for _, seg in ipairs(segments) do
    if type(seg) ~= 'table' then
      add('  • ' .. text_of(seg))
    else
      local v = present(seg.verdict) and tostring(seg.verdict)
        or (seg.allowed == true and 'allow' or seg.allowed == false and 'deny' or '?')
      local prefix = '  • ' .. segment_text(seg) .. ' — '
      local where = {}
      for _, key in ipairs({ 'rule', 'source', 'layer' }) do
        if present(seg[key]) then
          table.insert(where, one_line(seg[key]))
        end
      end
      local line = prefix .. v .. (#where > 0 and ('  [' .. table.concat(where, ', ') .. ']') or '')
      add(line, VERDICT_GROUP[v] or 'TetherError', #prefix, #prefix + #v)
      if present(seg.reason) then
        add('      ' .. one_line(seg.reason), 'TetherHint')
      end
    end
  end
  if #segments == 0 then
    add('  (none listed)', 'TetherHint')
  end
  add('')
  local sb = res.sandbox
  if type(sb) == 'table' then
    local parts = {}
    if present(sb.backend) then
      table.insert(parts, one_line(sb.backend))
    end
    if present(sb.network) then
      table.insert(parts, 'network ' .. text_of(sb.network))
    end
    add('Sandbox: ' .. (#parts > 0 and table.concat(parts, ', ') or '?'), 'TetherHeader', 0, 8)
    for _, key in ipairs({ 'writable', 'readOnly', 'notCheckpointed' }) do
      if type(sb[key]) == 'table' and #sb[key] > 0 then
        add(string.format('  %s: %s', key, table.concat(vim.tbl_map(text_of, sb[key]), ', ')))
      end
    end
  elseif present(sb) then
    add('Sandbox: ' .. text_of(sb), 'TetherHeader', 0, 8)
  else
    add('Sandbox: none (nothing would run)', 'TetherHeader', 0, 8)
  end
  local hooks = type(res.hooks) == 'table' and res.hooks or {}
  if #hooks == 0 then
    add('Hooks: none')
  else
    add('Hooks:')
    for _, hook in ipairs(hooks) do
      if type(hook) == 'table' and (present(hook.name) or present(hook.command)) then
        local event = present(hook.event) and (hook.event .. ': ') or ''
        add('  • ' .. event .. one_line(present(hook.name) and hook.name or text_of(hook.command)))
      else
        add('  • ' .. text_of(hook))
      end
    end
  end
  if res.checkpoint == true then
    add('Checkpoint: taken before it runs (:AgentRollback 1 undoes it)', 'TetherOk', 0, 11)
  elseif res.checkpoint == false then
    add('Checkpoint: none', 'TetherHint')
  end
  add('')
  add('q or <Esc> closes', 'TetherHint')
  return lines, hls
end

return M
