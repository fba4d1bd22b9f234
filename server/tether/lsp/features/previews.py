"""Dry-run previews any LSP client shows: diagnostics, code lenses and code actions per pending hunk.

Pending proposals are read from the gate's store off the loop (`reload`) and cached by path; the
ranges are recomputed against the open buffer on every change (on the loop, pure and fast), so a
preview follows the user's edits. Files that are not open get diagnostics computed against the disk.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tether.lsp.edits import units

if TYPE_CHECKING:
    from tether.core.proposals import Proposal, ProposalStore
    from tether.lsp.server import TetherServer

log = logging.getLogger(__name__)

SOURCE = "tether"
MAX_MESSAGE = 400
TYPING_DELAY = 0.15
"""Seconds of quiet typing before a buffer's previews are recomputed (one pass per burst)."""


class Previews:
    """The cache of pending proposals by workspace-relative path, and what was published."""

    def __init__(self, server: TetherServer) -> None:
        self._server = server
        self.pending: dict[str, list[Proposal]] = {}
        self._published: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._reload_lock = threading.Lock()
        self._reload_queued = threading.Event()

    # --- loading (worker threads) -------------------------------------------------------------

    def reload(self) -> None:
        """Read the pending proposals and publish every affected file's diagnostics."""
        server = self._server
        if not server.has_gate:
            return
        with self._reload_lock:
            self._reload_queued.clear()
            gate = server.gate()
            by_path: dict[str, list[Proposal]] = {}
            for proposal in self._pending_proposals(gate.proposals):
                by_path.setdefault(proposal.path, []).append(proposal)
            disk: dict[str, str] = {}
            for rel in by_path:
                if server.documents.get(gate.workspace / rel) is None:
                    disk[rel] = _read_disk(gate.workspace, rel)
            server.on_loop(lambda: self._install(by_path, disk))

    def _pending_proposals(self, store: ProposalStore) -> list[Proposal]:
        """Proposals with hunks still to decide (stale ones are listed by `tether.proposals`)."""
        return [p for p in store.list(pending_only=True) if p.state in ("pending", "partially_accepted")]

    def schedule_reload(self) -> None:
        """Reload soon on a worker thread; several requests in a row coalesce into one."""
        if self._reload_queued.is_set():
            return
        self._reload_queued.set()
        try:
            self._server.executor.submit(self._reload_logged)
        except RuntimeError:  # executor shut down: the session is ending
            self._reload_queued.clear()

    def _reload_logged(self) -> None:
        try:
            self.reload()
        except Exception:
            log.exception("refreshing the proposal previews failed")

    # --- publishing (event loop) --------------------------------------------------------------

    def _install(self, by_path: dict[str, list[Proposal]], disk: dict[str, str]) -> None:
        self.pending = by_path
        root = self._server.workspace_root
        if root is None:
            return
        live: set[str] = set()
        for rel in by_path:
            uri = self._server.documents.uri_for(root / rel) or (root / rel).as_uri()
            timer = self._timers.pop(uri, None)
            if timer is not None:  # published fresh right now
                timer.cancel()
            text = self._text_of(uri, rel, disk)
            self._publish(uri, self.diagnostics(rel, text))
            live.add(uri)
        for uri in self._published - live:
            self._publish(uri, [])
        self._published = live
        if _supports_lens_refresh(self._server):
            self._server.workspace_code_lens_refresh(None)

    def _text_of(self, uri: str, rel: str, disk: dict[str, str]) -> str:
        if uri in self._server.workspace.text_documents:
            return self._server.workspace.get_text_document(uri).source
        return disk.get(rel, "")

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )

    def document_changed(self, uri: str) -> None:
        """The user typed: recompute the buffer's previews once the typing pauses (on the loop)."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        rel = self.relpath(uri)
        if rel is None or rel not in self.pending:
            return
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(TYPING_DELAY, self._typing_paused, uri)

    def _typing_paused(self, uri: str) -> None:
        self._timers.pop(uri, None)
        if uri in self._server.workspace.text_documents:
            self.refresh_document(uri)

    def refresh_document(self, uri: str) -> None:
        """Recompute one open buffer's diagnostics now (on the loop)."""
        rel = self.relpath(uri)
        if rel is None or rel not in self.pending:
            return
        text = self._server.workspace.get_text_document(uri).source
        self._publish(uri, self.diagnostics(rel, text))
        self._published.add(uri)

    # --- rendering ----------------------------------------------------------------------------

    def relpath(self, uri: str) -> str | None:
        root = self._server.workspace_root
        path = self._server.documents.path_of(uri)
        if root is None or path is None:
            return None
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            return None

    def hunks_for(self, rel: str, text: str) -> list[tuple[Proposal, dict[str, Any], types.Range]]:
        """(proposal, hunk JSON, range in `text`) for every pending hunk of the file."""
        root = self._server.workspace_root
        if root is None:
            return []
        lines = text.split("\n")
        encoding = str(self._server.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        found = []
        for proposal in self.pending.get(rel, []):
            if proposal.state == "stale":  # cannot be accepted any more; listed by tether.proposals
                continue
            data = proposal.to_json(root, current=text)
            for hunk in data["hunks"]:
                if hunk["state"] != "pending":
                    continue
                found.append((proposal, hunk, _lsp_range(hunk["range"], lines, encoding)))
        return found

    def diagnostics(self, rel: str, text: str) -> list[types.Diagnostic]:
        result = []
        for proposal, hunk, rng in self.hunks_for(rel, text):
            proposed = "".join(hunk["added"]).rstrip("\n") or "(delete these lines)"
            if len(proposed) > MAX_MESSAGE:
                proposed = proposed[:MAX_MESSAGE] + "…"
            result.append(
                types.Diagnostic(
                    range=rng,
                    severity=types.DiagnosticSeverity.Information,
                    source=SOURCE,
                    code=f"{proposal.id}#{hunk['index']}",
                    message=f"Tether proposal {proposal.id} hunk {hunk['index']}: {proposed}",
                    data={"proposalId": proposal.id, "hunk": hunk["index"]},
                )
            )
        return result

    def code_lenses(self, uri: str) -> list[types.CodeLens]:
        rel = self.relpath(uri)
        if rel is None or rel not in self.pending:
            return []
        text = self._server.workspace.get_text_document(uri).source
        lenses = []
        for proposal, hunk, rng in self.hunks_for(rel, text):
            at = types.Range(start=rng.start, end=rng.start)
            arg = {"id": proposal.id, "hunks": [hunk["index"]]}
            for title, command in (
                ("accept", "tether.accept"),
                ("reject", "tether.reject"),
                ("diff", "tether.diff"),
            ):
                lenses.append(
                    types.CodeLens(
                        range=at,
                        command=types.Command(title=f"Tether: {title}", command=command, arguments=[arg]),
                    )
                )
        return lenses

    def code_actions(self, uri: str, wanted: types.Range) -> list[types.CodeAction]:
        rel = self.relpath(uri)
        if rel is None or rel not in self.pending:
            return []
        text = self._server.workspace.get_text_document(uri).source
        actions: list[types.CodeAction] = []
        whole: dict[str, Proposal] = {}
        for proposal, hunk, rng in self.hunks_for(rel, text):
            if not _touches(rng, wanted):
                continue
            n = hunk["index"]
            arg = {"id": proposal.id, "hunks": [n]}
            for verb, command in (("Accept", "tether.accept"), ("Reject", "tether.reject")):
                actions.append(
                    types.CodeAction(
                        title=f"Tether: {verb} hunk {n} of {proposal.reason or proposal.id}",
                        kind=types.CodeActionKind.QuickFix,
                        command=types.Command(title=f"{verb} hunk {n}", command=command, arguments=[arg]),
                    )
                )
            whole[proposal.id] = proposal
        for proposal in whole.values():
            for verb, command in (("Accept", "tether.accept"), ("Reject", "tether.reject")):
                actions.append(
                    types.CodeAction(
                        title=f"Tether: {verb} all {len(proposal.pending)} hunks of {proposal.id}",
                        kind=types.CodeActionKind.QuickFix,
                        command=types.Command(
                            title=f"{verb} proposal", command=command, arguments=[{"id": proposal.id}]
                        ),
                    )
                )
        return actions


def _lsp_range(raw: dict[str, Any], lines: Sequence[str], encoding: str) -> types.Range:
    start, end = raw["start"], raw["end"]
    end_char = end["character"]
    if end_char and end["line"] < len(lines):  # ends at the end of a last line without newline
        end_char = units(lines[end["line"]], encoding)
    return types.Range(
        start=types.Position(line=start["line"], character=0),
        end=types.Position(line=end["line"], character=end_char),
    )


def _touches(rng: types.Range, wanted: types.Range) -> bool:
    """Line-wise overlap; an empty range (insertion) touches its own line."""
    last = max(
        rng.end.line - (1 if rng.end.character == 0 and rng.end.line > rng.start.line else 0), rng.start.line
    )
    return not (wanted.end.line < rng.start.line or wanted.start.line > last)


def _read_disk(workspace: Path, rel: str) -> str:
    from tether.core.proposals import read_current_text

    try:
        return read_current_text(workspace, rel)
    except Exception as exc:  # unreadable now: ranges fall back to the proposal's own positions
        log.info("cannot read %s for previews: %s", rel, exc)
        return ""


def _supports_lens_refresh(server: TetherServer) -> bool:
    ws = server.client_capabilities.workspace
    return bool(ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support)


def register(server: TetherServer) -> None:
    """Document sync hooks, code lenses and code actions."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TetherServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.previews.refresh_document(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TetherServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.previews.document_changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TetherServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.forget(params.text_document.uri)
        if ls.previews.relpath(params.text_document.uri) in ls.previews.pending:
            ls.previews.schedule_reload()  # its ranges now come from the disk

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: TetherServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        return ls.previews.code_lenses(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(ls: TetherServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.previews.code_actions(params.text_document.uri, params.range)
