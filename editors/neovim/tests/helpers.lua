--- A very small test harness for headless Neovim: `H.test(name, fn)`, `H.eq`, `H.finish()`.
--- Why not plenary/mini.test: nothing is downloaded at test time, and this is enough.
local H = {}

local failed, passed = {}, 0

local function out(s)
  io.stdout:write(s .. '\n')
end

function H.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    out('ok   ' .. name)
  else
    table.insert(failed, name)
    out('FAIL ' .. name .. '\n' .. tostring(err))
  end
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      string.format(
        '%s\nexpected: %s\n  actual: %s',
        what or 'values differ',
        vim.inspect(expected),
        vim.inspect(actual)
      ),
      2
    )
  end
end

function H.truthy(v, what)
  if not v then
    error(what or 'expected a true value', 2)
  end
  return v
end

function H.contains(haystack, needle, what)
  if type(haystack) ~= 'string' or not haystack:find(needle, 1, true) then
    error(
      string.format('%s\nexpected to find %s in %s', what or 'missing text', vim.inspect(needle), vim.inspect(haystack)),
      2
    )
  end
end

--- Wait for `pred()`; this is a deadline for an asynchronous answer, not a speed assertion.
function H.wait(pred, what, ms)
  local ok = vim.wait(ms or 30000, pred, 20)
  if not ok then
    error('timed out waiting for ' .. (what or 'condition'), 2)
  end
end

--- Replace vim.notify; returns the list the messages go to ({msg, level}).
function H.capture_notify()
  local seen = {}
  vim.notify = function(msg, level)
    table.insert(seen, { msg = msg, level = level or vim.log.levels.INFO })
  end
  return seen
end

--- The last message matching `pattern` (plain text).
function H.find_msg(seen, text)
  for i = #seen, 1, -1 do
    if seen[i].msg:find(text, 1, true) then
      return seen[i]
    end
  end
end

--- The `tether` CLI to test against; exits 77 (skip, with the reason) when there is none.
function H.tether_or_skip()
  local server = vim.env.TETHER_BIN or vim.fn.exepath('tether')
  if server == '' or vim.fn.executable(server) == 0 then
    io.stdout:write('SKIP: `tether` not found (set TETHER_BIN)\n')
    os.exit(77)
  end
  return server
end

--- The `tether` CLI and the offline Messages API the agent tests need; exits 77 (skip, with the
--- reason) when either is missing (tests/e2e/test_neovim.py starts `tether fake-api`).
function H.agent_or_skip()
  local server = H.tether_or_skip()
  if not vim.env.ANTHROPIC_BASE_URL then
    io.stdout:write('SKIP: needs ANTHROPIC_BASE_URL from `tether fake-api` (tests/e2e/test_neovim.py starts it)\n')
    os.exit(77)
  end
  return server
end

--- Run git in `cwd` with a test identity; its stdout (an error with stderr when it fails).
function H.git(args, cwd)
  local cmd = vim.list_extend({ 'git', '-c', 'user.email=t@example.com', '-c', 'user.name=T' }, args)
  local obj = vim.system(cmd, { cwd = cwd, text = true }):wait()
  assert(obj.code == 0, table.concat(args, ' ') .. ': ' .. (obj.stderr or ''))
  return obj.stdout
end

--- A fresh git workspace holding `files` (name → lines), committed, with an identity for the
--- commits the server makes. Returns its real path.
function H.git_workspace(files)
  local ws = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(ws, 'p')
  for name, lines in pairs(files) do
    vim.fn.writefile(lines, ws .. '/' .. name)
  end
  H.git({ 'init', '-q' }, ws)
  H.git({ 'add', '.' }, ws)
  H.git({ 'commit', '-q', '-m', 'init' }, ws)
  H.git({ 'config', 'user.email', 't@example.com' }, ws)
  H.git({ 'config', 'user.name', 'T' }, ws)
  return ws
end

function H.finish()
  out(string.format('%d passed, %d failed', passed, #failed))
  io.stdout:flush()
  os.exit(#failed == 0 and 0 or 1)
end

return H
