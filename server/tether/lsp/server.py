"""`TetherServer`: the pygls server with Tether's session state (features register in `app.py`).

State lives on the server object (typed attributes), never in module globals, so handlers take the
server as their first argument and tests can build as many servers as they like. Each feature module
exposes `register(server)`; `tether.lsp.app.create_server` calls them in order, so this
module never imports the features that import it.

Threads: the event loop only reads and writes LSP messages. Gate calls (git, sandboxed commands,
disk writes) run on `server.executor`, a pool of our own: pygls reads stdin on its default pool, so
blocking that pool with work that waits for a client answer (`workspace/applyEdit`) could deadlock.
Worker threads never write to stdout themselves; they hand messages to the loop with `call_soon`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from tether import __version__
from tether.lsp.documents import WorkspaceDocuments
from tether.lsp.errors import NoWorkspace
from tether.lsp.features.previews import Previews
from tether.lsp.options import InitOptions, parse_options

if TYPE_CHECKING:
    from tether.core.gate import Gate
    from tether.core.session import Session

log = logging.getLogger(__name__)
T = TypeVar("T")

WORKER_THREADS = 4


class TetherServer(LanguageServer):
    """One editor session: its options, workspace, gate, open documents and running work."""

    def __init__(self) -> None:
        super().__init__(
            "tether", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental
        )
        self.options: InitOptions = InitOptions()
        self.option_errors: list[str] = []
        self.workspace_root: Path | None = None
        self.documents = WorkspaceDocuments(self)
        self.previews = Previews(self)
        self.executor = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="tether-work")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.decisions = asyncio.Lock()
        """Serialises accept/reject/rollback: each one plans against the text the previous one left."""
        self.cancel_events: set[threading.Event] = set()
        """One event per running gate call or agent turn; `tether.cancel` sets them all."""
        self.turns: dict[str, threading.Event] = {}
        """Running agent turns by `turnId`: `tether.cancel {turnId}` stops one of them."""
        self._session: Session | None = None
        self._session_lock = threading.Lock()

    def stop_work(self) -> None:
        """Cancel every running gate call and agent turn and take no new work (shutdown, or exit)."""
        for event in list(self.cancel_events):
            event.set()
        self.executor.shutdown(wait=False, cancel_futures=True)

    # --- session set-up ---------------------------------------------------------------------------

    def setup_session(self, params: types.InitializeParams) -> None:
        """Read the workspace root and options from `initialize` (the gate is built on first use)."""
        self.loop = asyncio.get_running_loop()
        self.options, self.option_errors = parse_options(params.initialization_options)
        root_uri = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
        if root_uri is None and params.root_path:
            self.workspace_root = Path(params.root_path).resolve()
        elif root_uri is not None:
            fs_path = to_fs_path(root_uri)
            self.workspace_root = Path(fs_path).resolve() if fs_path else None
        if self.workspace_root is not None and not self.workspace_root.is_dir():
            log.warning(
                "workspace %s is not a directory; commands will ask for a folder", self.workspace_root
            )
            self.workspace_root = None

    def gate(self) -> Gate:
        """The session's gate, built on first use (config files read, options applied)."""
        return self.session().gate

    def session(self) -> Session:
        """The session (`tether.core.session`), opened on first use; every feature goes through it."""
        with self._session_lock:
            if self._session is None:
                self._session = self._open_session()
                self.previews.schedule_reload()  # proposals left by an earlier session
            return self._session

    def _open_session(self) -> Session:
        from tether.core.session import open_session
        from tether.lsp.approvals import make_approver
        from tether.lsp.features.events import send_event

        if self.workspace_root is None:
            raise NoWorkspace()
        session = open_session(
            self.workspace_root,
            self.options.overrides(),
            approver=make_approver(self),
            documents=self.documents,
            on_event=lambda event: send_event(self, event),
        )
        for warning in session.warnings:
            self.show_message(warning, types.MessageType.Warning)
        return session

    @property
    def has_gate(self) -> bool:
        return self._session is not None

    # --- threads ---------------------------------------------------------------------------------

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn` on a worker thread and await it, keeping the event loop free."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, fn, *args)

    def on_loop(self, fn: Callable[[], T], *, timeout: float | None = 30.0) -> T:
        """Run `fn` on the event loop and return its result (from a worker thread, or inline on it)."""
        loop = self.loop
        if loop is None or _on_thread_of(loop):
            return fn()
        done: Future[T] = Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed back to the waiting thread
                done.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return done.result(timeout)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule `fn` on the event loop without waiting (safe from any thread)."""
        loop = self.loop
        if loop is None or _on_thread_of(loop):
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    # --- messages --------------------------------------------------------------------------------

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.call_soon(self.window_show_message, types.ShowMessageParams(type=kind, message=message))


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
