-- End to end against the real `tether serve` (docs/lsp.md), in a temp git workspace: permissions,
-- a proposal drawn as extmarks, accepting one hunk through workspace/applyEdit, rejecting, the diff
-- tab, rollback with and without the question, the log, commands, health, bad input.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api

local server = H.tether_or_skip()

local function sh(cmd, cwd)
  local obj = vim.system(cmd, { cwd = cwd, text = true }):wait()
  assert(obj.code == 0, table.concat(cmd, ' ') .. ': ' .. (obj.stderr or ''))
  return obj.stdout
end

-- A real git workspace with one committed file of 20 lines.
local ws = vim.fn.resolve(vim.fn.tempname())
vim.fn.mkdir(ws, 'p')
local original = {}
for i = 1, 20 do
  original[i] = string.format('value_%02d = %d', i, i)
end
local file = ws .. '/app.py'
vim.fn.writefile(original, file)
vim.fn.writefile({ 'alpha', 'beta', 'gamma' }, ws .. '/notes.txt')
sh({ 'git', 'init', '-q' }, ws)
sh({ 'git', 'config', 'user.email', 'test@example.com' }, ws)
sh({ 'git', 'config', 'user.name', 'Test' }, ws)
sh({ 'git', 'add', '.' }, ws)
sh({ 'git', 'commit', '-q', '-m', 'init' }, ws)

-- The key is present for the server, so health must say so without ever printing it.
local SECRET = 'sk-ant-api03-NEVER-PRINT-THIS-0123456789'
vim.env.ANTHROPIC_API_KEY = SECRET

local seen = H.capture_notify()
require('tether').setup({ cmd = { server, 'serve' }, notify_progress = false })

H.test(':checkhealth tether without a client asks `tether doctor` for the sandbox', function()
  vim.cmd('checkhealth tether')
  local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.contains(text, 'no tether client running')
  H.truthy(text:find('OK sandbox: %a+ %(auto; configured '), 'sandbox from tether doctor in:\n' .. text)
  H.contains(text, 'OK Anthropic API key: present')
  H.eq(nil, text:find('NEVER-PRINT', 1, true), 'the key value is never shown')
  vim.cmd('bwipeout')
end)

vim.lsp.enable('tether')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = api.nvim_get_current_buf()

local client
H.wait(function()
  client = vim.lsp.get_clients({ name = 'tether', bufnr = buf })[1]
  return client ~= nil and client.initialized and api.nvim_buf_get_commands(buf, {}).AgentAccept ~= nil
end, 'the tether client to attach and create buffer-local commands')

local function status()
  local res, err = require('tether.lsp').exec_sync(client, 'tether.status', {}, 10000)
  assert(res, err)
  return res
end

local function exec(command, args)
  local done, out, fail = false, nil, nil
  require('tether.lsp').exec(command, args, { client = client, bufnr = buf }, function(err, res)
    done, out, fail = true, res, err
  end)
  H.wait(function()
    return done
  end, command)
  assert(not fail, fail)
  return out
end

local function marks()
  return api.nvim_buf_get_extmarks(buf, require('tether.preview').ns, 0, -1, { details = true })
end

local function buffer()
  return api.nvim_buf_get_lines(buf, 0, -1, false)
end

local function scratch(name)
  local b = vim.fn.bufnr('^' .. vim.pesc(name) .. '$')
  return b ~= -1 and api.nvim_buf_get_lines(b, 0, -1, false) or nil
end

local function wait_msg(text)
  H.wait(function()
    return H.find_msg(seen, text) ~= nil
  end, 'a message containing ' .. vim.inspect(text) .. ' among ' .. vim.inspect(vim.tbl_map(function(m)
    return m.msg
  end, seen)))
  return H.find_msg(seen, text)
end

H.test('the statusline shows the permissions the server reports on attach', function()
  H.wait(function()
    return require('tether').statusline({ plain = true }) == 'tether: none'
  end, 'tether: none in the statusline, got ' .. vim.inspect(require('tether').statusline({ plain = true })))
end)

