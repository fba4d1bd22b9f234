--- `:checkhealth tether`: what a user needs to know when something does not work.
--- Never prints the API key, only whether one is present.
local M = {}

local health = vim.health

local function run(cmd)
  local ok, obj = pcall(function()
    return vim.system(cmd, { text = true }):wait(15000)
  end)
  if not ok then
    return nil, tostring(obj)
  end
  if obj.code ~= 0 then
    return nil, vim.trim((obj.stderr ~= '' and obj.stderr) or obj.stdout or ('exit ' .. obj.code))
  end
  return vim.trim(obj.stdout), nil
end

--- The `workspace` mode line: a warning while it is on (any program may run in the sandbox with
--- the workspace writable), so a user checking their setup sees it.
---@param status table? the server's `tether.status` result, nil without a client
---@param configured string the `permissions` option
function M.report_mode(status, configured)
  local has_workspace = require('tether.config').has_workspace
  if status and status.readOnly == true then
    health.info('read-only workspace (untrusted): no permissions; :AgentMode is refused')
  elseif status and has_workspace(status.permissions) then
    health.warn(
      string.format(
        '⚠ workspace mode is on (permissions %s): any program may run in the sandbox with the workspace '
          .. 'writable, no network, protected paths read-only, after a checkpoint',
        tostring(status.permissions)
      ),
      { ':AgentMode read,command returns to the allowlist (:h tether-workspace-mode)' }
    )
  elseif not status and has_workspace(configured) then
    health.info(
      string.format(
        'configured permissions %s include workspace mode: any program may run in the sandbox with the '
          .. 'workspace writable once a client starts',
        configured
      )
    )
  end
end

function M.check()
  local config = require('tether.config').get()
  health.start('tether')
  local v = vim.version()
  local vtext = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. vtext)
  else
    health.error('Neovim ' .. vtext .. ': 0.10 or later is required')
  end

  local exe = config.cmd[1]
  local path = vim.fn.exepath(exe)
  local version
  if path == '' then
    health.error(
      string.format('server `%s` not found on PATH', exe),
      { 'pip install -e . in the tether checkout, or setup({ cmd = { "/path/to/tether", "serve" } })' }
    )
  else
    local out, err = run({ path, '--version' })
    if out then
      version = out
      health.ok(string.format('server: %s (%s)', out, path))
    else
      health.error(string.format('server `%s --version` failed: %s', path, err))
    end
  end

  local clients = vim.lsp.get_clients({ name = require('tether.lsp').NAME })
  local status
  if #clients > 0 then
    local res, err = require('tether.lsp').exec_sync(clients[1], 'tether.status', {}, 3000)
    if res then
      status = res
      health.ok(
        string.format(
          'client attached (id %d), workspace %s, permissions %s',
          clients[1].id,
          tostring(res.workspace),
          tostring(res.permissions)
        )
      )
    else
      health.warn('client attached but tether.status failed: ' .. tostring(err))
    end
  else
    health.info("no tether client running (vim.lsp.enable('tether') and open a file in a git workspace)")
  end
  M.report_mode(status, config.permissions)

  if status then
    local sandbox = tostring(status.sandbox)
    if sandbox:match('^unavailable') or sandbox == 'none' then
      health.warn('sandbox: ' .. sandbox, { 'run `tether doctor` in a terminal for details' })
    else
      health.ok('sandbox: ' .. sandbox)
    end
  elseif version then
    local out, err = run({ path, 'doctor', '--json' })
    local ok, report = pcall(vim.json.decode, out or '')
    if out and ok and type(report) == 'table' and report.auto and report.auto ~= vim.NIL then
      health.ok(string.format('sandbox: %s (auto; configured %s)', tostring(report.auto), tostring(report.configured)))
    else
      health.warn('sandbox: no working backend found: ' .. tostring(err or out), { 'run `tether doctor` for details' })
    end
  end

  local git = vim.fn.exepath('git')
  if git == '' then
    health.error('git not found: checkpoints and rollback need it')
  else
    local out = run({ git, '--version' })
    health.ok((out or 'git') .. ' (' .. git .. ')')
  end

  local key_present
  if status and status.apiKeyPresent ~= nil then
    key_present = status.apiKeyPresent == true
  else
    key_present = (vim.env.ANTHROPIC_API_KEY or '') ~= ''
  end
  if key_present then
    health.ok('Anthropic API key: present')
  else
    health.info('Anthropic API key: not set (:AgentAsk needs ANTHROPIC_API_KEY; everything else works without it)')
  end

  health.info('log file: ' .. require('tether.log').path())
end

return M
