-- Approvals end to end against the real server (`tether serve`): a real `git commit` through
-- `bash_command`, whose policy verdict is *ask* (rule ask.git_state). The gate asks, the server sends
-- tether/approve, the plugin shows the float and vim.ui.select (stubbed here, in the test only, to
-- play the person), and the answer decides.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api

local server = H.tether_or_skip()
local seen = H.capture_notify()

local git = H.git
local ws = H.git_workspace({ ['a.py'] = { 'x = 1' } })

local picks, asked, floats = {}, {}, {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, { kind = opts.kind, items = vim.deepcopy(items), prompt = opts.prompt })
  for _, w in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_config(w).relative ~= '' then
      table.insert(floats, api.nvim_buf_get_lines(api.nvim_win_get_buf(w), 0, -1, false))
    end
  end
  local pick = table.remove(picks, 1)
  vim.defer_fn(function()
    on_choice(pick)
  end, 20)
end
local messages = {}
vim.ui.input = function(_, on_confirm)
  on_confirm(table.remove(messages, 1))
end

require('tether').setup({ cmd = { server, 'serve' }, permissions = 'command', notify_progress = false })
vim.lsp.enable('tether')
vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/a.py'))
local buf = api.nvim_get_current_buf()
local client
H.wait(function()
  client = vim.lsp.get_clients({ name = 'tether', bufnr = buf })[1]
  return client ~= nil and client.initialized
end, 'the client')

local function run_tool(message)
  local done, out, fail = false, nil, nil
  require('tether.lsp').exec(
    'tether.runTool',
    { name = 'bash_command', input = { command = 'git commit --allow-empty -q -m ' .. message } },
    { client = client, bufnr = buf },
    function(err, res)
      done, out, fail = true, res, err
    end
  )
  H.wait(function()
    return done
  end, 'the tool result', 60000)
  assert(not fail, fail)
  return out.result
end

local function subjects()
  return vim.split(vim.trim(git({ 'log', '--format=%s' }, ws)), '\n')
end

H.test('Allow once: the question is shown, the commit runs (state executed)', function()
  picks = { 'Allow once' }
  local result = run_tool('from-neovim')
  H.eq('executed', result.state, vim.inspect(result))
  H.eq(true, result.ok)
  H.eq({ 'from-neovim', 'init' }, subjects())
  H.eq('tether_approval', asked[1].kind)
  H.eq({ 'Allow once', 'Allow for this session', 'Always allow', 'Deny' }, asked[1].items)
  local float = table.concat(floats[1] or {}, '\n')
  H.contains(float, '  • git commit --allow-empty -q -m from-neovim')
  H.contains(float, '`git commit` changes your repository beyond the work tree  [ask.git_state]')
  H.contains(float, 'Sandbox: ')
end)

H.test('Deny with a message: nothing runs, the message reaches the result (what the model sees)', function()
  picks, messages = { 'Deny' }, { 'squash it into the previous commit instead' }
  local result = run_tool('second')
  H.eq('denied', result.state, vim.inspect(result))
  H.eq(false, result.ok)
  H.contains(vim.json.encode(result), 'squash it into the previous commit instead')
  H.eq({ 'from-neovim', 'init' }, subjects(), 'no commit')
end)

H.test('each answer is announced from its tether/event', function()
  H.truthy(H.find_msg(seen, 'approval: allowed'), 'allowed announced')
  H.truthy(H.find_msg(seen, 'approval: denied'), 'denied announced')
end)

H.test('no stray messages: answered approvals are not errors', function()
  for _, m in ipairs(seen) do
    H.truthy(m.level < vim.log.levels.ERROR, 'unexpected error: ' .. m.msg)
  end
end)

H.test(':AgentCancel while the question is open: the server withdraws it, the float closes, deny', function()
  local select = vim.ui.select
  local opened = false
  vim.ui.select = function()
    opened = true -- nobody answers
  end
  local done, out = false, nil
  require('tether.lsp').exec(
    'tether.runTool',
    { name = 'bash_command', input = { command = 'git commit --allow-empty -q -m cancelled' } },
    { client = client, bufnr = buf },
    function(_, res)
      done, out = true, res
    end
  )
  H.wait(function()
    return opened
  end, 'the question')
  H.truthy(require('tether.approve').active, 'a question is open')
  vim.cmd('AgentCancel')
  H.wait(function()
    return done and require('tether.approve').active == nil
  end, 'the call to end and the question to be withdrawn')
  -- Not checked here: the server then reports "Error in server: CANCELLED: <Future …>" when our
  -- answer to the withdrawn question arrives (LSP requires one); lsp/approvals.py `_drop` cancels
  -- the future but leaves it in pygls' _request_futures. Reported to the lead.
  vim.ui.select = select
  H.eq('denied', out.result.state, vim.inspect(out))
  H.eq({ 'from-neovim', 'init' }, subjects(), 'no commit')
  for _, w in ipairs(api.nvim_list_wins()) do
    H.eq('', api.nvim_win_get_config(w).relative, 'no float left')
  end
end)

H.test('Allow for this session: asked once, the next commit passes without a question', function()
  picks = { 'Allow for this session' }
  local before = #asked
  H.eq('executed', run_tool('third').state)
  H.eq('executed', run_tool('fourth').state)
  H.eq(before + 1, #asked, 'one question for both')
  H.eq({ 'fourth', 'third', 'from-neovim', 'init' }, subjects())
end)

client:stop(true)
H.finish()
