--- The plugin's own log file and its user messages.
---
--- Why a file: a failed server request is often noticed minutes later; `:checkhealth tether`
--- prints the path so the details are there to read. Messages to the user go through `notify`,
--- scheduled when raised in a fast event (libuv callbacks), where the API is locked.
local M = {}

local LEVELS = { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 }

function M.path()
  return vim.fs.joinpath(vim.fn.stdpath('log'), 'tether.log')
end

local function threshold()
  local ok, config = pcall(require, 'tether.config')
  local name = ok and config.get().log_level or 'warn'
  return LEVELS[name] or LEVELS.warn
end

--- Append one line to the log file if `level` is at or above the configured level.
---@param level 'trace'|'debug'|'info'|'warn'|'error'
---@param fmt string
function M.write(level, fmt, ...)
  if (LEVELS[level] or 0) < threshold() then
    return
  end
  local ok, text = pcall(string.format, fmt, ...)
  if not ok then
    text = fmt
  end
  local dir = vim.fn.stdpath('log')
  vim.fn.mkdir(dir, 'p')
  local file = io.open(M.path(), 'a')
  if file then
    file:write(string.format('%s [%s] %s\n', os.date('%Y-%m-%dT%H:%M:%S'), level:upper(), text))
    file:close()
  end
end

--- Tell the user, and keep warnings and errors in the log file too.
---@param msg string
---@param level? integer vim.log.levels.*
function M.notify(msg, level)
  level = level or vim.log.levels.INFO
  if level >= vim.log.levels.WARN then
    M.write(level >= vim.log.levels.ERROR and 'error' or 'warn', '%s', msg)
  end
  local function show()
    vim.notify('tether: ' .. msg, level, { title = 'tether' })
  end
  if vim.in_fast_event() then
    vim.schedule(show)
  else
    show()
  end
end

function M.error(msg)
  M.notify(msg, vim.log.levels.ERROR)
end

function M.warn(msg)
  M.notify(msg, vim.log.levels.WARN)
end

function M.info(msg)
  M.notify(msg, vim.log.levels.INFO)
end

return M
