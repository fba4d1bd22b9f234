"""Work-done progress (`$/progress`) for long work, cancellable from the client or `tether.cancel`.

Every long operation gets a `threading.Event`: the gate, sandboxed commands and the agent loop
check it. The client's "cancel" on the progress item, and `tether.cancel`, set it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from tether.lsp.server import TetherServer

log = logging.getLogger(__name__)
_tokens = itertools.count(1)


class Reporter:
    """Reports progress messages from any thread."""

    def __init__(self, server: TetherServer, token: str | None, cancel: threading.Event) -> None:
        self._server = server
        self.token = token
        self.cancel = cancel

    def report(self, message: str) -> None:
        if self.token is None:
            return
        value = types.WorkDoneProgressReport(message=message[:200], cancellable=True)
        self._server.call_soon(self._server.work_done_progress.report, self.token, value)


def supports_progress(server: TetherServer) -> bool:
    window = server.client_capabilities.window
    return bool(window is not None and window.work_done_progress)


@contextlib.asynccontextmanager
async def work_progress(server: TetherServer, title: str) -> AsyncIterator[Reporter]:
    """Begin/end a server-initiated progress (when the client supports it) around a block of work."""
    cancel = threading.Event()
    token: str | None = None
    if supports_progress(server):
        token = f"tether-{next(_tokens)}"
        try:
            await server.work_done_progress.create_async(token)
            server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
            future = server.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
        except Exception as exc:  # a client that refuses progress still gets the work done
            log.info("work-done progress unavailable: %s", exc)
            token = None
    server.cancel_events.add(cancel)
    try:
        yield Reporter(server, token, cancel)
    finally:
        server.cancel_events.discard(cancel)
        if token is not None:
            message = "cancelled" if cancel.is_set() else "done"
            server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            server.work_done_progress.tokens.pop(token, None)


def cancel_all(server: TetherServer) -> bool:
    """Set every running cancel event; True when there was something to cancel."""
    running = list(server.cancel_events)
    for event in running:
        event.set()
    return bool(running)


def register(server: TetherServer) -> None:
    """Nothing to register: pygls handles `window/workDoneProgress/cancel` (we watch its future)."""