H.test('one client, for the workspace of the file (not for the cwd or the empty buffer)', function()
  local all = vim.lsp.get_clients({ name = 'tether' })
  H.eq(1, #all)
  H.eq(ws, all[1].root_dir)
  H.eq(ws, status().workspace)
end)

H.test('buffer-local commands exist with completion', function()
  local local_cmds = api.nvim_buf_get_commands(buf, {})
  for name in pairs(require('tether.commands').specs) do
    H.truthy(local_cmds[name], name .. ' is buffer-local')
  end
  H.eq({ 'read,write', 'read,command', 'read,workspace' }, vim.fn.getcompletion('AgentMode read,', 'cmdline'))
end)

H.test(':AgentMode sets permissions on the server; bad input is refused before it', function()
  vim.cmd('AgentMode read')
  wait_msg('permissions: read')
  H.eq('read', status().permissions)
  H.eq('tether: read', require('tether').statusline({ plain = true }), 'the statusline follows')
  H.eq('%#TetherStatus#tether: read%*', require('tether').statusline())
  local before = #seen
  vim.cmd('AgentMode bogus')
  local msg = seen[before + 1]
  H.contains(
    msg.msg,
    "tether: :AgentMode: unknown permission 'bogus' (expected none, read, write, command, workspace, all, or a comma list like read,write)"
  )
  H.eq(vim.log.levels.ERROR, msg.level)
  H.eq('read', status().permissions, 'unchanged')
  vim.cmd('AgentMode')
  H.wait(function()
    return #seen > before + 1 and seen[#seen].msg == 'tether: permissions: read'
  end, ':AgentMode without argument shows the permissions')
end)

-- The agent's edit: line 3 and line 17 change (two hunks, far apart).
local proposed = vim.deepcopy(original)
proposed[3] = 'value_03 = 300  # changed'
proposed[17] = 'value_17 = 1700'
table.insert(proposed, 18, 'value_17b = 1701')
local proposal_id

H.test('a write_file proposal appears as extmarks, and as a tether/event message', function()
  local res = exec(
    'tether.runTool',
    { name = 'write_file', input = { path = 'app.py', content = table.concat(proposed, '\n') .. '\n' } }
  )
  H.truthy(res.result, 'a gate result')
  proposal_id = res.result.proposalId or (res.proposal and res.proposal.id)
  H.truthy(proposal_id, 'a proposal id in ' .. vim.inspect(res))
  H.wait(function()
    return #marks() >= 3
  end, 'the preview extmarks')
  H.eq(original, buffer(), 'a proposal does not touch the buffer')
  local deletes, signs, added = {}, {}, {}
  for _, m in ipairs(marks()) do
    if m[4].hl_group == 'TetherDelete' then
      table.insert(deletes, { m[2], m[4].end_row })
    end
    if m[4].sign_text then
      table.insert(signs, { m[2], vim.trim(m[4].sign_text) })
    end
    if m[4].virt_lines then
      local texts = {}
      for _, vl in ipairs(m[4].virt_lines) do
        table.insert(texts, vl[1][1])
      end
      table.insert(added, { m[2], texts })
    end
  end
  H.eq({ { 2, 3 }, { 16, 17 } }, deletes, 'line 3 and line 17 highlighted')
  H.eq({ { 2, '▎' }, { 16, '▎' } }, signs, 'one sign per hunk')
  H.eq({ { 2, { 'value_03 = 300  # changed' } }, { 16, { 'value_17 = 1700', 'value_17b = 1701' } } }, added)
  wait_msg('proposed an edit with write_file (' .. proposal_id .. ')')
  H.eq(original, vim.fn.readfile(file), 'nothing written to disk')
end)

H.test(':AgentAccept on hunk 2 changes exactly those buffer lines', function()
  api.nvim_win_set_cursor(0, { 17, 0 })
  vim.cmd('AgentAccept')
  H.wait(function()
    return buffer()[17] == 'value_17 = 1700'
  end, 'the accepted hunk in the buffer (workspace/applyEdit)')
  local expected = vim.deepcopy(original)
  expected[17] = 'value_17 = 1700'
  table.insert(expected, 18, 'value_17b = 1701')
  H.eq(expected, buffer(), 'only hunk 2 applied')
  wait_msg('accepted hunk 2 of ' .. proposal_id)
  H.wait(function()
    local rows = {}
    for _, m in ipairs(marks()) do
      rows[m[2]] = true
    end
    return vim.deep_equal(rows, { [2] = true })
  end, 'only hunk 1 still drawn')
  vim.cmd('silent undo')
  H.eq(original, buffer(), 'u undoes an accepted hunk like any change')
  vim.cmd('silent redo')
  H.eq(expected, buffer())
  vim.cmd('silent write')
  H.eq(expected, vim.fn.readfile(file))
end)

H.test(':AgentReject on hunk 1 removes it; the proposal is partially accepted', function()
  api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('AgentReject')
  H.wait(function()
    return #marks() == 0
  end, 'no marks left')
  local res = exec('tether.proposal', { id = proposal_id })
  H.eq('partially_accepted', res.proposal.state)
  H.eq('value_03 = 3', buffer()[3], 'rejecting changes nothing')
end)

H.test(':AgentAccept with no hunk under the cursor says how to act on the whole proposal', function()
  api.nvim_win_set_cursor(0, { 10, 0 })
  vim.cmd('AgentAccept')
  H.contains(seen[#seen].msg, 'no pending tether hunk under the cursor (:AgentAccept % acts on the whole proposal)')
end)

H.test(':AgentDiff shows current vs proposed; rejecting in the diff tab updates it', function()
  local now = buffer()
  local want = vim.deepcopy(now)
  want[1] = 'value_01 = 100'
  want[10] = 'value_10 = 1000'
  local res = exec(
    'tether.runTool',
    { name = 'write_file', input = { path = 'app.py', content = table.concat(want, '\n') .. '\n' } }
  )
  local id = res.result.proposalId or res.proposal.id
  H.wait(function()
    return #marks() >= 2
  end, 'the new proposal drawn')
  local tabs = #api.nvim_list_tabpages()
  api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd('AgentDiff')
  H.wait(function()
    return #api.nvim_list_tabpages() == tabs + 1 and vim.b.tether_proposal == id and #buffer() > 0
  end, 'the diff tab')
  local wins = api.nvim_tabpage_list_wins(0)
  H.eq(2, #wins)
  H.eq(buf, api.nvim_win_get_buf(wins[1]), 'left: the real buffer')
  H.eq(true, vim.wo[wins[1]].diff)
  H.eq(true, vim.wo[wins[2]].diff)
  local right = api.nvim_win_get_buf(wins[2])
  H.eq(want, api.nvim_buf_get_lines(right, 0, -1, false), 'right: the proposed text')
  api.nvim_set_current_win(wins[1])
  api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd('normal! ]c')
  H.eq(10, api.nvim_win_get_cursor(0)[1], ']c jumps to the next hunk')
  -- Reject hunk 2 (line 10) from the right side: it disappears from the proposed side.
  api.nvim_set_current_win(wins[2])
  api.nvim_win_set_cursor(0, { 10, 0 })
  vim.cmd('AgentReject')
  H.wait(function()
    return api.nvim_buf_get_lines(right, 9, 10, false)[1] == now[10]
  end, 'the rejected hunk reverted on the right')
  -- Accept hunk 1 from the right side: the real buffer gets it.
  api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd('AgentAccept')
  H.wait(function()
    return buffer()[1] == 'value_01 = 100'
  end, 'hunk 1 applied to the real buffer')
  H.eq(now[10], buffer()[10])
  vim.cmd('tabclose')
  api.nvim_set_current_buf(buf)
  vim.cmd('silent write')
end)

H.test('a hunk accepted after typing above it lands on the moved lines (the server rebases)', function()
  local now = buffer()
  local want = vim.deepcopy(now)
  want[12] = 'value_12 = 1200'
  exec(
    'tether.runTool',
    { name = 'write_file', input = { path = 'app.py', content = table.concat(want, '\n') .. '\n' } }
  )
  H.wait(function()
    return #marks() >= 1
  end, 'the proposal drawn')
  api.nvim_buf_set_lines(buf, 0, 0, false, { '# typed 1', '# typed 2' })
  api.nvim_win_set_cursor(0, { 14, 0 })
  vim.cmd('AgentAccept')
  H.wait(function()
    return buffer()[14] == 'value_12 = 1200'
  end, 'the hunk applied two lines lower')
  local expected = { '# typed 1', '# typed 2' }
  vim.list_extend(expected, want)
  H.eq(expected, buffer())
  api.nvim_buf_set_lines(buf, 0, 2, false, {})
  vim.cmd('silent write')
end)

H.test(':AgentDiff {id} opens the proposal of another file, loading it; :AgentReject % there', function()
  local res =
    exec('tether.runTool', { name = 'write_file', input = { path = 'notes.txt', content = 'alpha\nBETA\ngamma\n' } })
  local id = res.result.proposalId or res.proposal.id
  H.eq({ id }, vim.fn.getcompletion('AgentDiff ' .. id:sub(1, 5), 'cmdline'), 'completion offers it')
  vim.cmd('AgentDiff ' .. id)
  H.wait(function()
    return vim.b.tether_proposal == id
  end, 'the diff tab')
  local wins = api.nvim_tabpage_list_wins(0)
  local left = api.nvim_win_get_buf(wins[1])
  H.eq(ws .. '/notes.txt', api.nvim_buf_get_name(left))
  H.eq({ 'alpha', 'beta', 'gamma' }, api.nvim_buf_get_lines(left, 0, -1, false))
  H.eq({ 'alpha', 'BETA', 'gamma' }, api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd('AgentReject %')
  H.wait(function()
    return exec('tether.proposal', { id = id }).proposal.state == 'rejected'
  end, 'the proposal rejected')
  H.eq({}, vim.fn.getcompletion('AgentDiff ' .. id, 'cmdline'), 'a rejected proposal is not offered')
  vim.cmd('tabclose')
  api.nvim_set_current_buf(buf)
end)

H.test('typing in the context of a hunk then accepting it: a clear stale error, the buffer keeps your text', function()
  local now = buffer()
  local want = vim.deepcopy(now)
  want[8] = 'value_08 = 800'
  local res = exec(
    'tether.runTool',
    { name = 'write_file', input = { path = 'app.py', content = table.concat(want, '\n') .. '\n' } }
  )
  local id = res.result.proposalId or res.proposal.id
  H.wait(function()
    return #marks() >= 1
  end, 'the proposal drawn')
  -- Change a context line of the hunk (line 7; the hunk replaces line 8).
  api.nvim_buf_set_lines(buf, 6, 7, false, { 'mine 7' })
  local mine = buffer()
  api.nvim_win_set_cursor(0, { 8, 0 })
  local before = #seen
  vim.cmd('AgentAccept')
  H.wait(function()
    return #seen > before and seen[#seen].level == vim.log.levels.ERROR
  end, 'an error message')
  H.contains(seen[#seen].msg, 'tether.accept: ')
  H.contains(seen[#seen].msg:lower(), 'stale')
  H.eq(mine, buffer(), 'nothing applied over the typed text')
  vim.cmd('AgentReject %')
  H.wait(function()
    return exec('tether.proposal', { id = id }).proposal.state == 'rejected'
  end, 'rejected')
  api.nvim_buf_set_lines(buf, 0, -1, false, now)
  vim.cmd('silent write')
end)

local before_last_accept

H.test("the server's code action accepts a hunk; the preview follows from tether/event alone", function()
  local now = buffer()
  before_last_accept = vim.deepcopy(now)
  local want = vim.deepcopy(now)
  want[5] = 'value_05 = 5000'
  exec(
    'tether.runTool',
    { name = 'write_file', input = { path = 'app.py', content = table.concat(want, '\n') .. '\n' } }
  )
  H.wait(function()
    return #marks() >= 1
  end, 'the proposal drawn')
  api.nvim_win_set_cursor(0, { 5, 0 })
  local titles = {}
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      table.insert(titles, action.title)
      return action.title:find('hunk 1', 1, true) ~= nil and action.title:lower():find('accept', 1, true) ~= nil
    end,
  })
  H.wait(function()
    return buffer()[5] == 'value_05 = 5000'
  end, 'the code action applied, titles seen: ' .. vim.inspect(titles))
  H.wait(function()
    return #marks() == 0
  end, 'the preview cleared by the tether/event refresh')
  vim.cmd('silent write')
end)

H.test(':AgentLog lists the calls, highlighted', function()
  vim.cmd('AgentLog 50')
  H.wait(function()
    local l = scratch('tether://log')
    return l and #l > 2
  end, 'the log buffer')
  local text = table.concat(scratch('tether://log'), '\n')
  H.contains(text, 'write_file')
  H.contains(text, 'app.py')
  local lb = vim.fn.bufnr('tether://log')
  H.truthy(#api.nvim_buf_get_extmarks(lb, -1, 0, -1, {}) > 0, 'highlighted')
  vim.cmd('close')
end)

H.test(':AgentRollback 1 shows the files in a float and does nothing on n', function()
  local before = vim.fn.readfile(file)
  vim.cmd('AgentRollback 1')
  local float
  H.wait(function()
    for _, w in ipairs(api.nvim_list_wins()) do
      if api.nvim_win_get_config(w).relative ~= '' then
        float = w
        return true
      end
    end
  end, 'the confirmation float')
  local lines = api.nvim_buf_get_lines(api.nvim_win_get_buf(float), 0, -1, false)
  H.contains(lines[1], 'Roll back 1 step')
  H.contains(table.concat(lines, '\n'), 'app.py (restored)')
  api.nvim_feedkeys('n', 'x', false)
  wait_msg('rollback cancelled')
  H.eq(before, vim.fn.readfile(file))
end)

H.test(':AgentRollback! 1 restores the file and the buffer', function()
  local before = vim.fn.readfile(file)
  vim.cmd('AgentRollback! 1')
  H.wait(function()
    return not vim.deep_equal(before, vim.fn.readfile(file))
  end, 'the file restored on disk')
  wait_msg('rolled back: 1 restored')
  H.eq(before_last_accept, vim.fn.readfile(file), 'the file as it was before the last accept')
  H.wait(function()
    return vim.deep_equal(buffer(), before_last_accept)
  end, 'the buffer follows')
  H.eq(false, vim.bo[buf].modified)
end)

H.test(':AgentRollback abc is refused, nothing is rolled back', function()
  local before = vim.fn.readfile(file)
  local n = #exec('tether.checkpoints', {}).checkpoints
  vim.cmd('AgentRollback abc')
  H.contains(
    seen[#seen].msg,
    "tether: :AgentRollback takes a number of steps (a positive integer, default 1) or a checkpoint id (see :AgentCheckpoints), not 'abc'"
  )
  H.eq(vim.log.levels.ERROR, seen[#seen].level)
  H.eq(n, #exec('tether.checkpoints', {}).checkpoints)
  H.eq(before, vim.fn.readfile(file))
end)

H.test(':AgentRollback {checkpoint id} asks about that checkpoint', function()
  local cps = exec('tether.checkpoints', {}).checkpoints
  local target = cps[2].id
  vim.cmd('AgentRollback ' .. target)
  local float
  H.wait(function()
    for _, w in ipairs(api.nvim_list_wins()) do
      if api.nvim_win_get_config(w).relative ~= '' then
        float = w
        return true
      end
    end
  end, 'the confirmation float')
  local first = api.nvim_buf_get_lines(api.nvim_win_get_buf(float), 0, 1, false)[1]
  H.contains(first, 'Roll back ' .. target)
  api.nvim_feedkeys('q', 'x', false)
  wait_msg('rollback cancelled')
  H.eq(#cps, #exec('tether.checkpoints', {}).checkpoints, 'nothing happened')
end)

H.test(':AgentCheckpoints lists them newest first', function()
  vim.cmd('AgentCheckpoints')
  H.wait(function()
    local l = scratch('tether://checkpoints')
    return l and #l > 2
  end, 'the checkpoints buffer')
  local l = scratch('tether://checkpoints')
  H.truthy(l[2]:match('^%s+1%s+%x+%s+%d%d%d%d%-'), 'first row is checkpoint 1: ' .. l[2])
  vim.cmd('close')
end)

H.test('server progress reaches vim.notify (LspProgress), and :AgentCancel answers', function()
  require('tether.config').current.notify_progress = true
  local before = #seen
  vim.cmd('AgentCheckpoints')
  H.wait(function()
    for i = before + 1, #seen do
      if seen[i].msg:find('tether: Tether: checkpoints', 1, true) then
        return true
      end
    end
  end, 'a progress message, seen: ' .. vim.inspect(seen))
  require('tether.config').current.notify_progress = false
  H.wait(function()
    return vim.fn.bufwinid('tether://checkpoints') ~= -1
  end, 'the checkpoints window')
  api.nvim_win_close(vim.fn.bufwinid('tether://checkpoints'), true)
  vim.cmd('AgentCancel')
  wait_msg('nothing to cancel')
end)

H.test(':AgentCheck prints the policy decision', function()
  vim.cmd('AgentCheck curl https://example.com')
  local msg = wait_msg('denied (')
  H.eq(vim.log.levels.WARN, msg.level)
  vim.cmd('AgentCheck git status')
  wait_msg('allowed (')
end)

H.test(':AgentRun runs through the gate; denied commands say why', function()
  vim.cmd('AgentMode none')
  H.wait(function()
    return status().permissions == 'none'
  end, 'no permissions')
  vim.cmd('AgentRun ls')
  H.wait(function()
    local l = scratch('tether://run')
    return l and l[1] == '$ ls' and #l > 1
  end, 'the dry run')
  H.contains(scratch('tether://run')[2], 'dry run (not permitted by the current permissions, see :AgentMode)')
  vim.cmd('close')
  vim.cmd('AgentMode read,command')
  H.wait(function()
    return status().permissions:find('command') ~= nil
  end, 'command permission')
  vim.cmd('AgentRun ls')
  H.wait(function()
    local l = scratch('tether://run')
    return l and l[#l] and l[#l]:match('^%[exit') ~= nil
  end, 'the run output')
  local l = scratch('tether://run')
  H.eq('$ ls', l[1])
  H.truthy(vim.list_contains(l, 'app.py'), 'ls output: ' .. vim.inspect(l))
  H.contains(l[#l], '[exit 0,')
  vim.cmd('close')
  vim.cmd('AgentRun curl https://example.com')
  H.wait(function()
    local r = scratch('tether://run')
    return r and r[1] == '$ curl https://example.com' and #r > 1
  end, 'the denial')
  H.contains(table.concat(scratch('tether://run'), '\n'), 'curl')
  vim.cmd('close')
end)

H.test(':checkhealth tether reports version, server, sandbox, git, key presence only', function()
  vim.cmd('checkhealth tether')
  local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.contains(text, 'OK Neovim 0.')
  H.contains(text, 'OK server: tether ')
  H.contains(text, 'client attached')
  H.truthy(text:find('OK sandbox: %a+'), 'sandbox backend line in:\n' .. text)
  H.contains(text, 'OK git version')
  H.contains(text, 'OK Anthropic API key: present')
  H.eq(nil, text:find('NEVER-PRINT', 1, true), 'the key value is never shown')
  H.contains(text, 'tether.log')
  H.eq(nil, text:find('ERROR', 1, true), 'no errors in:\n' .. text)
  vim.cmd('bwipeout')
end)

H.test('the log file never holds the key either', function()
  local path = require('tether.log').path()
  if vim.uv.fs_stat(path) then
    H.eq(nil, table.concat(vim.fn.readfile(path), '\n'):find('NEVER-PRINT', 1, true))
  end
end)

H.test('when the server is gone, commands say so instead of failing', function()
  vim.lsp.stop_client(client.id, true)
  H.wait(function()
    return #vim.lsp.get_clients({ name = 'tether' }) == 0
  end, 'the client stopped')
  vim.cmd('AgentLog')
  H.contains(seen[#seen].msg, 'no tether language server is running')
  H.eq(vim.log.levels.ERROR, seen[#seen].level)
end)

H.finish()
