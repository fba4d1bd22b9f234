-- Approvals without a server: the question as lines, choice → answer, and the handler run the way
-- Neovim runs a server request (inside `vim.schedule(coroutine.wrap(...))`, the return value is the
-- response), with `vim.ui.select` / `vim.ui.input` stubbed here, in the test only.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local approve = require('tether.approve')
H.capture_notify()
local api = vim.api

local function params(over)
  return vim.tbl_extend('force', {
    id = 'ap-1a2b',
    tool = 'bash_command',
    command = 'make lint && git commit -m wip',
    mode = 'command',
    rule = 'ask.git_state',
    reason = "changes your repository's history beyond the work tree",
    segments = {
      {
        argv = { 'git', 'commit', '-m', 'wip' },
        rule = 'ask.git_state',
        reason = "changes your repository's history beyond the work tree",
      },
    },
    sandbox = { backend = 'bwrap', network = 'none', writable = { '/path/ws' } },
    always = { file = '/home/u/.config/tether/config.toml', toml = '[[rules]]\npattern = ["git", "commit"]\n' },
    timeoutMs = 120000,
  }, over or {})
end

H.test('format: command, the segments and why, sandbox, the exact rule and file, the timeout', function()
  local lines, hls = approve.format(params())
  H.eq({
    'The agent wants to run (command mode):',
    '  $ make lint && git commit -m wip',
    '',
    'This part needs your approval:',
    '  • git commit -m wip',
    "      changes your repository's history beyond the work tree  [ask.git_state]",
    '',
    'Sandbox: bwrap, network none, writable: /path/ws',
    '"Always allow" adds this rule to /home/u/.config/tether/config.toml:',
    '    [[rules]]',
    '    pattern = ["git", "commit"]',
    'No answer within 2 min is a deny.',
  }, lines)
  H.eq({ 5, 0, -1, 'TetherDenied' }, hls[5], 'the reason is highlighted')
end)

