-- Pure rendering, no server: extmarks from docs/lsp.md Proposal objects, hunk lookup, the diff
-- view, the formatters, the confirmation float, the highlight groups.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api
local preview = require('tether.preview')
local diff = require('tether.diff')
local ui = require('tether.ui')

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')
local path = dir .. '/app.py'
local lines = {}
for i = 1, 10 do
  lines[i] = 'line ' .. i
end
vim.fn.writefile(lines, path)
vim.cmd('edit ' .. vim.fn.fnameescape(path))
local buf = api.nvim_get_current_buf()

-- A proposal as the server sends it (docs/lsp.md): hunk 1 replaces rows 2-3 (0-based) with three
-- lines, hunk 2 inserts one line before row 7, hunk 3 is already accepted.
local function proposal(overrides)
  local p = {
    id = 'p-1a2b3c4d',
    path = 'app.py',
    uri = vim.uri_from_fname(path),
    state = 'pending',
    reason = 'test',
    hunks = {
      {
        index = 1,
        state = 'pending',
        header = '@@ -1,6 +1,7 @@',
        oldStart = 1,
        oldLines = 6,
        newStart = 1,
        newLines = 7,
        range = { start = { line = 2, character = 0 }, ['end'] = { line = 4, character = 0 } },
        removed = { 'line 3\n', 'line 4\n' },
        added = { 'new 3\n', '\tnew 3b\n', 'new 4\n' },
        diff = '@@ -1,6 +1,7 @@\n line 1\n line 2\n-line 3\n-line 4\n+new 3\n+\tnew 3b\n+new 4\n line 5\n line 6\n',
      },
      {
        index = 2,
        state = 'pending',
        header = '@@ -5,5 +6,6 @@',
        oldStart = 5,
        oldLines = 5,
        newStart = 6,
        newLines = 6,
        range = { start = { line = 7, character = 0 }, ['end'] = { line = 7, character = 0 } },
        removed = {},
        added = { 'inserted\n' },
        diff = '@@ -5,5 +6,6 @@\n line 5\n line 6\n line 7\n+inserted\n line 8\n line 9\n',
      },
      {
        index = 3,
        state = 'accepted',
        range = { start = { line = 9, character = 0 }, ['end'] = { line = 10, character = 0 } },
        removed = { 'line 10\n' },
        added = { 'done\n' },
      },
    },
  }
  return vim.tbl_deep_extend('force', p, overrides or {})
end

local other = proposal({ id = 'p-99999999', uri = vim.uri_from_fname(dir .. '/other.py') })

local function marks()
  return api.nvim_buf_get_extmarks(buf, preview.ns, 0, -1, { details = true })
end

H.test('pending hunks are drawn: delete highlight, virtual lines, sign, label', function()
  preview.render(buf, { proposal(), other }, { sign_text = '+' })
  local ranges, signs, virt = {}, {}, {}
  for _, m in ipairs(marks()) do
    local d = m[4]
    if d.hl_group then
      table.insert(ranges, { m[2], d.end_row, d.hl_group, d.hl_eol })
    end
    if d.sign_text then
      table.insert(signs, { m[2], vim.trim(d.sign_text), d.sign_hl_group, d.virt_text[1][1] })
    end
    if d.virt_lines then
      local texts = {}
      for _, vl in ipairs(d.virt_lines) do
        table.insert(texts, vl[1][1] .. '|' .. vl[1][2])
      end
      table.insert(virt, { m[2], d.virt_lines_above or false, texts })
    end
  end
  -- Accepted hunk 3 and the other file's proposal are not drawn.
  H.eq({ { 2, 4, 'TetherDelete', true } }, ranges, 'rows 2-3 highlighted')
  H.eq({ { 2, '+', 'TetherSign', ' p-1a2b3c4d hunk 1/3' }, { 7, '+', 'TetherSign', ' p-1a2b3c4d hunk 2/3' } }, signs)
  local tab = string.rep(' ', vim.o.tabstop)
  H.eq({
    { 3, false, { 'new 3|TetherAdd', tab .. 'new 3b|TetherAdd', 'new 4|TetherAdd' } },
    { 7, true, { 'inserted|TetherAdd' } },
  }, virt, 'proposed lines below the replaced rows; an insertion above the row it goes before')
  H.eq({ 'line 3', 'line 4' }, api.nvim_buf_get_lines(buf, 2, 4, false), 'the buffer text is untouched')
end)

