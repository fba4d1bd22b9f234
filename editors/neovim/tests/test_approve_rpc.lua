-- Approvals through Neovim's real LSP client: a stdio peer (tests/peers/approve_peer.py) sends the
-- server's two questions exactly as docs/lsp.md specifies; the plugin answers `tether/approve`
-- (declared through initializationOptions.approvals), and Neovim's own handler answers
-- `window/showMessageRequest` (the fallback for clients that do not declare approvals). The person is
-- played by stubbing vim.ui.select / vim.ui.input here, in the test only.
local H = dofile(vim.g.tether_test_root .. '/tests/helpers.lua')
local api = vim.api

local python = vim.fn.exepath('python3')
if python == '' then
  io.stdout:write('SKIP: python3 not found\n')
  os.exit(77)
end
H.capture_notify()

local ws = vim.fn.resolve(vim.fn.tempname())
vim.fn.mkdir(ws, 'p')
vim.fn.writefile({ 'x = 1' }, ws .. '/a.py')
assert(vim.system({ 'git', 'init', '-q' }, { cwd = ws }):wait().code == 0)
local out = ws .. '/../answers.json'

local asked = {}
local float_seen
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, { kind = opts.kind, items = vim.deepcopy(items) })
  if opts.kind == 'tether_approval' then
    for _, w in ipairs(api.nvim_list_wins()) do
      if api.nvim_win_get_config(w).relative ~= '' then
        float_seen = api.nvim_buf_get_lines(api.nvim_win_get_buf(w), 0, -1, false)
      end
    end
    vim.defer_fn(function()
      on_choice('Allow once', 1)
    end, 20)
  else
    vim.defer_fn(function()
      on_choice(items[4], 4) -- Deny, as an action item
    end, 20)
  end
end

require('tether').setup({
  cmd = { python, vim.g.tether_test_root .. '/tests/peers/approve_peer.py', out },
  notify_progress = false,
})
vim.lsp.enable('tether')
vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/a.py'))

H.test('tether/approve is answered through the float and vim.ui.select; showMessageRequest by Neovim', function()
  H.wait(function()
    return vim.uv.fs_stat(out) ~= nil
  end, 'both answers recorded by the peer', 60000)
  local record = vim.json.decode(table.concat(vim.fn.readfile(out), '\n'))
  H.eq(true, record.initializationOptions.approvals, 'the plugin declares approvals')
  H.eq({ choice = 'allow_once' }, record.approve.result, 'the answer to tether/approve')
  H.eq(nil, record.approve.error)
  H.eq({ title = 'Deny' }, record.showMessageRequest.result, "Neovim's default handler answers the fallback")
  H.eq('tether_approval', asked[1].kind)
  H.eq({ 'Allow once', 'Allow for this session', 'Always allow', 'Deny' }, asked[1].items)
  H.eq('lsp_message', asked[2].kind)
  H.contains(table.concat(float_seen or {}, '\n'), '  • git commit -m x')
end)

for _, c in ipairs(vim.lsp.get_clients({ name = 'tether' })) do
  c:stop(true)
end
H.finish()
