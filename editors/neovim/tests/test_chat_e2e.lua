-- :AgentChat end to end: the real `tether serve` (permissions `command`) whose agent talks to
-- `tether fake-api` playing tests/e2e/test_neovim.py's chat script. Everything is done with the chat
-- buffer's keys: send, watch the answer stream in, allow the `git commit` the policy asks about,
-- accept one hunk and reject the other, then stop a second turn that never ends.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api

local server = H.agent_or_skip()

local readme = {}
for n = 1, 30 do
  readme[n] = 'line ' .. n
end
local ws = H.git_workspace({ ['README.md'] = readme, ['hello.py'] = { "print('hello')" } })
local git = H.git

-- The person's picker stays open (as telescope's or fzf-lua's would): the answer comes from the chat.
local selects = {}
vim.ui.select = function(items, opts)
  table.insert(selects, { items = items, kind = opts.kind })
end
H.capture_notify()

require('tether').setup({ cmd = { server, 'serve' }, permissions = 'command', notify_progress = false })
vim.lsp.enable('tether')
vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/hello.py'))
local source = api.nvim_get_current_buf()
H.wait(function()
  local c = vim.lsp.get_clients({ name = 'tether', bufnr = source })[1]
  return c and c.initialized
end, 'the client')

local chat_ui = require('tether.chat')
local chat

local function text()
  return table.concat(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), '\n')
end

local function press(keys)
  api.nvim_feedkeys(vim.keycode(keys), 'mx', false)
end

--- Put the cursor on the first row whose text contains `needle`.
local function goto_row(needle)
  local lines = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:find(needle, 1, true) then
      api.nvim_win_set_cursor(0, { i, 0 })
      return
    end
  end
  error('no row with ' .. needle .. ' in\n' .. text())
end

local function type_message(message)
  local last = api.nvim_buf_line_count(chat.bufnr)
  api.nvim_buf_set_lines(chat.bufnr, last - 1, last, false, { message })
  api.nvim_win_set_cursor(0, { last, 0 })
end

H.test(':AgentChat opens the chat buffer with the cursor on the message line', function()
  vim.cmd('AgentChat')
  chat = chat_ui.current
  H.truthy(chat, 'a chat')
  H.eq(chat.bufnr, api.nvim_get_current_buf())
  H.eq('markdown', vim.bo.filetype)
  H.contains(text(), 'new conversation')
  H.eq(api.nvim_buf_line_count(chat.bufnr), api.nvim_win_get_cursor(0)[1])
end)

