"""The shared core: every face (LSP, agent, CLI) reaches tools only through `tether.core.gate`."""