H.test('format: always null, several segments, quoting, another tool, a multi-line command', function()
  local lines = approve.format(params({
    tool = 'run_script',
    command = 'cat <<EOF > x\nhi\nEOF',
    always = vim.NIL,
    sandbox = vim.NIL,
    timeoutMs = 45000,
    segments = {
      { argv = { 'npm', 'install', 'left pad' }, rule = 'ask.install', reason = 'installs packages' },
      { argv = { './build.sh', "it's" }, rule = vim.NIL, reason = vim.NIL },
    },
  }))
  H.eq('The agent wants to run with run_script (command mode):', lines[1])
  H.eq({ '  $ cat <<EOF > x', '  $ hi', '  $ EOF' }, { lines[2], lines[3], lines[4] })
  H.eq('These parts need your approval:', lines[6])
  H.eq("  • npm install 'left pad'", lines[7])
  H.eq('      installs packages  [ask.install]', lines[8])
  H.eq([[  • ./build.sh 'it'\''s']], lines[9])
  H.eq("      changes your repository's history beyond the work tree  [ask.git_state]", lines[10], 'falls back')
  H.eq('Sandbox: not stated by the server', lines[12])
  H.eq('"Always allow": the server names no rule to write for this call.', lines[13])
  H.eq('No answer within 45 s is a deny.', lines[14])
end)

H.test('result: each title to its choice; anything else is deny; messages trimmed, empty dropped', function()
  H.eq({ choice = 'allow_once' }, approve.result('Allow once'))
  H.eq({ choice = 'allow_session' }, approve.result('Allow for this session'))
  H.eq({ choice = 'allow_always' }, approve.result('Always allow'))
  H.eq({ choice = 'deny' }, approve.result('Deny'))
  H.eq({ choice = 'deny', message = 'use make test instead' }, approve.result('Deny', '  use make test instead \n'))
  H.eq({ choice = 'deny' }, approve.result('Deny', '   '))
  H.eq({ choice = 'deny' }, approve.result(nil))
  H.eq({ choice = 'deny' }, approve.result('allow once'), 'titles match exactly')
  H.eq({ choice = 'deny' }, approve.result('Allow'))
  H.eq(4000, #approve.result('Deny', string.rep('x', 5000)).message)
end)

H.test('the four titles are exactly the server showMessageRequest actions, in order', function()
  H.eq(
    { 'Allow once', 'Allow for this session', 'Always allow', 'Deny' },
    vim.tbl_map(function(c)
      return c.title
    end, approve.CHOICES)
  )
end)

H.test('validate refuses malformed questions with a reason', function()
  H.eq({ true, nil }, { approve.validate(params()) })
  for _, bad in ipairs({
    'x',
    params({ command = 7 }),
    params({ command = '' }),
    params({ segments = 'git' }),
    params({ segments = { a = 1 } }),
    params({ segments = { { argv = 'git commit' } } }),
    params({ segments = { { argv = { 'git', 3 } } } }),
  }) do
    local ok, why = approve.validate(bad)
    H.eq(false, ok, vim.inspect(bad))
    H.truthy(type(why) == 'string' and #why > 5)
  end
end)

-- The handler as Neovim's RPC layer calls it (runtime/lua/vim/lsp/rpc.lua, handle_body).
local function serve_request(p, client_id)
  local response = { done = false }
  vim.schedule(coroutine.wrap(function()
    response.result = approve.handler(nil, p, { method = 'tether/approve', client_id = client_id or 1 })
    response.done = true
  end))
  return response
end

local function stub_ui(pick, message)
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { kind = 'select', items = items, prompt = opts.prompt })
    -- Asynchronous, like a picker plugin: answer on a later turn of the event loop.
    vim.defer_fn(function()
      on_choice(pick, pick and vim.fn.index(items, pick) + 1 or nil)
    end, 10)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(asked, { kind = 'input', prompt = opts.prompt })
    vim.defer_fn(function()
      on_confirm(message)
    end, 10)
  end
  return asked
end

local function float_lines()
  for _, w in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_config(w).relative ~= '' then
      return api.nvim_buf_get_lines(api.nvim_win_get_buf(w), 0, -1, false)
    end
  end
end

H.test('handler: the float shows the question while the select is open; Allow once answers', function()
  local seen_float
  local asked = stub_ui('Allow once')
  local select = vim.ui.select
  vim.ui.select = function(...)
    seen_float = float_lines()
    return select(...)
  end
  local response = serve_request(params())
  H.wait(function()
    return response.done
  end, 'the answer')
  H.eq({ choice = 'allow_once' }, response.result)
  H.eq({ 'Allow once', 'Allow for this session', 'Always allow', 'Deny' }, asked[1].items)
  H.eq('Tether: allow `make lint && git commit -m wip`?', asked[1].prompt)
  H.eq(1, #asked, 'no message asked after an allow')
  H.eq(approve.format(params()), seen_float, 'the float held the question')
  H.eq(nil, float_lines(), 'the float is closed after the answer')
end)

H.test('handler: the editor keeps running while the question is open', function()
  stub_ui('Allow for this session')
  local response = serve_request(params())
  local ticks = 0
  local timer = vim.uv.new_timer()
  timer:start(0, 1, function()
    ticks = ticks + 1
  end)
  H.wait(function()
    return response.done
  end, 'the answer')
  timer:stop()
  timer:close()
  H.eq({ choice = 'allow_session' }, response.result)
  H.truthy(ticks > 0, 'the event loop ran meanwhile')
end)

H.test('handler: Deny asks for a message for the model', function()
  local asked = stub_ui('Deny', 'run the tests first')
  local response = serve_request(params())
  H.wait(function()
    return response.done
  end, 'the answer')
  H.eq({ choice = 'deny', message = 'run the tests first' }, response.result)
  H.eq('input', asked[2].kind)
  H.eq(approve.MESSAGE_PROMPT, asked[2].prompt)
end)

H.test('handler: a dismissed select (nil) is deny without a message prompt', function()
  local asked = stub_ui(nil)
  local response = serve_request(params())
  H.wait(function()
    return response.done
  end, 'the answer')
  H.eq({ choice = 'deny' }, response.result)
  H.eq(1, #asked)
end)

H.test('handler: a malformed question is denied without asking', function()
  local asked = stub_ui('Allow once')
  local response = serve_request({ command = 'x', segments = 'nope' })
  H.wait(function()
    return response.done
  end, 'the answer')
  H.eq({ choice = 'deny' }, response.result)
  H.eq(0, #asked)
end)

H.test('handler: no answer within timeoutMs is deny, and a late answer changes nothing', function()
  local late
  vim.ui.select = function(_, _, on_choice)
    late = on_choice
  end
  local response = serve_request(params({ timeoutMs = 50 }))
  H.wait(function()
    return response.done
  end, 'the timeout')
  H.eq({ choice = 'deny' }, response.result)
  H.eq(nil, float_lines(), 'float closed')
  late('Allow once')
  H.eq({ choice = 'deny' }, response.result)
end)

H.test('two questions are shown one after the other, each answered once', function()
  local picks = { 'Allow once', 'Deny' }
  local opened = 0
  vim.ui.select = function(_, _, on_choice)
    opened = opened + 1
    H.eq(1, #vim.tbl_filter(function(w)
      return api.nvim_win_get_config(w).relative ~= ''
    end, api.nvim_list_wins()), 'one float at a time')
    local pick = table.remove(picks, 1)
    vim.defer_fn(function()
      on_choice(pick)
    end, 20)
  end
  vim.ui.input = function(_, on_confirm)
    on_confirm('')
  end
  local first = serve_request(params({ id = 'ap-1' }))
  local second = serve_request(params({ id = 'ap-2' }))
  H.wait(function()
    return first.done and second.done
  end, 'both answers')
  H.eq({ choice = 'allow_once' }, first.result)
  H.eq({ choice = 'deny' }, second.result)
  H.eq(2, opened)
end)

H.test('$/cancelRequest from the server withdraws that client’s open questions as deny', function()
  vim.ui.select = function() end -- nobody answers
  local mine = serve_request(params({ id = 'ap-1' }), 7)
  local queued = serve_request(params({ id = 'ap-2' }), 7)
  local other = serve_request(params({ id = 'ap-3' }), 8)
  H.wait(function()
    return approve.active ~= nil and #approve.queue == 2
  end, 'questions open')
  approve.on_cancel(nil, { id = 3 }, { method = '$/cancelRequest', client_id = 7 })
  H.wait(function()
    return mine.done and queued.done
  end, 'both withdrawn')
  H.eq({ choice = 'deny' }, mine.result)
  H.eq({ choice = 'deny' }, queued.result)
  H.eq(false, other.done, "another client's question stays")
  approve.cancel_client(8)
  H.wait(function()
    return other.done
  end, 'cleanup')
end)

H.test('outside a coroutine the handler asks with a blocking inputlist (and input after Deny)', function()
  local shown
  local inputlist, input = vim.fn.inputlist, vim.fn.input
  vim.fn.inputlist = function(items)
    shown = items
    return 2
  end
  local ok, result = pcall(approve.handler, nil, params(), { client_id = 1 })
  vim.fn.inputlist = function()
    return 4
  end
  vim.fn.input = function()
    return ' not now '
  end
  local ok2, denied = pcall(approve.handler, nil, params(), { client_id = 1 })
  vim.fn.inputlist = function()
    return 0 -- <Esc>
  end
  local ok3, dismissed = pcall(approve.handler, nil, params(), { client_id = 1 })
  vim.fn.inputlist, vim.fn.input = inputlist, input
  H.truthy(ok and ok2 and ok3, tostring(result))
  H.eq({ choice = 'allow_session' }, result)
  H.eq({ choice = 'deny', message = 'not now' }, denied)
  H.eq({ choice = 'deny' }, dismissed)
  H.eq('2: Allow for this session', shown[#shown - 2])
  H.truthy(vim.list_contains(shown, '  • git commit -m wip'), 'the question is in the list')
end)

H.finish()
