"""The language server: Tether's gate behind LSP (`tether serve`).

Only this package imports pygls. Handlers stay thin: they unpack and validate the client's JSON,
call the gate (in a worker thread, never on the event loop) and render results as LSP types. The
protocol is documented in `docs/lsp.md`.
"""
