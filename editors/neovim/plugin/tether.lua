-- Tether: commands work without setup(); everything else is required on first use.
if vim.g.loaded_tether ~= nil or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_tether = 1
require('tether.commands').define_global()
require('tether').bootstrap()
