---@brief
--- Tether's language server, `tether serve` (the `tether` command of the tether Python package).
--- Enable with `vim.lsp.enable('tether')`; options come from `require('tether').setup()`.
--- Attaches to every filetype in a git workspace; previews come from the server's diagnostics and
--- from the plugin's extmarks (:help tether).
local config = require('tether.config')
local cfg = config.get()

---@type vim.lsp.Config
return {
  cmd = cfg.cmd,
  root_markers = { '.git' },
  workspace_required = true,
  init_options = config.init_options(cfg),
  handlers = {
    ['tether/event'] = function(...)
      return require('tether.lsp').on_event(...)
    end,
  },
}
