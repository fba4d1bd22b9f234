"""Accepted hunks as LSP edits: minimal per-hunk TextEdits against one buffer version. Pure.

Why per hunk and not one whole-document edit: the editor keeps the cursor, folds, marks and undo
history of every line the hunk does not touch, and a client's preview (VS Code's refactor view)
shows one checkbox per change. Each edit replaces exactly the lines a hunk changes (context lines are
not rewritten), so the edits never overlap and all refer to the same original version, as LSP wants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tether.core import diff

if TYPE_CHECKING:
    from tether.core.proposals import Hunk


@dataclass(frozen=True)
class LineEdit:
    """Replace [start_line:0, end_line:end_character) by `new_text`; hunk `index` is 1-based."""

    index: int
    start_line: int
    end_line: int
    end_character: int
    new_text: str

    def range(self) -> types.Range:
        return types.Range(
            start=types.Position(line=self.start_line, character=0),
            end=types.Position(line=self.end_line, character=self.end_character),
        )


def units(text: str, encoding: str) -> int:
    """Length of `text` in the negotiated position encoding (LSP default UTF-16)."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def plan_edits(text: str, hunks: Sequence[Hunk], encoding: str = "utf-16") -> list[LineEdit]:
    """Locate each hunk (file order) in `text`; `diff.HunkConflict` when one no longer applies."""
    lines = diff.split_lines(text)
    parsed = [h.parsed() for h in hunks]
    positions = diff.locate(lines, parsed)
    edits = []
    for hunk, dh, pos in zip(hunks, parsed, positions, strict=True):
        start = pos + dh.lead
        removed = dh.removed
        if removed and not removed[-1].endswith("\n"):  # the file's last line, without a newline
            end_line, end_char = start + len(removed) - 1, units(removed[-1], encoding)
        else:
            end_line, end_char = start + len(removed), 0
        edits.append(LineEdit(hunk.index, start, end_line, end_char, "".join(dh.added)))
    return edits


def whole_range(text: str, encoding: str = "utf-16") -> types.Range:
    """The range of the whole of `text` (to replace a buffer's content)."""
    lines = diff.split_lines(text)
    if not lines or lines[-1].endswith("\n"):
        end = types.Position(line=len(lines), character=0)
    else:
        end = types.Position(line=len(lines) - 1, character=units(lines[-1], encoding))
    return types.Range(start=types.Position(line=0, character=0), end=end)


def apply_line_edits(text: str, edits: Sequence[LineEdit]) -> str:
    """What the buffer becomes after `edits` (used to check the plan before sending it)."""
    lines = diff.split_lines(text)
    out: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: e.start_line):
        out.extend(lines[cursor : edit.start_line])
        out.append(edit.new_text)
        cursor = edit.end_line + (1 if edit.end_character else 0)
    out.extend(lines[cursor:])
    return "".join(out)


@dataclass(frozen=True)
class EditSupport:
    """What the client's `workspace.workspaceEdit` capabilities allow."""

    document_changes: bool
    change_annotations: bool

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None) -> EditSupport:
        ws = capabilities.workspace if capabilities is not None else None
        we = ws.workspace_edit if ws is not None else None
        if we is None:
            return cls(False, False)
        document_changes = bool(we.document_changes)
        return cls(document_changes, document_changes and we.change_annotation_support is not None)


def workspace_edit(
    uri: str,
    version: int | None,
    edits: Sequence[LineEdit],
    support: EditSupport,
    *,
    proposal_id: str,
    reason: str,
    review: bool = False,
) -> types.WorkspaceEdit:
    """The edit to send with `workspace/applyEdit`.

    - annotations supported: a versioned TextDocumentEdit whose edits carry one change annotation
      labelled with the proposal's reason (`needsConfirmation` when the user asked to review);
    - document changes supported: the same with plain TextEdits;
    - neither: the `changes` map (no version: the server checked the version just before sending).
    """
    if support.document_changes:
        annotation_id = f"tether:{proposal_id}"
        body: list[Any]
        annotations = None
        if support.change_annotations:
            body = [
                types.AnnotatedTextEdit(range=e.range(), new_text=e.new_text, annotation_id=annotation_id)
                for e in edits
            ]
            annotations = {
                annotation_id: types.ChangeAnnotation(
                    label=reason or f"Tether proposal {proposal_id}",
                    needs_confirmation=review,
                    description=f"Tether proposal {proposal_id}, hunk(s) "
                    + ", ".join(str(e.index) for e in edits),
                )
            }
        else:
            body = [types.TextEdit(range=e.range(), new_text=e.new_text) for e in edits]
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=document, edits=body)],
            change_annotations=annotations,
        )
    return types.WorkspaceEdit(
        changes={uri: [types.TextEdit(range=e.range(), new_text=e.new_text) for e in edits]}
    )