H.test('<CR> sends; the answer is visible while the turn still runs', function()
  type_message('fix the readme and commit')
  press('<CR>')
  H.wait(function()
    return text():find('Streaming the first part', 1, true) ~= nil
  end, 'the first words of the answer')
  H.eq(true, chat.state.running, 'the turn has not ended')
  H.truthy(not text():find('Both done', 1, true), 'the last response has not come yet')
  H.contains(text(), '## You\nfix the readme and commit')
  H.contains(text(), 'running… (<C-c> stops)')
  local lines = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  H.eq('', lines[#lines], 'the message line was cleared for the next one')
end)

H.test('the git commit is asked about on its card and allowed once with ga', function()
  H.wait(function()
    return text():find('? allow `git commit', 1, true) ~= nil
  end, 'the question in the chat', 60000)
  H.contains(text(), '● bash_command(git commit --allow-empty -q -m from-chat) — running')
  H.eq('tether_approval', selects[1] and selects[1].kind, 'the picker was opened too')
  goto_row('? allow `git commit')
  press('ga')
  H.wait(function()
    return text():find('✓ allowed once', 1, true) ~= nil
  end, 'the answer drawn')
  H.wait(function()
    return text():find('from-chat) — executed', 1, true) ~= nil
  end, 'the commit ran', 60000)
  H.contains(text(), 'from-chat) — executed (ask.git_state)', 'the rule that asked stays on its line')
  H.contains(git({ 'log', '--format=%s' }, ws), 'from-chat')
end)

H.test('the turn ends; the proposal shows its two hunks', function()
  H.wait(function()
    return not chat.state.running and text():find('hunk 2', 1, true) ~= nil
  end, 'the end of the turn and the hunks', 60000)
  H.contains(text(), 'Both done')
  H.contains(text(), '● write_file(README.md) — proposed · p-')
  H.truthy(not text():find('running…', 1, true), 'the footer no longer says running')
  H.truthy(text():find('cost %$%d+%.%d+ · tokens %d+ in / %d+ out'), 'cost and tokens in the footer')
end)

H.test('ga on hunk 1 accepts it, gr on hunk 2 rejects it: the file has exactly hunk 1', function()
  goto_row('hunk 1 ')
  press('ga')
  H.wait(function()
    return text():find('hunk 1 [^\n]*— accepted') ~= nil
  end, 'hunk 1 accepted')
  goto_row('hunk 2 ')
  press('gr')
  H.wait(function()
    return text():find('hunk 2 [^\n]*— rejected') ~= nil
  end, 'hunk 2 rejected')
  local disk = vim.fn.readfile(ws .. '/README.md')
  H.eq('line two', disk[2], 'hunk 1 applied')
  H.eq('line 28', disk[28], 'hunk 2 not applied')
end)

H.test('<C-c> stops a turn that never ends, and only that turn', function()
  type_message('tell me a long story')
  press('<CR>')
  H.wait(function()
    return text():find('## You\ntell me a long story\n\n## Tether\n.*Thinking') ~= nil
  end, 'the streamed start')
  H.eq(true, chat.state.running)
  press('<C-c>')
  H.wait(function()
    return text():find('[stopped: cancelled', 1, true) ~= nil
  end, 'the turn stopped', 60000)
  H.eq(false, chat.state.running)
end)

H.test(':AgentChat {id} draws the stored conversation; :AgentChat! starts a new one', function()
  local id = chat.state.conversation_id
  H.truthy(id, 'a conversation id')
  H.eq({ id }, chat_ui.complete(id:sub(1, 4)), 'completion lists it')
  vim.cmd('AgentChat!')
  H.contains(text(), 'new conversation')
  vim.cmd('AgentChat ' .. id)
  H.wait(function()
    return text():find('conversation ' .. id, 1, true) ~= nil
  end, 'the stored conversation')
  H.contains(text(), '## You\nfix the readme and commit')
  H.contains(text(), '● bash_command(git commit')
end)

local function read_tool(path)
  local done, out, fail = false, nil, nil
  require('tether.lsp').exec('tether.runTool', { name = 'read_file', input = { path = path } }, {}, function(e, res)
    done, out, fail = true, res, e
  end)
  H.wait(function()
    return done
  end, 'read_file')
  assert(not fail, fail)
  return out.result
end

H.test(':AgentAllowSecret lets the agent read one secret file after the person confirms', function()
  vim.fn.writefile({ 'API_KEY=not-a-real-key-123' }, ws .. '/.env')
  local refused = read_tool('.env')
  H.eq(true, refused.isError, 'refused before')
  H.contains(refused.text, ':AgentAllowSecret .env', 'the refusal names the command')
  local real_confirm = vim.fn.confirm
  vim.fn.confirm = function()
    return 2 -- No
  end
  vim.cmd('AgentAllowSecret .env')
  H.eq(true, read_tool('.env').isError, 'still refused after No')
  vim.fn.confirm = function()
    return 1 -- Allow
  end
  vim.cmd('AgentAllowSecret .env')
  vim.fn.confirm = real_confirm
  H.wait(function()
    local r = read_tool('.env')
    return not r.isError and r.text:find('API_KEY=not-a-real-key-123', 1, true) ~= nil
  end, 'the file readable after Allow')
end)

H.finish()
