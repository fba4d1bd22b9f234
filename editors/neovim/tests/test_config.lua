-- Pure parts, no server: config validation, setup(), argument parsing and completion, the docs.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local config = require('tether.config')
local commands = require('tether.commands')

H.test('defaults are returned as fresh copies', function()
  local a = config.defaults()
  a.cmd[1] = 'changed'
  H.eq({ 'tether', 'serve' }, config.defaults().cmd)
end)

H.test('build() accepts valid options and keeps the rest at defaults', function()
  local cfg, errors, warnings = config.build({ permissions = 'read,write', log_entries = 5, sandbox = 'firejail' })
  H.eq({}, errors)
  H.eq({}, warnings)
  H.eq('read,write', cfg.permissions)
  H.eq(5, cfg.log_entries)
  H.eq('firejail', cfg.sandbox)
  H.eq(true, cfg.preview)
end)

-- Each bad option, and the field name and expectation the message must contain.
local bad = {
  { { permissions = 42 }, '`permissions` should be string, not number' },
  {
    { permissions = 'rw' },
    '`permissions` should be none, read, write, command, workspace, all, or a comma list like read,write, not "rw"',
  },
  { { permissions = 'all,read' }, '`permissions` should be' },
  { { cmd = 'tether serve' }, '`cmd` should be table, not string' },
  { { cmd = {} }, '`cmd` should be a non-empty list of strings' },
  { { cmd = { 'tether', 1 } }, '`cmd` should be a list of strings' },
  { { sandbox = 'docker' }, '`sandbox` should be one of auto, bubblewrap, firejail, landlock, none, not "docker"' },
  { { command_timeout = 0 }, '`command_timeout` should be a number of seconds between 1 and 600, not 0' },
  { { command_timeout = '30' }, '`command_timeout` should be number or nil, not string' },
  { { log_entries = 2.5 }, '`log_entries` should be a positive integer, not 2.5' },
  { { preview = 'yes' }, '`preview` should be boolean, not string' },
  { { sign_text = '' }, '`sign_text` should be one or two display cells' },
  { { log_level = 'loud' }, '`log_level` should be one of trace, debug, info, warn, error, off, not "loud"' },
}
for _, case in ipairs(bad) do
  H.test('build() rejects ' .. vim.inspect(case[1], { newline = ' ', indent = '' }), function()
    local cfg, errors = config.build(case[1])
    H.eq(1, #errors, 'one error')
    H.contains(errors[1], case[2])
    H.eq(config.defaults(), cfg, 'a rejected field keeps its default')
  end)
end

H.test('build() reports every bad field at once and warns about unknown ones', function()
  local _, errors, warnings = config.build({ permissions = 1, preview = 2, colour = 'red' })
  H.eq(2, #errors)
  H.contains(errors[1], '`permissions`')
  H.contains(errors[2], '`preview`')
  H.eq({ 'ignoring unknown configuration field `colour`' }, warnings)
end)

H.test('build() rejects a non-table', function()
  local _, errors = config.build('read')
  H.eq({ 'setup() expects a table, not string' }, errors)
end)

H.test('setup() raises one readable error naming the fields, and keeps the previous config', function()
  require('tether').setup({ log_entries = 7 })
  local ok, err = pcall(require('tether').setup, { log_entries = 'ten', permissions = 'root' })
  H.eq(false, ok)
  H.contains(err, 'tether: setup(): `log_entries` should be number, not string; `permissions` should be')
  H.eq(7, config.get().log_entries, 'previous config kept')
end)

H.test('setup() twice replaces the options and leaves one set of autocommands', function()
  require('tether').setup({ permissions = 'read', log_entries = 3 })
  require('tether').setup({ permissions = 'write' })
  H.eq('write', config.get().permissions)
  H.eq(20, config.get().log_entries, 'second call starts from the defaults')
  local attach = vim.api.nvim_get_autocmds({ group = 'tether', event = 'LspAttach' })
  H.eq(1, #attach)
  H.eq({ 'tether', 'serve' }, vim.lsp.config.tether.cmd)
  H.eq({ permissions = 'write', approvals = true, chat = true }, vim.lsp.config.tether.init_options)
  H.eq('function', type(vim.lsp.config.tether.root_dir), 'lsp/tether.lua is on the runtimepath')
  H.truthy(vim.lsp.config.tether.handlers['tether/event'], 'event handler registered')
  H.truthy(vim.lsp.config.tether.handlers['tether/approve'], 'approval handler registered')
end)

H.test('init_options maps to the camelCase keys of docs/lsp.md', function()
  local cfg = config.build({ permissions = 'all', sandbox = 'bubblewrap', command_timeout = 30, model = 'm' })
  H.eq(
    { permissions = 'all', approvals = true, chat = true, sandbox = 'bubblewrap', commandTimeout = 30, model = 'm' },
    config.init_options(cfg)
  )
  H.eq(false, config.init_options(config.build({ approvals = false })).approvals)
end)

local perms = {
  { 'none', 'none' },
  { 'READ', 'read' },
  { ' read , write ', 'read,write' },
  { 'read,read', 'read' },
  { 'command,read,write', 'all' },
  { 'write,read', 'read,write' },
  { 'workspace', 'workspace' },
  { 'Workspace,command,read', 'read,command,workspace' },
  { 'all,workspace', 'read,write,command,workspace' },
  { 'read,write,command,workspace', 'read,write,command,workspace' },
  { 'all', 'all' },
}
for _, case in ipairs(perms) do
  H.test('parse_permissions(' .. vim.inspect(case[1]) .. ')', function()
    H.eq({ case[2], nil }, { config.parse_permissions(case[1]) })
  end)
end

for _, input in ipairs({
  'bogus',
  '',
  'read,',
  'read;write',
  'none,read',
  'read,all',
  'write,exec',
  'none,workspace',
  'workspaces',
  'work space',
}) do
  H.test('parse_permissions rejects ' .. vim.inspect(input), function()
    local value, err = config.parse_permissions(input)
    H.eq(nil, value)
    H.truthy(err and #err > 10, 'a reason')
  end)
end

H.test(':AgentMode completion, including after a comma', function()
  H.eq({ 'none', 'read', 'write', 'command', 'workspace', 'all', 'read,write' }, commands.complete_mode(''))
  H.eq({ 'read' }, commands.complete_mode('r'))
  H.eq({ 'read,write', 'read,workspace' }, commands.complete_mode('read,w'))
  H.eq({ 'read,write', 'read,command', 'read,workspace' }, commands.complete_mode('read,'))
  H.eq({ 'read,command,workspace' }, commands.complete_mode('read,command,wo'))
  H.eq({ 'all,workspace' }, commands.complete_mode('all,'), 'all combines only with workspace')
  H.eq({ 'workspace' }, commands.complete_mode('wo'))
  H.eq({}, commands.complete_mode('read,n'), 'none does not combine')
end)

local rollback = {
  { '', { steps = 1 } },
  { '3', { steps = 3 } },
  { ' 2 ', { steps = 2 } },
  { 'c-20261122T101500-1a2b3c', { checkpoint = 'c-20261122T101500-1a2b3c' } },
  { '6ae9d7aeb273', { checkpoint = '6ae9d7aeb273' } },
  { '1234567', { checkpoint = '1234567' } },
}
for _, case in ipairs(rollback) do
  H.test('parse_rollback(' .. vim.inspect(case[1]) .. ')', function()
    H.eq(case[2], commands.parse_rollback(case[1]))
  end)
end
for _, input in ipairs({ 'abc', '0', '-1', '1.5', '2 3', 'c-', '99999', '6ae9d7', 'HEAD~1' }) do
  H.test('parse_rollback rejects ' .. vim.inspect(input), function()
    local args, err = commands.parse_rollback(input)
    H.eq(nil, args)
    H.contains(err, ':AgentRollback takes a number of steps')
    H.contains(err, "not '" .. input .. "'")
  end)
end

H.test('parse_log and parse_scope', function()
  H.eq({ n = 20 }, commands.parse_log('', 20))
  H.eq({ n = 4 }, commands.parse_log('4', 20))
  H.eq({ nil, ":AgentLog takes a positive number of entries (default 20), not 'x'" }, { commands.parse_log('x', 20) })
  H.eq({ nil, ":AgentLog takes a positive number of entries (default 20), not '0'" }, { commands.parse_log('0', 20) })
  H.eq(false, commands.parse_scope('AgentAccept', ''))
  H.eq(true, commands.parse_scope('AgentAccept', '%'))
  local whole, err = commands.parse_scope('AgentReject', '2')
  H.eq(nil, whole)
  H.contains(err, ':AgentReject takes no argument')
end)

H.test('commands exist without setup(), with completion, and fail clearly without a server', function()
  local cmds = vim.api.nvim_get_commands({})
  for name in pairs(commands.specs) do
    H.truthy(cmds[name], name .. ' defined by plugin/tether.lua')
  end
  H.eq('?', cmds.AgentRollback.nargs)
  H.eq(true, cmds.AgentRollback.bang)
  H.eq({ 'read,write' }, vim.fn.getcompletion('AgentMode read,wr', 'cmdline'))
  local seen = H.capture_notify()
  vim.cmd('AgentLog')
  H.contains(seen[#seen].msg, 'no tether language server is running')
  H.eq(vim.log.levels.ERROR, seen[#seen].level)
  vim.cmd('AgentRollback abc')
  H.contains(
    seen[#seen].msg,
    "tether: :AgentRollback takes a number of steps (a positive integer, default 1) or a checkpoint id (see :AgentCheckpoints), not 'abc'"
  )
  vim.cmd('AgentMode bogus')
  H.contains(seen[#seen].msg, "tether: :AgentMode: unknown permission 'bogus'")
  H.eq(vim.log.levels.ERROR, seen[#seen].level)
end)

H.test('plugin/tether.lua is guarded against a second load', function()
  H.eq(1, vim.g.loaded_tether)
  vim.api.nvim_del_user_command('AgentLog')
  vim.cmd('runtime plugin/tether.lua')
  H.eq(nil, vim.api.nvim_get_commands({}).AgentLog, 'not redefined')
  commands.define_global()
end)

H.test('describe_event()', function()
  local lsp = require('tether.lsp')
  H.eq(
    { 'proposed an edit with write_file (p-1a2b3c4d)', vim.log.levels.INFO },
    { lsp.describe_event({ tool = 'write_file', state = 'proposed', proposalId = 'p-1a2b3c4d' }) }
  )
  H.eq({ "denied bash_command: Command 'curl' is not in the allowed list", vim.log.levels.WARN }, {
    lsp.describe_event({
      tool = 'bash_command',
      state = 'denied',
      decision = { reason = "Command 'curl' is not in the allowed list" },
    }),
  })
  H.eq(
    { 'proposed an edit with edit_file (p-1)', vim.log.levels.INFO },
    { lsp.describe_event({ tool = 'edit_file', state = 'dry_run', proposalId = 'p-1' }) }
  )
  H.eq(
    { 'dry run of bash_command', vim.log.levels.INFO },
    { lsp.describe_event({ tool = 'bash_command', state = 'dry_run' }) }
  )
  H.eq({ 'failed read_file', vim.log.levels.ERROR }, { lsp.describe_event({ tool = 'read_file', state = 'failed' }) })
  H.eq({ 'approval: allowed', vim.log.levels.INFO }, { lsp.describe_event({ tool = 'approval', state = 'executed' }) })
  H.eq({ 'approval: denied (no answer within 300 s: treated as deny)', vim.log.levels.WARN }, {
    lsp.describe_event({
      tool = 'approval',
      state = 'denied',
      decision = { reason = 'no answer within 300 s: treated as deny' },
    }),
  })
end)

-- Documentation drift: the defaults block in doc/tether.txt is the config's defaults, and every
-- field has a tag and a description there.
local function read_doc()
  local path = vim.g.tether_test_root .. '/doc/tether.txt'
  return table.concat(vim.fn.readfile(path), '\n')
end

H.test('doc/tether.txt lists exactly the config defaults', function()
  local doc = read_doc()
  local block = doc:match('The defaults %b()[^\n]*>lua\n(.-)\n<')
  H.truthy(block, 'defaults block found')
  local chunk = assert(loadstring('return ' .. block))
  local documented = chunk()
  H.eq(config.defaults(), documented, 'doc/tether.txt defaults == config.lua defaults')
  -- nil-valued defaults do not survive a Lua table; check their lines are there too.
  for name, field in pairs(config.schema) do
    H.truthy(
      block:find('\n%s*' .. name .. ' = ') or block:find('^%s*' .. name .. ' = '),
      name .. ' listed in the defaults block'
    )
    if field.default == nil then
      H.truthy(block:find(name .. ' = nil,', 1, true), name .. ' documented as nil')
    end
  end
end)

H.test('every config field has a help tag, and the help has no stale field', function()
  local doc = read_doc()
  for name in pairs(config.schema) do
    H.truthy(doc:find('*tether-config-' .. name .. '*', 1, true), 'tag for ' .. name)
  end
  for tagged in doc:gmatch('%*tether%-config%-([%w_]+)%*') do
    H.truthy(config.schema[tagged], 'documented field exists in config.lua: ' .. tagged)
  end
end)

H.test("docs/neovim.md's defaults table matches config.lua too", function()
  local path = vim.g.tether_test_root .. '/../../docs/neovim.md'
  H.truthy(vim.uv.fs_stat(path), 'docs/neovim.md exists next to the plugin')
  local rows = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    -- | `field` | `default` (note) | meaning |
    local name, default = line:match('^| `([%w_]+)` | `([^`]*)`')
    if name then
      rows[name] = default
    end
  end
  for name, field in pairs(config.schema) do
    H.truthy(rows[name] ~= nil, name .. ' has a row')
    H.eq(field.default, assert(loadstring('return ' .. rows[name]))(), 'default of ' .. name)
  end
  for name in pairs(rows) do
    H.truthy(config.schema[name] ~= nil, 'documented field exists: ' .. name)
  end
end)

H.test('every command is documented with a tag', function()
  local doc = read_doc()
  for name in pairs(commands.specs) do
    H.truthy(doc:find('*:' .. name .. '*', 1, true), 'tag for :' .. name)
  end
end)

H.test(':helptags builds and :help tether opens', function()
  local tmp = vim.fn.tempname()
  vim.fn.mkdir(tmp .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(vim.g.tether_test_root .. '/doc/tether.txt'), tmp .. '/doc/tether.txt')
  vim.cmd('helptags ' .. tmp .. '/doc')
  vim.opt.runtimepath:append(tmp)
  vim.cmd('help :AgentRollback')
  H.eq('tether.txt', vim.fn.expand('%:t'))
  vim.cmd('help tether-config-sign_text')
  H.eq('tether.txt', vim.fn.expand('%:t'))
  vim.cmd('helpclose')
end)

H.finish()
