-- The chat's state and buffer on a fixture stream (no server): tether/turn notifications folded into
-- cards and text, the row map the keys act on, and a redraw that never touches the prompt.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api
local model = require('tether.chat.model')

local function stream(turn)
  local seq = -1
  return function(u)
    seq = seq + 1
    u.turnId, u.seq, u.conversationId = turn, seq, 'c-1'
    return u
  end
end

local function text_of(lines)
  return table.concat(lines, '\n')
end

H.test('a turn folds into the prompt, text blocks as paragraphs, one card per tool call', function()
  local s = model.new()
  model.begin_turn(s, 'fix the average', 't-1')
  local u = stream('t-1')
  H.eq(true, model.apply(s, u({ kind = 'started', prompt = 'fix the average' })))
  model.apply(s, u({ kind = 'text', delta = 'I will make ', block = 1 }))
  model.apply(s, u({ kind = 'text', delta = 'it a float.', block = 1 }))
  model.apply(s, u({ kind = 'tool', id = 'tu1', name = 'write_file', summary = 'write_file(calc.py)', state = 'running' }))
  model.apply(s, u({ kind = 'tool', id = 'tu1', name = 'write_file', summary = 'write_file(calc.py)', state = 'proposed', proposalId = 'p-1a' }))
  model.apply(s, u({ kind = 'text', delta = 'Please review.', block = 2 }))
  model.apply(s, u({ kind = 'text', delta = 'Then run the tests.', block = 3 }))
  model.apply(s, u({ kind = 'usage', usage = { inputTokens = 100, outputTokens = 20 }, cost = 0.0012 }))
  H.eq(false, model.apply(s, { turnId = 'other', kind = 'text', delta = 'x', block = 1 }), 'another turn is ignored')
  H.eq(false, model.apply(s, 'garbage'), 'malformed is ignored')
  H.eq(false, model.apply(s, u({ kind = 'tool', id = 7, state = 'proposed', proposalId = 'p-x' })), 'a tool without an id')
  H.eq(false, model.apply(s, u({ kind = 'tool', state = 'proposed', proposalId = 'p-x' })), 'a tool with no id')
  model.apply(s, u({ kind = 'tool', id = 'tu2', name = 'write_file', state = 'proposed', proposalId = { 'p' } }))
  H.eq(nil, s.cards.tu2.proposal_id, 'a proposal id that is not a string is not one')
  s.cards.tu2, s.entries[#s.entries] = nil, nil
  local lines, _, rows = model.render(s)
  local text = text_of(lines)
  H.contains(text, '## You\nfix the average')
  H.contains(text, '## Tether\nI will make it a float.\n\n● write_file(calc.py) — proposed · p-1a')
  H.contains(text, '(gd diff, ga/gr all)\n\nPlease review.\n\nThen run the tests.\n', 'each block a paragraph')
  H.contains(text, 'cost $0.0012 · tokens 100 in / 20 out · running… (<C-c> stops)')
  H.eq(1, #vim.tbl_keys(s.cards), 'running and proposed are one card')
  local card_row
  for row, at in pairs(rows) do
    if at.card.id == 'tu1' and not at.hunk then
      card_row = row
    end
  end
  H.truthy(card_row and lines[card_row + 1]:find('^● write_file'), 'the card row is mapped')
  model.apply(s, u({ kind = 'stopped', stopReason = 'end_turn' }))
  H.eq(false, s.running)
  H.eq(0.0012, s.cost)
  lines = model.render(s)
  H.truthy(not text_of(lines):find('running…', 1, true), 'no longer running')
end)

H.test('hunks and an approval question are rows of their card; answers are drawn', function()
  local s = model.new()
  model.begin_turn(s, 'go', 't-2')
  local u = stream('t-2')
  model.apply(s, u({ kind = 'tool', id = 'tw', name = 'write_file', summary = 'write_file(README.md)', state = 'proposed', proposalId = 'p-2' }))
  s.cards.tw.hunks = {
    { index = 1, header = '@@ -2 +2 @@', state = 'accepted' },
    { index = 2, header = '@@ -28 +28 @@', state = 'pending' },
  }
  model.apply(s, u({ kind = 'tool', id = 'tb', name = 'bash_command', summary = 'bash_command(git commit -m x)', state = 'running' }))
  model.ask(s, { id = 'ap-1', tool = 'bash_command', command = 'git commit -m x', rule = 'ask.git_state', reason = 'changes history' })
  H.eq('ap-1', s.cards.tb.question.id, 'the question lands on the running card of that tool')
  local lines, _, rows = model.render(s)
  local found = {}
  for row, at in pairs(rows) do
    if at.hunk then
      found['hunk' .. at.hunk] = lines[row + 1]
    elseif at.question then
      found.question = found.question or lines[row + 1]
    end
  end
  H.contains(found.hunk1, 'hunk 1 @@ -2 +2 @@ — accepted')
  H.contains(found.hunk2, 'hunk 2 @@ -28 +28 @@ — pending  (ga accept · gr reject)')
  H.contains(text_of(lines), '? allow `git commit -m x`? changes history\n      ga allow once · gA allow for this session · gr deny')
  H.eq(true, model.answered(s, 'ap-1', 'deny', 'not now'))
  H.contains(text_of(model.render(s)), '✗ denied: not now')
  H.eq(false, model.answered(s, 'ap-9', 'deny'), 'an unknown question')
  model.apply(s, u({ kind = 'tool', id = 'tb', name = 'bash_command', summary = 'bash_command(git commit -m x)', state = 'denied', rule = 'ask.git_state', reason = 'denied by you' }))
  model.apply(s, u({ kind = 'tool', id = 'tr', name = 'bash_command', summary = 'bash_command(git status)', state = 'executed', rule = 'allow.readonly_git', reason = 'reads only' }))
  local text = text_of(model.render(s))
  H.contains(text, '● bash_command(git commit -m x) — denied (ask.git_state): denied by you\n', 'rule and reason of a refusal')
  H.contains(text, '● bash_command(git status) — executed (allow.readonly_git)\n', 'the rule that let it run, no reason')
end)

H.test('a question with no running card gets its own; a turn that ends denies what is open', function()
  local s = model.new()
  model.begin_turn(s, 'go', 't-3')
  model.ask(s, { id = 'ap-2', tool = 'bash_command', command = 'npm install' })
  model.apply(s, { turnId = 't-3', seq = 0, kind = 'stopped', stopReason = 'cancelled', message = 'stopped by you' })
  local text = text_of(model.render(s))
  H.contains(text, "● bash_command(npm install) — cancelled")
  H.contains(text, '✗ denied: the turn ended first')
  H.contains(text, '[stopped: cancelled — stopped by you]')
end)

H.test('a stored conversation is drawn as it was', function()
  local s = model.from_conversation({
    id = 'c-9',
    title = 'fix it',
    cost = 0.5,
    entries = {
      { role = 'user', text = 'fix it' },
      { role = 'assistant', text = 'Done.' },
      { role = 'tool', id = 'x', name = 'bash_command', input = { command = 'ls' }, output = 'a\nb\n', isError = false },
    },
  })
  local lines = model.render(s)
  local text = text_of(lines)
  H.contains(text, '# Tether chat: fix it\nconversation c-9')
  H.contains(text, '● bash_command(ls) — done\n    output: 2 lines (<Tab> shows)')
  H.contains(text, '\ncost $0.5000 · tokens since resumed: 0 in / 0 out', 'stored conversations keep no token counts')
  s.cards.x.show_output = true
  H.contains(text_of(model.render(s)), '      a\n      b')
end)

H.test('a turn that was not streamed (no chat capability) is drawn from the answer', function()
  local s = model.new()
  model.begin_turn(s, 'go', 't-5')
  model.fill_from_result(s, {
    text = 'Done.',
    toolCalls = { { name = 'write_file', summary = 'write_file(a.py)', verdict = 'allow', proposalId = 'p-9' } },
  })
  local text = text_of(model.render(s))
  H.contains(text, '## Tether\nDone.\n\n● write_file(a.py) — proposed · p-9')
  -- A streamed turn is not drawn twice.
  model.begin_turn(s, 'again', 't-6')
  model.apply(s, { turnId = 't-6', kind = 'text', delta = 'streamed', block = 1 })
  model.fill_from_result(s, { text = 'streamed', toolCalls = {} })
  local _, count = text_of(model.render(s)):gsub('streamed', '')
  H.eq(1, count)
end)

H.test('the buffer: redraws stream above the separator and leave the prompt alone', function()
  local chat_ui = require('tether.chat')
  local chat = chat_ui.buffer()
  api.nvim_set_current_buf(chat.bufnr)
  H.eq('markdown', vim.bo.filetype)
  H.eq('nofile', vim.bo.buftype)
  local last = api.nvim_buf_line_count(chat.bufnr)
  api.nvim_buf_set_lines(chat.bufnr, last - 1, last, false, { 'half a thought' })
  api.nvim_win_set_cursor(0, { last, 4 })
  model.begin_turn(chat.state, 'hello', 't-4')
  for _, piece in ipairs({ 'one ', 'two ', 'three' }) do
    model.apply(chat.state, { turnId = 't-4', kind = 'text', delta = piece, block = 1 })
    chat_ui.redraw(chat)
  end
  local lines = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  H.eq('half a thought', lines[#lines], 'the prompt is kept')
  H.eq(model.SEPARATOR, lines[#lines - 1])
  H.contains(text_of(lines), 'one two three')
  H.eq({ #lines, 4 }, api.nvim_win_get_cursor(0), 'the cursor stays in the prompt')
  -- The same redraw twice gives the same buffer (the separator mark does not drift).
  chat_ui.redraw(chat)
  H.eq(lines, api.nvim_buf_get_lines(chat.bufnr, 0, -1, false))
  -- On a plain transcript line <CR> moves down as it always does (it sends only from the prompt).
  api.nvim_win_set_cursor(0, { 1, 0 })
  api.nvim_feedkeys(vim.keycode('<CR>'), 'mx', false)
  H.eq(2, api.nvim_win_get_cursor(0)[1])
  H.eq(lines, api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), 'nothing was sent or changed')
  -- The separator deleted by hand comes back above the message, which is neither lost nor drawn over.
  api.nvim_win_set_cursor(0, { #lines - 1, 0 })
  vim.cmd('normal! dd')
  model.apply(chat.state, { turnId = 't-4', kind = 'text', delta = ' four', block = 1 })
  chat_ui.redraw(chat)
  local after = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  H.eq({ model.SEPARATOR, 'half a thought' }, { after[#after - 1], after[#after] })
  H.contains(text_of(after), 'one two three four')
  H.eq(#lines, #after, 'one separator, not two')
end)

H.test('redraws replace only what changed, keep no undo history, and equal a full redraw', function()
  local chat_ui = require('tether.chat')
  local chat = chat_ui.buffer()
  api.nvim_set_current_buf(chat.bufnr)
  chat.state = model.new()
  model.begin_turn(chat.state, 'go', 't-8')
  local u = stream('t-8')
  model.apply(chat.state, u({ kind = 'text', delta = 'first ', block = 1 }))
  chat_ui.redraw(chat)
  local last = api.nvim_buf_line_count(chat.bufnr)
  api.nvim_buf_set_lines(chat.bufnr, last - 1, last, false, { 'my message' })
  api.nvim_win_set_cursor(0, { last, 0 })
  local changed = {}
  api.nvim_buf_attach(chat.bufnr, false, {
    on_lines = function(_, _, _, first)
      table.insert(changed, first)
    end,
  })
  local updates = {
    u({ kind = 'text', delta = 'words', block = 1 }),
    u({ kind = 'tool', id = 'b', name = 'bash_command', summary = 'bash_command(make)', state = 'running' }),
    u({ kind = 'tool', id = 'b', name = 'bash_command', summary = 'bash_command(make)', state = 'failed', rule = 'allowed', reason = 'exit 2' }),
    u({ kind = 'text', delta = 'It failed.', block = 2 }),
  }
  for _, upd in ipairs(updates) do
    model.apply(chat.state, upd)
    chat_ui.redraw(chat)
  end
  local header_rows = 6 -- title, conversation, '', '## You', 'go', ''
  for _, first in ipairs(changed) do
    H.truthy(first >= header_rows, 'a redraw rewrote the unchanged head from row ' .. first)
  end
  local function snapshot()
    local marks = {}
    for _, m in ipairs(api.nvim_buf_get_extmarks(chat.bufnr, chat_ui.ns, 0, -1, { details = true })) do
      table.insert(marks, { m[2], m[4].hl_group or m[4].line_hl_group })
    end
    return { api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), marks }
  end
  local incremental = snapshot()
  H.contains(table.concat(incremental[1], '\n'), '● bash_command(make) — failed (allowed): exit 2')
  vim.cmd('silent! normal! u')
  H.eq(incremental, snapshot(), 'u does not take back a redraw')
  -- The same state drawn from scratch gives the same lines and highlights.
  local sep = api.nvim_buf_get_extmark_by_id(chat.bufnr, chat_ui.ns, chat.sep, {})[1]
  api.nvim_buf_set_lines(chat.bufnr, 0, sep, false, {})
  chat.drawn = nil
  chat_ui.redraw(chat)
  H.eq(incremental, snapshot())
  -- Same text, other highlight: a prompt that quotes the chat's own header is not drawn as one.
  local a, b = model.new(), model.new()
  model.begin_turn(a, 'go', 'ta')
  model.apply(a, { turnId = 'ta', kind = 'text', delta = 'hi', block = 1 })
  model.begin_turn(b, 'go\n\n## Tether\nhi', 'tb')
  chat.state = a
  chat_ui.redraw(chat)
  chat.state = b
  chat_ui.redraw(chat)
  incremental = snapshot()
  sep = api.nvim_buf_get_extmark_by_id(chat.bufnr, chat_ui.ns, chat.sep, {})[1]
  api.nvim_buf_set_lines(chat.bufnr, 0, sep, false, {})
  chat.drawn = nil
  chat_ui.redraw(chat)
  H.eq(incremental, snapshot())
end)

H.test('NUL, CR, escape sequences and newlines from the model never break a redraw', function()
  local chat_ui = require('tether.chat')
  local chat = chat_ui.buffer()
  model.begin_turn(chat.state, 'x', 't-7')
  model.apply(chat.state, { turnId = 't-7', kind = 'text', delta = 'a\0b\rc\r\nd\27[31m', block = 1 })
  model.apply(chat.state, {
    turnId = 't-7',
    kind = 'tool',
    id = 'odd',
    name = 'bash_command',
    summary = 'bash_command(a\nb\0c)',
    state = 'executed',
    output = 'o\0\n\rp',
  })
  model.apply(chat.state, {
    turnId = 't-7',
    kind = 'tool',
    id = 'typed',
    name = { 'not', 'a', 'string' },
    state = 'executed',
    rule = { 1 },
    reason = 5,
    output = { lines = 3 },
  })
  chat.state.cards.odd.show_output = true
  chat.state.cards.typed.show_output = true
  chat_ui.redraw(chat)
  local lines = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  H.contains(table.concat(lines, '\n'), '● bash_command(a b')
  H.eq(model.SEPARATOR, lines[#lines - 1], 'the layout holds')
end)

H.test(':AgentChat without a server says how to start one', function()
  local seen = H.capture_notify()
  vim.cmd('AgentChat')
  H.truthy(H.find_msg(seen, 'no tether language server'), 'an actionable error')
end)

H.finish()
