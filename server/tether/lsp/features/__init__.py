"""Feature modules of the language server; each exposes `register(server)`."""
