-- :AgentExplain without a server: argument parsing, rendering a `tether.explain` result (fixture in
-- the shape of docs/policy.md), the float, and the command's errors.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local explain = require('tether.explain')
local api = vim.api

H.test('parse: the command, with --mode M or --mode=M in front', function()
  H.eq({ command = 'git commit -m x' }, explain.parse('  git commit -m x '))
  H.eq({ command = 'make test', mode = 'workspace' }, explain.parse('--mode workspace make test'))
  H.eq({ command = 'ls', mode = 'read' }, explain.parse('--mode=read ls'))
  H.eq({ command = 'echo --mode read' }, explain.parse('echo --mode read'), 'only in front')
end)

H.test('parse: a bad mode or no command is refused with what to type', function()
  local args, err = explain.parse('--mode root ls')
  H.eq(nil, args)
  H.eq(":AgentExplain: unknown mode 'root' (expected read, command, workspace)", err)
  args, err = explain.parse('--mode workspace')
  H.eq(nil, args)
  H.contains(err, ':AgentExplain needs a command')
  H.eq(nil, (explain.parse('   ')))
  H.eq(nil, (explain.parse('--mode= ls')), 'an empty mode is not a mode')
end)

local FIXTURE = {
  verdict = 'ask',
  rule = 'ask.git_state',
  reason = "changes your repository's history beyond the work tree",
  mode = 'command',
  segments = {
    { argv = { 'make', 'lint' }, verdict = 'allow', rule = 'allow.build', source = 'built-in', layer = 'builtin' },
    {
      argv = { 'git', 'commit', '-m', 'wip now' },
      verdict = 'ask',
      rule = 'ask.git_state',
      source = '/home/u/.config/tether/config.toml:12',
      reason = "changes your repository's history beyond the work tree",
    },
  },
  sandbox = { backend = 'bubblewrap', network = 'none', writable = { '/ws' }, readOnly = { '/ws/.git' } },
  hooks = { { event = 'before', name = 'ruff-check' }, 'notify.sh' },
  checkpoint = true,
}

H.test('format: verdict highlighted, per-segment lines, sandbox, hooks, checkpoint', function()
  local lines, hls = explain.format('make lint && git commit -m "wip now"', FIXTURE)
  H.eq({
    '$ make lint && git commit -m "wip now"',
    "Verdict: ASK  [ask.git_state]  changes your repository's history beyond the work tree",
    'Mode: command',
    '',
    'Segments (2):',
    '  • make lint — allow  [allow.build, built-in, builtin]',
    "  • git commit -m 'wip now' — ask  [ask.git_state, /home/u/.config/tether/config.toml:12]",
    "      changes your repository's history beyond the work tree",
    '',
    'Sandbox: bubblewrap, network none',
    '  writable: /ws',
    '  readOnly: /ws/.git',
    'Hooks:',
    '  • before: ruff-check',
    '  • notify.sh',
    'Checkpoint: taken before it runs (:AgentRollback 1 undoes it)',
    '',
    'q or <Esc> closes',
  }, lines)
  H.eq({ 1, 0, #'Verdict: ASK', 'TetherDenied' }, hls[2], 'ask is a warning')
  local seg = '  • make lint — '
  H.eq({ 5, #seg, #seg + #'allow', 'TetherOk' }, hls[4], 'the segment verdict')
end)

H.test('format: deny and allow colours, missing keys, unknown shapes kept as JSON', function()
  local _, hls = explain.format('rm -rf /', { verdict = 'deny', rule = 'path.outside', reason = 'outside' })
  H.eq('TetherError', hls[2][4])
  local lines
  lines, hls = explain.format('ls', {
    verdict = 'allow',
    segments = { { command = 'ls', allowed = true }, 7 },
    sandbox = vim.NIL,
    hooks = {},
    checkpoint = false,
  })
  H.eq('TetherOk', hls[2][4])
  H.eq('Verdict: ALLOW', lines[2])
  H.eq('  • ls — allow', lines[5])
  H.eq('  • 7', lines[6])
  H.truthy(vim.list_contains(lines, 'Sandbox: none (nothing would run)'))
  H.truthy(vim.list_contains(lines, 'Hooks: none'))
  H.truthy(vim.list_contains(lines, 'Checkpoint: none'))
  lines = explain.format('x', { verdict = 'maybe' })
  H.eq('Verdict: MAYBE', lines[2])
  H.truthy(vim.list_contains(lines, '  (none listed)'))
end)

H.test('the float opens focused with the rendering, and q closes it', function()
  local lines, hls = explain.format('git commit -m x', FIXTURE)
  local before = api.nvim_get_current_win()
  local win, bufnr = require('tether.ui').info_float(lines, hls, ' tether explain ')
  H.eq(win, api.nvim_get_current_win())
  H.eq(lines, api.nvim_buf_get_lines(bufnr, 0, -1, false))
  H.eq(false, vim.bo[bufnr].modifiable)
  vim.api.nvim_feedkeys('q', 'x', false)
  H.eq(false, api.nvim_win_is_valid(win))
  H.eq(before, api.nvim_get_current_win())
end)

H.test(':AgentExplain exists, completes --mode and the modes, and says what is wrong', function()
  local seen = H.capture_notify()
  H.truthy(api.nvim_get_commands({}).AgentExplain)
  H.eq({ '--mode' }, vim.fn.getcompletion('AgentExplain --m', 'cmdline'))
  H.eq({ 'workspace' }, vim.fn.getcompletion('AgentExplain --mode w', 'cmdline'))
  vim.cmd('AgentExplain --mode root ls')
  H.eq(":AgentExplain: unknown mode 'root' (expected read, command, workspace)", seen[#seen].msg:gsub('^tether: ', ''))
  H.eq(vim.log.levels.ERROR, seen[#seen].level)
  vim.cmd('AgentExplain git status')
  H.contains(seen[#seen].msg, 'no tether language server is running')
end)

H.finish()
