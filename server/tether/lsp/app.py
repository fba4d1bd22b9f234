"""`create_server()`: a `TetherServer` with every feature registered.

Apart from `server.py` on purpose: the feature modules import the server's type, and the server's
state must not import the features back (an import cycle that made the order of imports matter).
"""

from __future__ import annotations

import logging

from lsprotocol import types

from tether.lsp.features import commands, events, previews, progress
from tether.lsp.server import TetherServer

log = logging.getLogger(__name__)


def _build_quietly(server: TetherServer) -> None:
    try:
        server.gate()
    except Exception as exc:  # reported again, with the message, on the first command
        log.warning("cannot open the workspace yet: %s", exc)


def create_server() -> TetherServer:
    """A server with every feature registered; `server.start_io()` runs it over stdio."""
    server = TetherServer()
    for module in (events, progress, previews, commands):
        module.register(server)

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: TetherServer, params: types.InitializeParams) -> None:
        ls.setup_session(params)

    @server.feature(types.INITIALIZED)
    def on_initialized(ls: TetherServer, params: types.InitializedParams) -> None:
        if ls.option_errors:
            ls.show_message(
                "Tether: invalid initializationOptions, using defaults for: " + "; ".join(ls.option_errors),
                types.MessageType.Error,
            )
        if ls.workspace_root is None:
            ls.show_message(
                "Tether needs a workspace folder: open a folder to use its commands.",
                types.MessageType.Warning,
            )
        elif (ls.workspace_root / ".tether" / "proposals").is_dir():
            ls.executor.submit(_build_quietly, ls)  # show pending proposals without waiting for a command

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: TetherServer, params: None) -> None:
        ls.stop_work()

    return server
