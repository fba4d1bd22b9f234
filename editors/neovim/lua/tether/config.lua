--- Configuration: the schema as data, validation that names the offending field.
---
--- The schema is the single source of the defaults. `doc/tether.txt` repeats them for users and a
--- test (tests/test_config.lua) compares the two, so the help cannot drift from the code.
local M = {}

local PERMISSION_WORDS = { 'none', 'read', 'write', 'command', 'workspace', 'all' }
M.PERMISSION_WORDS = PERMISSION_WORDS

--- The server's fixed order (docs/lsp.md, "Permissions, canonical spelling"); `all` is the first three.
local CANONICAL_ORDER = { 'read', 'write', 'command', 'workspace' }
local ALL = { 'read', 'write', 'command' }

local EXPECTED = 'none, read, write, command, workspace, all, or a comma list like read,write'
M.EXPECTED_PERMISSIONS = EXPECTED

local LEVELS = { 'trace', 'debug', 'info', 'warn', 'error', 'off' }
local SANDBOXES = { 'auto', 'bubblewrap', 'firejail', 'landlock', 'none' }

--- Split and check a permission spelling ("read,write", "all", "none", "read,command,workspace").
--- Why here: both `setup({permissions=...})` and `:AgentMode` accept it, and both must reject
--- a typo before anything reaches the server. The answer is the server's canonical spelling
--- (`none`, `all`, or the words in the order read,write,command,workspace), so what the statusline
--- shows and what was typed compare equal.
---@param value string
---@return string? canonical, string? err
function M.parse_permissions(value)
  if type(value) ~= 'string' or vim.trim(value) == '' then
    return nil, 'expected one of ' .. EXPECTED
  end
  local seen, count = {}, 0
  for part in vim.gsplit(value, ',', { plain = true }) do
    local word = vim.trim(part):lower()
    if not vim.list_contains(PERMISSION_WORDS, word) then
      return nil, string.format("unknown permission '%s' (expected %s)", vim.trim(part), EXPECTED)
    end
    if not seen[word] then
      seen[word] = true
      count = count + 1
    end
  end
  -- `none` means nothing, so it cannot sit next to anything; `all` is read,write,command and
  -- combines only with the word it does not include (`all,workspace`).
  if count > 1 and (seen.none or (seen.all and (seen.read or seen.write or seen.command))) then
    return nil, "'none' cannot be combined with other permissions, nor 'all' with read, write or command"
  end
  if seen.none then
    return 'none', nil
  end
  if seen.all then
    for _, word in ipairs(ALL) do
      seen[word] = true
    end
  end
  local out = {}
  for _, word in ipairs(CANONICAL_ORDER) do
    if seen[word] then
      table.insert(out, word)
    end
  end
  if not seen.workspace and seen.read and seen.write and seen.command then
    return 'all', nil
  end
  return table.concat(out, ','), nil
end

--- Whether a permission spelling (as the server answers it) includes `workspace` mode: any program
--- may run in the sandbox with the workspace writable. Faces must make that visible.
---@param perms string?
---@return boolean
function M.has_workspace(perms)
  if type(perms) ~= 'string' then
    return false
  end
  for part in vim.gsplit(perms, ',', { plain = true }) do
    if vim.trim(part):lower() == 'workspace' then
      return true
    end
  end
  return false
end

---@class tether.SchemaField
---@field type string|string[]   accepted Lua types
---@field default any
---@field check? fun(v: any): string?   extra check; returns a reason when invalid
---@field description string

