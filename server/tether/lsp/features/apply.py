"""Accepted hunks reach open buffers through `workspace/applyEdit`, never blindly.

`EditorApply` is the `apply` callback of `Gate.accept`. The gate planned the new text against the
buffer snapshot it read; here, on the event loop (so no `didChange` can slip in between), the buffer
is read again, the hunks are located in it and turned into minimal per-hunk edits, and the result
is checked to equal the gate's plan. Only then is the edit sent, against that buffer version. If the
buffer moved on, or the client refuses, the callback answers False and the gate records nothing as
applied. Files that are not open are written by the gate itself (atomic write).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tether.core import diff
from tether.lsp.edits import EditSupport, apply_line_edits, plan_edits, whole_range, workspace_edit

if TYPE_CHECKING:
    from tether.core.proposals import Hunk, Proposal
    from tether.lsp.server import TetherServer

log = logging.getLogger(__name__)

APPLY_TIMEOUT = 600.0
"""Seconds to wait for the client: with `review: true` a person is looking at a preview."""


class EditorApply:
    """One accept's write-through to the editor; `failure` says why it did not apply."""

    def __init__(
        self, server: TetherServer, *, review: bool = False, cancel: threading.Event | None = None
    ) -> None:
        self._server = server
        self.review = review
        self.cancel = cancel
        self.failure: str | None = None
        self.sent = False
        self.round_trip_ms = 0.0
        """Time from reading the buffer to the client's answer (for logs and the benchmark)."""

    def __call__(self, proposal: Proposal, hunks: list[Hunk], new_content: str) -> bool:
        root = self._server.workspace_root
        if root is None:
            self.failure = "no workspace"
            return False
        workspace_caps = self._server.client_capabilities.workspace
        if workspace_caps is None or not workspace_caps.apply_edit:
            # Writing the disk under an open (maybe modified) buffer would fork the file in two.
            self.failure = (
                f"this editor cannot apply edits from the server (no workspace/applyEdit support) and "
                f"{proposal.path} is open in it: close the file, then accept again to write it on disk"
            )
            return False
        began = time.perf_counter()
        outcome = self._server.on_loop(lambda: self._send(root / proposal.path, proposal, hunks, new_content))
        if isinstance(outcome, str):
            self.failure = outcome
            return False
        self.sent = True
        try:
            answer = outcome.result(timeout=APPLY_TIMEOUT)
        except FutureTimeout:
            self.failure = f"the editor did not answer workspace/applyEdit within {APPLY_TIMEOUT:.0f} s"
            return False
        except Exception as exc:  # an error response from the client
            self.failure = f"the editor answered workspace/applyEdit with an error: {exc}"
            return False
        finally:
            self.round_trip_ms = (time.perf_counter() - began) * 1000
        applied = bool(getattr(answer, "applied", False))
        if not applied:
            reason = getattr(answer, "failure_reason", None)
            self.failure = (
                f"the editor refused the edit: {reason}" if reason else "the editor refused the edit"
            )
        return applied

    def _send(self, path: Path, proposal: Proposal, hunks: list[Hunk], new_content: str) -> Future[Any] | str:
        """On the loop: check the buffer against the plan and send the edit (or say why not)."""
        server = self._server
        uri = server.documents.uri_for(path)
        if uri is None:
            return f"{proposal.path} was closed in the editor while accepting; accept again"
        document = server.workspace.get_text_document(uri)
        text = document.source
        encoding = str(server.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        try:
            edits = plan_edits(text, hunks, encoding)
        except diff.HunkConflict:
            return "the buffer changed while accepting; accept again"
        if apply_line_edits(text, edits) != new_content:
            return "the buffer changed while accepting; accept again"
        edit = workspace_edit(
            uri,
            document.version,
            edits,
            EditSupport.of(server.client_capabilities),
            proposal_id=proposal.id,
            reason=proposal.reason,
            review=self.review,
        )
        label = f"Tether: {proposal.reason or proposal.id}"
        future: Future[Any] = server.workspace_apply_edit(
            types.ApplyWorkspaceEditParams(edit=edit, label=label)
        )
        return future


def sync_buffers_with_disk(server: TetherServer, workspace: Path, paths: list[str]) -> list[str]:
    """After a rollback: make open buffers of restored/deleted files show the disk again.

    Returns the paths whose buffers were replaced. A buffer already equal to the disk is left alone.
    """
    from tether.core.proposals import read_current_text

    updated = []
    for rel in paths:
        path = workspace / rel
        document = server.documents.get(path)
        if document is None:
            continue
        try:
            disk = read_current_text(workspace, rel) if path.exists() else ""
        except Exception as exc:
            log.warning("cannot read %s after rollback: %s", rel, exc)
            continue
        if disk == document.text:
            continue

        def send(p: Path = path, text: str = disk) -> Future[Any] | None:
            uri = server.documents.uri_for(p)
            if uri is None:
                return None
            doc = server.workspace.get_text_document(uri)
            encoding = str(server.workspace.position_encoding or types.PositionEncodingKind.Utf16)
            edit = types.TextEdit(range=whole_range(doc.source, encoding), new_text=text)
            support = EditSupport.of(server.client_capabilities)
            if support.document_changes:
                ident = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version)
                ws_edit = types.WorkspaceEdit(
                    document_changes=[types.TextDocumentEdit(text_document=ident, edits=[edit])]
                )
            else:
                ws_edit = types.WorkspaceEdit(changes={uri: [edit]})
            params = types.ApplyWorkspaceEditParams(edit=ws_edit, label="Tether: rollback")
            result: Future[Any] = server.workspace_apply_edit(params)
            return result

        future = server.on_loop(send)
        if future is None:
            continue
        try:
            if getattr(future.result(timeout=60), "applied", False):
                updated.append(rel)
        except Exception as exc:
            log.warning("buffer of %s not updated after rollback: %s", rel, exc)
    return updated


def open_buffer_states(server: TetherServer, workspace: Path) -> dict[str, tuple[str, bool]]:
    """Before a tool call: for each open file of the workspace, (disk text, buffer equals disk)."""
    from tether.core.proposals import read_current_text

    def open_paths() -> list[Path]:
        return [p for uri in list(server.workspace.text_documents) if (p := server.documents.path_of(uri))]

    states: dict[str, tuple[str, bool]] = {}
    for path in server.on_loop(open_paths):
        try:
            rel = path.relative_to(workspace).as_posix()
            disk = read_current_text(workspace, rel) if path.is_file() else ""
        except Exception:  # outside the workspace, or unreadable: not ours to sync
            continue
        document = server.documents.get(path)
        if document is not None:
            states[rel] = (disk, document.text == disk)
    return states


def follow_disk_changes(
    server: TetherServer, workspace: Path, before: dict[str, tuple[str, bool]]
) -> list[str]:
    """After a tool call that may have written files: show the new disk content in clean buffers.

    A buffer that had unsaved changes is left alone (replacing it would lose the user's work); the
    user is told the file changed on disk instead.
    """
    from tether.core.proposals import read_current_text

    follow: list[str] = []
    conflicts: list[str] = []
    for rel, (old_disk, clean) in before.items():
        try:
            now = read_current_text(workspace, rel) if (workspace / rel).is_file() else ""
        except Exception:
            continue
        if now == old_disk:
            continue
        (follow if clean else conflicts).append(rel)
    if conflicts:
        server.show_message(
            "Tether: changed on disk while the editor has unsaved changes: " + ", ".join(conflicts),
            types.MessageType.Warning,
        )
    return sync_buffers_with_disk(server, workspace, follow) if follow else []
