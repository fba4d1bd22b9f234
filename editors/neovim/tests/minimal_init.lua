-- Minimal init for the headless tests: only this plugin (and Neovim's runtime) on the runtimepath.
-- The runner (tests/run.sh, tests/e2e/test_neovim.py) points every XDG_* dir at a temp dir first.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
-- XDG dirs are empty temp dirs, so the default runtimepath holds only Neovim's own runtime.
vim.opt.runtimepath:prepend(root)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.g.tether_test_root = root
-- Startup sources plugin/tether.lua after this file, as it would for a user.
