-- `workspace` mode made visible, no server: the statusline segments and string, :checkhealth's line,
-- and what :AgentMode reports. (Parsing and completion of the word are in test_config.lua.)
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local config = require('tether.config')
local status = require('tether.status')

H.test('has_workspace finds the word, and only the word', function()
  H.eq(true, config.has_workspace('workspace'))
  H.eq(true, config.has_workspace('read,command,workspace'))
  H.eq(false, config.has_workspace('read,write,command'))
  H.eq(false, config.has_workspace('all'), 'all is read,write,command')
  H.eq(false, config.has_workspace('workspaces'))
  H.eq(false, config.has_workspace(nil))
end)

H.test('statusline segments: the permissions, and ⚠ workspace in its own warning group', function()
  H.eq({}, status.segments(nil), 'no client: nothing')
  H.eq({ { 'tether: read,write', 'TetherStatus' } }, status.segments({ permissions = 'read,write' }))
  H.eq({ { 'tether: none', 'TetherStatus' } }, status.segments({ permissions = 'none' }))
  H.eq(
    { { 'tether: read,command', 'TetherStatus' }, { ' ⚠ workspace', 'TetherWorkspace' } },
    status.segments({ permissions = 'read,command,workspace' })
  )
  H.eq(
    { { 'tether:', 'TetherStatus' }, { ' ⚠ workspace', 'TetherWorkspace' } },
    status.segments({ permissions = 'workspace' })
  )
  H.eq({ { 'tether: read-only', 'TetherStatus' } }, status.segments({ permissions = 'none', readOnly = true }))
end)

H.test('render: highlight codes, % escaped, reset at the end', function()
  H.eq('', status.render({}))
  H.eq(
    '%#TetherStatus#tether: read%#TetherWorkspace# ⚠ workspace%*',
    status.render({ { 'tether: read', 'TetherStatus' }, { ' ⚠ workspace', 'TetherWorkspace' } })
  )
  H.eq('%#X#100%% sure%*', status.render({ { '100% sure', 'X' } }))
end)

H.test('the highlight groups exist (a colorscheme may override them)', function()
  H.eq('WarningMsg', vim.api.nvim_get_hl(0, { name = 'TetherWorkspace' }).link)
  H.eq('StatusLine', vim.api.nvim_get_hl(0, { name = 'TetherStatus' }).link)
end)

H.test('statusline() without a client is empty, and evaluates in a real statusline', function()
  H.eq('', require('tether').statusline())
  H.eq('', require('tether').statusline({ plain = true }))
  vim.o.statusline = "%{%v:lua.require'tether'.statusline()%}"
  vim.cmd.redrawstatus()
  H.eq('', vim.api.nvim_eval_statusline(vim.o.statusline, {}).str)
end)

H.test('status.set keeps readOnly across setPermissions answers and ignores malformed ones', function()
  status.set(9001, { permissions = 'read', readOnly = false })
  status.set(9001, { permissions = 'read,command,workspace' })
  H.eq({ permissions = 'read,command,workspace', readOnly = false }, status.by_client[9001])
  status.set(9001, { permissions = 7 })
  H.eq('read,command,workspace', status.by_client[9001].permissions, 'a bad answer changes nothing')
  status.set(9002, { permissions = 'none', readOnly = true })
  status.set(9002, { permissions = 'none' })
  H.eq(true, status.by_client[9002].readOnly)
  local hl = vim.api.nvim_eval_statusline(status.render(status.segments(status.by_client[9001])), { highlights = true })
  H.eq('tether: read,command ⚠ workspace', hl.str)
  local groups = vim.tbl_map(function(h)
    return h.group
  end, hl.highlights)
  H.eq({ 'TetherStatus', 'TetherWorkspace' }, { groups[1], groups[2] })
  H.eq(#'tether: read,command', hl.highlights[2].start, 'the warning starts after the permissions')
end)

-- :checkhealth's mode line, with vim.health's reporters recorded.
local function health_lines(server_status, configured)
  local seen = {}
  local saved = {}
  for _, kind in ipairs({ 'ok', 'info', 'warn', 'error' }) do
    saved[kind] = vim.health[kind]
    vim.health[kind] = function(msg, advice)
      table.insert(seen, { kind, msg, advice })
    end
  end
  local ok, err = pcall(require('tether.health').report_mode, server_status, configured)
  for kind, fn in pairs(saved) do
    vim.health[kind] = fn
  end
  assert(ok, err)
  return seen
end

H.test(':checkhealth warns while workspace mode is on and says how to leave it', function()
  local seen = health_lines({ permissions = 'read,command,workspace', readOnly = false }, 'none')
  H.eq(1, #seen)
  H.eq('warn', seen[1][1])
  H.contains(seen[1][2], '⚠ workspace mode is on (permissions read,command,workspace)')
  H.contains(seen[1][3][1], ':AgentMode read,command')
  H.eq({}, health_lines({ permissions = 'read,command', readOnly = false }, 'workspace'), 'the server decides')
  local configured = health_lines(nil, 'read,command,workspace')
  H.eq('info', configured[1][1])
  H.contains(configured[1][2], 'configured permissions read,command,workspace include workspace mode')
  H.eq({}, health_lines(nil, 'read'))
  H.eq('info', health_lines({ permissions = 'none', readOnly = true }, 'workspace')[1][1])
end)

H.finish()