---@type table<string, tether.SchemaField>
M.schema = {
  cmd = {
    type = 'table',
    default = { 'tether', 'serve' },
    check = function(v)
      if #v == 0 then
        return 'a non-empty list of strings'
      end
      for _, part in ipairs(v) do
        if type(part) ~= 'string' then
          return 'a list of strings'
        end
      end
    end,
    description = 'Command that starts the language server.',
  },
  permissions = {
    type = 'string',
    default = 'none',
    check = function(v)
      local _, err = M.parse_permissions(v)
      return err and EXPECTED or nil
    end,
    description = 'Permissions the session starts with (`:AgentMode` changes them).',
  },
  sandbox = {
    type = { 'string', 'nil' },
    default = nil,
    check = function(v)
      if not vim.list_contains(SANDBOXES, v) then
        return 'one of ' .. table.concat(SANDBOXES, ', ')
      end
    end,
    description = 'Sandbox backend; nil keeps the server default (`auto`).',
  },
  command_timeout = {
    type = { 'number', 'nil' },
    default = nil,
    check = function(v)
      if v < 1 or v > 600 then
        return 'a number of seconds between 1 and 600'
      end
    end,
    description = 'Seconds before a command is killed; nil keeps the server default.',
  },
  model = {
    type = { 'string', 'nil' },
    default = nil,
    description = 'Claude model id for `:AgentAsk`; nil keeps the server default.',
  },
  log_entries = {
    type = 'number',
    default = 20,
    check = function(v)
      if v < 1 or v ~= math.floor(v) then
        return 'a positive integer'
      end
    end,
    description = 'Entries `:AgentLog` shows without a count.',
  },
  preview = {
    type = 'boolean',
    default = true,
    description = 'Draw pending proposals inline with extmarks.',
  },
  sign_text = {
    type = 'string',
    default = '▎',
    check = function(v)
      if vim.fn.strdisplaywidth(v) < 1 or vim.fn.strdisplaywidth(v) > 2 then
        return 'one or two display cells'
      end
    end,
    description = 'Sign drawn next to a pending hunk.',
  },
  notify_events = {
    type = 'boolean',
    default = true,
    description = 'Announce tool calls and proposal changes with `vim.notify`.',
  },
  notify_progress = {
    type = 'boolean',
    default = true,
    description = 'Announce server progress (agent turns, commands) with `vim.notify`.',
  },
  border = {
    type = 'string',
    default = 'rounded',
    description = 'Border of floating windows (see `:h nvim_open_win()`).',
  },
  approvals = {
    type = 'boolean',
    default = true,
    description = 'Answer approval questions in Neovim (`tether/approve`); false leaves them to '
      .. "Neovim's `window/showMessageRequest`.",
  },
  chat = {
    type = 'boolean',
    default = true,
    description = 'Receive agent turns as they run (`tether/turn`), for `:AgentChat`.',
  },
  log_level = {
    type = 'string',
    default = 'warn',
    check = function(v)
      if not vim.list_contains(LEVELS, v) then
        return 'one of ' .. table.concat(LEVELS, ', ')
      end
    end,
    description = 'Least severe level written to the log file.',
  },
}

--- A fresh copy of the defaults (callers may mutate it).
---@return table
function M.defaults()
  local out = {}
  for name, field in pairs(M.schema) do
    out[name] = vim.deepcopy(field.default)
  end
  return out
end

local function type_list(t)
  return type(t) == 'table' and t or { t }
end

--- Validate user options against the schema.
--- Why errors are collected rather than raised one by one: a user fixing their config wants every
--- mistake in one message. Unknown fields are only warned about (a newer config on an older plugin).
---@param opts table?
---@return table config, string[] errors, string[] warnings
function M.build(opts)
  local cfg, errors, warnings = M.defaults(), {}, {}
  if opts == nil then
    return cfg, errors, warnings
  end
  if type(opts) ~= 'table' then
    table.insert(errors, string.format('setup() expects a table, not %s', type(opts)))
    return cfg, errors, warnings
  end
  local names = vim.tbl_keys(opts)
  table.sort(names, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, name in ipairs(names) do
    local value = opts[name]
    local field = M.schema[name]
    if field == nil then
      table.insert(warnings, string.format('ignoring unknown configuration field `%s`', tostring(name)))
    else
      local types = type_list(field.type)
      if not vim.list_contains(types, type(value)) then
        table.insert(errors, string.format('`%s` should be %s, not %s', name, table.concat(types, ' or '), type(value)))
      else
        local reason = value ~= nil and field.check and field.check(value) or nil
        if reason then
          table.insert(errors, string.format('`%s` should be %s, not %s', name, reason, vim.inspect(value)))
        else
          cfg[name] = vim.deepcopy(value)
        end
      end
    end
  end
  return cfg, errors, warnings
end

---@type table
M.current = M.defaults()

--- The active configuration (defaults until `setup()` is called).
function M.get()
  return M.current
end

--- `initializationOptions` for the server (docs/lsp.md), from a config.
---@param cfg table
---@return table
function M.init_options(cfg)
  local out = { permissions = cfg.permissions, approvals = cfg.approvals, chat = cfg.chat }
  if cfg.sandbox ~= nil then
    out.sandbox = cfg.sandbox
  end
  if cfg.command_timeout ~= nil then
    out.commandTimeout = cfg.command_timeout
  end
  if cfg.model ~= nil then
    out.model = cfg.model
  end
  return out
end

return M