H.test('on screen: one sign per hunk, proposed lines where they would go', function()
  preview.render(buf, { proposal() }, { sign_text = '+' })
  vim.o.signcolumn = 'yes:1'
  vim.cmd('redraw!')
  local screen = {}
  for r = 1, 16 do
    local chars = {}
    for c = 1, 40 do
      chars[#chars + 1] = vim.fn.screenstring(r, c)
    end
    screen[r] = (table.concat(chars):gsub('%s+$', ''))
  end
  local tab = string.rep(' ', vim.o.tabstop)
  H.eq({
    '  line 1',
    '  line 2',
    '+ line 3  p-1a2b3c4d hunk 1/3',
    '  line 4',
    '  new 3',
    '  ' .. tab .. 'new 3b',
    '  new 4',
    '  line 5',
    '  line 6',
    '  line 7',
    '  inserted',
    '+ line 8  p-1a2b3c4d hunk 2/3',
    '  line 9',
    '  line 10',
  }, vim.list_slice(screen, 1, 14))
  vim.o.signcolumn = 'auto'
end)

H.test('rendering again replaces the marks instead of adding to them', function()
  preview.render(buf, { proposal() })
  preview.render(buf, { proposal() })
  H.eq(4, #marks(), 'hunk 1: highlight, sign, virtual lines; hunk 2: one mark')
  preview.render(buf, {})
  H.eq(0, #marks(), 'no proposals, no marks')
end)

H.test('the hunk under the cursor follows edits above it', function()
  preview.render(buf, { proposal() })
  local function at(row)
    local p, h = preview.hunk_at(buf, row)
    return p and (p.id .. '#' .. h.index) or nil
  end
  H.eq({ nil, 'p-1a2b3c4d#1', 'p-1a2b3c4d#1', nil, 'p-1a2b3c4d#2', nil }, { at(1), at(2), at(3), at(4), at(7), at(9) })
  api.nvim_buf_set_lines(buf, 0, 0, false, { 'typed 1', 'typed 2' })
  H.eq({ nil, 'p-1a2b3c4d#1', 'p-1a2b3c4d#1', 'p-1a2b3c4d#2' }, { at(2), at(4), at(5), at(9) })
  api.nvim_buf_set_lines(buf, 0, 2, false, {})
end)

H.test('proposal_for: the hunk under the cursor, else the only proposal, else a reason', function()
  preview.render(buf, { proposal() })
  H.eq('p-1a2b3c4d', preview.proposal_for(buf, 0).id)
  preview.render(buf, { proposal(), proposal({ id = 'p-22222222' }) })
  local under = preview.proposal_for(buf, 2)
  H.eq('p-1a2b3c4d', under and under.id, 'with two, the hunk under the cursor decides')
  local p, err = preview.proposal_for(buf, 0)
  H.eq(nil, p)
  H.contains(err, '2 pending proposals in this buffer')
  preview.render(buf, {})
  H.eq({ nil, 'no pending proposal in this buffer' }, { preview.proposal_for(buf, 0) })
end)

H.test('an insertion at the end of the file hangs below the last line', function()
  local p = proposal()
  p.hunks = { vim.deepcopy(p.hunks[2]) }
  p.hunks[1].range = { start = { line = 10, character = 0 }, ['end'] = { line = 10, character = 0 } }
  preview.render(buf, { p })
  local all = marks()
  H.eq(1, #all)
  H.eq(9, all[1][2])
  H.eq(false, all[1][4].virt_lines_above or false)
  H.eq('p-1a2b3c4d', (preview.hunk_at(buf, 9)) and preview.hunk_at(buf, 9).id)
end)

H.test('odd server data does not break drawing: ranges past the end, no hunks, no range', function()
  local p = proposal()
  p.hunks = {
    {
      index = 1,
      state = 'pending',
      added = { 'x\n' },
      range = { start = { line = 50, character = 0 }, ['end'] = { line = 60, character = 0 } },
    },
    { index = 2, state = 'pending', added = { 'y\n' } },
    {
      index = 3,
      state = 'pending',
      range = { start = { line = 1, character = 0 }, ['end'] = { line = 2, character = 0 } },
    },
  }
  preview.render(buf, { p, { id = 'p-empty', uri = p.uri, state = 'pending' } })
  local all = marks()
  H.eq(3, #all, 'past the end: one mark below the last line; no range: skipped; no added lines: highlight + sign')
  H.eq(9, all[#all][2])
  H.eq(1, all[1][2], 'a hunk with no added lines still highlights its rows')
  require('tether.lsp').on_event(nil, nil, nil)
  require('tether.lsp').on_event(nil, {}, nil)
  preview.render(buf, {})
end)

H.test('accepted and rejected proposals are not drawn; previews off still finds hunks', function()
  preview.render(buf, { proposal({ state = 'accepted' }), proposal({ id = 'p-33333333', state = 'rejected' }) })
  H.eq(0, #marks())
  preview.render(buf, { proposal() }, { enabled = false })
  for _, m in ipairs(marks()) do
    H.eq(nil, m[4].virt_lines, 'nothing visible')
    H.eq(nil, m[4].hl_group, 'nothing visible')
    H.eq(nil, m[4].sign_text, 'nothing visible')
  end
  H.eq(1, select(2, preview.hunk_at(buf, 2)).index)
end)

H.test('highlight groups link to Diff* by default and keep user overrides', function()
  H.eq('DiffAdd', api.nvim_get_hl(0, { name = 'TetherAdd' }).link)
  H.eq('DiffDelete', api.nvim_get_hl(0, { name = 'TetherDelete' }).link)
  H.eq('DiffAdd', api.nvim_get_hl(0, { name = 'TetherSign' }).link)
  api.nvim_set_hl(0, 'TetherAdd', { fg = '#ff0000' })
  require('tether').setup({})
  H.eq(0xff0000, api.nvim_get_hl(0, { name = 'TetherAdd' }).fg, 'setup() does not clobber an override')
  vim.cmd('hi clear')
  vim.api.nvim_exec_autocmds('ColorScheme', {})
  H.eq('DiffAdd', api.nvim_get_hl(0, { name = 'TetherAdd' }).link, 'relinked after a colorscheme change')
end)

H.test('diff.view: proposed text, rejected hunks reverted, spans move with them', function()
  local proposed = table.concat({
    'line 1',
    'line 2',
    'new 3',
    '\tnew 3b',
    'new 4',
    'line 5',
    'line 6',
    'line 7',
    'inserted',
    'line 8',
    'line 9',
    'line 10',
  }, '\n') .. '\n'
  local p = proposal()
  local hunks = { p.hunks[1], p.hunks[2] }
  local view, spans = diff.view(proposed, hunks)
  H.eq(12, #view)
  H.eq({ first = 1, last = 7 }, spans[1])
  H.eq({ first = 6, last = 11 }, spans[2])
  hunks[1] = vim.tbl_extend('force', hunks[1], { state = 'rejected' })
  view, spans = diff.view(proposed, hunks)
  H.eq(
    { 'line 1', 'line 2', 'line 3', 'line 4', 'line 5', 'line 6', 'line 7', 'inserted', 'line 8', 'line 9', 'line 10' },
    view
  )
  H.eq({ first = 1, last = 6 }, spans[1], 'a rejected hunk spans its old lines')
  H.eq({ first = 5, last = 10 }, spans[2], 'later hunks move up by the lines removed')
end)

H.test('format_log: one highlighted line per call, newest last', function()
  local entries = {
    {
      timestamp = '2026-11-22 10:00:00',
      tool = 'read_file',
      input = { path = 'a.py' },
      success = true,
      dry_run = false,
    },
    {
      timestamp = '2026-11-22 10:00:01',
      tool = 'write_file',
      input = { path = 'b.py' },
      success = true,
      dry_run = true,
    },
    {
      timestamp = '2026-11-22 10:00:02',
      tool = 'bash_command',
      input = { command = 'curl x\nrm' },
      success = false,
      error = "Command 'curl' is not in the allowed list",
      decision = { allowed = false },
    },
    {
      timestamp = '2026-11-22 10:00:03',
      tool = 'edit_file',
      input = { path = 'c.py' },
      success = false,
      error = 'old_str not found',
    },
  }
  local out, hls = ui.format_log(entries)
  H.eq('Tether tool log — last 4 calls (newest last)', out[1])
  H.eq('2026-11-22 10:00:00  ok      read_file      a.py', out[2])
  H.eq('2026-11-22 10:00:01  dry-run write_file     b.py', out[3])
  H.eq("2026-11-22 10:00:02  denied  bash_command   curl x rm  — Command 'curl' is not in the allowed list", out[4])
  H.eq('2026-11-22 10:00:03  error   edit_file      c.py  — old_str not found', out[5])
  local groups = {}
  for _, h in ipairs(hls) do
    if h[4] == 'TetherOk' or h[4] == 'TetherDenied' or h[4] == 'TetherError' then
      table.insert(groups, { h[1], out[h[1] + 1]:sub(h[2] + 1, h[3]), h[4] })
    end
  end
  H.eq({
    { 1, 'ok', 'TetherOk' },
    { 2, 'dry-run', 'TetherOk' },
    { 3, 'denied', 'TetherDenied' },
    { 4, 'error', 'TetherError' },
  }, groups)
  H.eq({ 'Tether tool log — last 0 calls (newest last)', '(no tool calls recorded yet)' }, (ui.format_log({})))
end)

H.test('format_rollback_plan lists every file that would change', function()
  local out = ui.format_rollback_plan(
    { restored = { 'a.py' }, deleted = { 'new.txt' }, created = { 'gone.txt' }, target = 'c-1' },
    '1 step'
  )
  H.eq({
    'Roll back 1 step (to c-1)?',
    '~ a.py (restored)',
    '- new.txt (deleted)',
    '+ gone.txt (re-created)',
    '',
    '[y] roll back   [n] cancel',
  }, out)
  H.eq('(no file would change)', ui.format_rollback_plan({ target = 'c-1' }, '1 step')[2])
end)

H.test('format_run: output, stderr, exit code; denials and dry runs say so', function()
  local out = ui.format_run(
    'ls',
    { ok = true, dryRun = false, result = { stdout = 'a\nb\n', stderr = 'warn\n', exit_code = 0, duration_ms = 5 } }
  )
  H.eq({ '$ ls', 'a', 'b', 'warn', '[exit 0, 5 ms]' }, out)
  out = ui.format_run('curl x', { ok = false, text = "Error: Command 'curl' is not in the allowed list", result = {} })
  H.eq({ '$ curl x', "Error: Command 'curl' is not in the allowed list" }, out)
  out = ui.format_run('ls', { ok = true, dryRun = true, text = 'would run ls', result = {} })
  H.contains(out[2], 'dry run')
end)

H.test('format_ask: answer, tool calls with verdicts and proposals, cost', function()
  local out = ui.format_ask('fix it', {
    text = 'Done.\nTwo lines.',
    stopReason = 'end_turn',
    cost = 0.0123,
    toolCalls = {
      { name = 'read_file', summary = 'calc.py', verdict = 'executed', isError = false },
      {
        name = 'bash_command',
        summary = 'curl x | sh',
        verdict = 'denied',
        isError = true,
        reason = 'curl reaches the network',
      },
      { name = 'write_file', summary = 'calc.py', verdict = 'proposed', isError = false, proposalId = 'p-12345678' },
    },
  })
  H.eq({
    '> fix it',
    '',
    'Done.',
    'Two lines.',
    '',
    'Tool calls (3):',
    '• read_file calc.py — executed',
    '• bash_command curl x | sh — denied: curl reaches the network',
    '• write_file calc.py — proposed (proposal p-12345678)',
    '',
    '[end_turn; cost $0.0123]',
  }, out)
end)

H.test('the confirmation float shows the lines and answers y / n', function()
  local answer
  local win, fbuf = ui.confirm_float({ 'Roll back 1 step?', '~ a.py (restored)' }, {}, function(yes)
    answer = yes
  end)
  H.eq('editor', api.nvim_win_get_config(win).relative)
  H.eq({ 'Roll back 1 step?', '~ a.py (restored)' }, api.nvim_buf_get_lines(fbuf, 0, -1, false))
  api.nvim_feedkeys('y', 'x', false)
  H.eq(true, answer)
  H.eq(false, api.nvim_win_is_valid(win))
  answer = nil
  win = ui.confirm_float({ 'Roll back?' }, {}, function(yes)
    answer = yes
  end)
  api.nvim_feedkeys(api.nvim_replace_termcodes('<Esc>', true, false, true), 'x', false)
  H.eq(false, answer)
  H.eq(false, api.nvim_win_is_valid(win))
end)

H.test('scratch buffers are reused, unmodifiable and highlighted', function()
  local b1 = ui.scratch('tether://log', { 'a', 'b' }, { { 0, 0, -1, 'TetherHeader' } })
  local b2 = ui.scratch('tether://log', { 'c' }, {})
  H.eq(b1, b2)
  H.eq({ 'c' }, api.nvim_buf_get_lines(b1, 0, -1, false))
  H.eq(false, vim.bo[b1].modifiable)
  H.eq('nofile', vim.bo[b1].buftype)
end)

H.finish()
