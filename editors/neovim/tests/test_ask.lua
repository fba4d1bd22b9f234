-- :AgentAsk end to end: the real server's agent talks to `tether fake-api` (ANTHROPIC_BASE_URL,
-- started by tests/e2e/test_neovim.py), and the write_file it asks for shows up as a proposal.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api

local server = H.agent_or_skip()

local ws = H.git_workspace({ ['hello.py'] = { "print('hello')" } })

local seen = H.capture_notify()
require('tether').setup({ cmd = { server, 'serve' } })
vim.lsp.enable('tether')
vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/hello.py'))
local buf = api.nvim_get_current_buf()
H.wait(function()
  local c = vim.lsp.get_clients({ name = 'tether', bufnr = buf })[1]
  return c and c.initialized and api.nvim_buf_get_commands(buf, {}).AgentAsk ~= nil
end, 'the client')

H.test(':AgentAsk without a prompt says what to type', function()
  local ok = pcall(vim.cmd, 'AgentAsk')
  H.eq(false, ok, 'nargs=+ refuses an empty prompt')
end)

H.test(':AgentAsk runs a turn; the answer opens and the proposal is drawn', function()
  vim.cmd('AgentAsk change the greeting')
  H.wait(function()
    local b = vim.fn.bufnr('^tether://ask$')
    return b ~= -1 and #api.nvim_buf_get_lines(b, 0, -1, false) > 2
  end, 'the answer buffer')
  local text = table.concat(api.nvim_buf_get_lines(vim.fn.bufnr('^tether://ask$'), 0, -1, false), '\n')
  H.contains(text, '> change the greeting')
  H.contains(text, 'Proposed: the greeting now says hello, tether.')
  H.contains(text, '• write_file')
  H.truthy(text:find('%(proposal p%-%x+%)'), 'the proposal named in:\n' .. text)
  local ns = require('tether.preview').ns
  H.wait(function()
    for _, m in ipairs(api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
      if m[4].virt_lines and m[4].virt_lines[1][1][1] == "print('hello, tether')" then
        return true
      end
    end
  end, 'the proposed line drawn in hello.py')
  H.eq({ "print('hello')" }, api.nvim_buf_get_lines(buf, 0, -1, false), 'nothing applied')
  H.truthy(H.find_msg(seen, 'asking the agent'), 'progress message')
end)

H.test(':AgentAccept % applies the whole proposal', function()
  api.nvim_set_current_buf(buf)
  vim.cmd('AgentAccept %')
  H.wait(function()
    return api.nvim_buf_get_lines(buf, 0, 1, false)[1] == "print('hello, tether')"
  end, 'the buffer changed')
end)

H.finish()
