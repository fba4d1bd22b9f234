"""Per-hunk LSP edits (tether.lsp.edits): located in the buffer, minimal, equal to the gate's plan."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lsprotocol import types

from tether.core import diff
from tether.core.proposals import ProposalStore
from tether.lsp.edits import EditSupport, apply_line_edits, plan_edits, units, whole_range, workspace_edit

BASE = "".join(f"line {i}\n" for i in range(1, 41))


def edited(text: str, changes: dict[int, str | None], inserts: dict[int, str] | None = None) -> str:
    lines = text.splitlines(keepends=True)
    out = []
    for n, line in enumerate(lines, start=1):
        for extra in (inserts or {}).get(n, "").splitlines(keepends=True):
            out.append(extra)
        if n in changes:
            if changes[n] is not None:
                out.append(changes[n])
        else:
            out.append(line)
    return "".join(out)


@pytest.fixture
def store(tmp_path: Path) -> ProposalStore:
    return ProposalStore(tmp_path)


def test_each_edit_replaces_only_the_changed_lines(store: ProposalStore) -> None:
    new = edited(BASE, {3: "three\n", 20: None, 35: "thirty-five\nand more\n"})
    proposal = store.create("f.txt", BASE, new, "r")
    edits = plan_edits(BASE, proposal.hunks)
    assert [(e.index, e.start_line, e.end_line, e.end_character, e.new_text) for e in edits] == [
        (1, 2, 3, 0, "three\n"),
        (2, 19, 20, 0, ""),
        (3, 34, 35, 0, "thirty-five\nand more\n"),
    ]
    assert apply_line_edits(BASE, edits) == new


def test_a_subset_of_hunks_applies_only_those(store: ProposalStore) -> None:
    new = edited(BASE, {3: "three\n", 20: "twenty\n", 35: "thirty-five\n"})
    proposal = store.create("f.txt", BASE, new, "r")
    edits = plan_edits(BASE, [proposal.hunk(2)])
    assert apply_line_edits(BASE, edits) == BASE.replace("line 20\n", "twenty\n")
    assert apply_line_edits(BASE, edits) == store.plan_accept(proposal.id, [2], BASE).new_content


def test_edits_follow_lines_inserted_above(store: ProposalStore) -> None:
    proposal = store.create("f.txt", BASE, BASE.replace("line 30\n", "thirty\n"), "r")
    moved = "a\nb\nc\n" + BASE
    [edit] = plan_edits(moved, proposal.hunks)
    assert edit.start_line == 32
    assert apply_line_edits(moved, [edit]) == moved.replace("line 30\n", "thirty\n")


def test_an_edit_of_the_same_lines_conflicts(store: ProposalStore) -> None:
    proposal = store.create("f.txt", BASE, BASE.replace("line 30\n", "thirty\n"), "r")
    with pytest.raises(diff.HunkConflict):
        plan_edits(BASE.replace("line 30\n", "user text\n"), proposal.hunks)


@pytest.mark.parametrize(("encoding", "width"), [("utf-16", 7), ("utf-8", 9), ("utf-32", 6)])
def test_last_line_without_newline_ends_inside_the_line(
    store: ProposalStore, encoding: str, width: int
) -> None:
    base = "a\nb\nlast 😀"  # the emoji: 2 UTF-16 units, 4 UTF-8 bytes, 1 code point
    proposal = store.create("f.txt", base, "a\nb\nlast 😀\nadded\n", "r")
    [edit] = plan_edits(base, proposal.hunks, encoding)
    assert (edit.start_line, edit.end_line, edit.end_character) == (2, 2, width)
    assert apply_line_edits(base, [edit]) == "a\nb\nlast 😀\nadded\n"


def test_random_proposals_match_the_gate_plan(store: ProposalStore) -> None:
    rng = random.Random(7)
    for _ in range(60):
        base = "".join(f"{rng.choice('abc')}{i}\n" for i in range(rng.randint(1, 80)))
        lines = base.splitlines(keepends=True)
        new_lines = []
        for line in lines:
            roll = rng.random()
            if roll < 0.1:
                continue
            if roll < 0.2:
                new_lines.append("changed " + line)
            elif roll < 0.25:
                new_lines.extend([line, "inserted\n"])
            else:
                new_lines.append(line)
        new = "".join(new_lines)
        if new == base:
            continue
        proposal = store.create("f.txt", base, new, "r")
        indices = [h.index for h in proposal.hunks]
        subset = sorted(rng.sample(indices, rng.randint(1, len(indices))))
        edits = plan_edits(base, [proposal.hunk(i) for i in subset])
        assert apply_line_edits(base, edits) == store.plan_accept(proposal.id, subset, base).new_content


def test_units() -> None:
    assert units("é😀", "utf-16") == 3
    assert units("é😀", "utf-8") == 6
    assert units("é😀", "utf-32") == 2


def test_whole_range() -> None:
    assert whole_range("a\nb\n").end == types.Position(line=2, character=0)
    assert whole_range("a\nbc").end == types.Position(line=1, character=2)
    assert whole_range("").end == types.Position(line=0, character=0)


def _caps(document_changes: bool, annotations: bool) -> types.ClientCapabilities:
    edit = types.WorkspaceEditClientCapabilities(
        document_changes=document_changes,
        change_annotation_support=types.ChangeAnnotationsSupportOptions(groups_on_label=True)
        if annotations
        else None,
    )
    return types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(workspace_edit=edit))


def test_workspace_edit_forms(store: ProposalStore) -> None:
    proposal = store.create("f.txt", BASE, BASE.replace("line 2\n", "two\n"), "fix it")
    edits = plan_edits(BASE, proposal.hunks)
    uri = "file:///ws/f.txt"

    annotated = workspace_edit(
        uri,
        4,
        edits,
        EditSupport.of(_caps(True, True)),
        proposal_id=proposal.id,
        reason="fix it",
        review=True,
    )
    [change] = annotated.document_changes or []
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.version == 4
    [text_edit] = change.edits
    assert isinstance(text_edit, types.AnnotatedTextEdit)
    annotation = (annotated.change_annotations or {})[text_edit.annotation_id]
    assert annotation.label == "fix it"
    assert annotation.needs_confirmation is True

    plain = workspace_edit(
        uri, 4, edits, EditSupport.of(_caps(True, False)), proposal_id=proposal.id, reason="x"
    )
    [change] = plain.document_changes or []
    assert isinstance(change, types.TextDocumentEdit)
    assert [type(e) for e in change.edits] == [types.TextEdit]
    assert plain.change_annotations is None

    bare = workspace_edit(
        uri, 4, edits, EditSupport.of(types.ClientCapabilities()), proposal_id=proposal.id, reason="x"
    )
    assert bare.document_changes is None
    [only] = (bare.changes or {})[uri]
    assert only.new_text == "two\n"
    # annotations without documentChanges are impossible in LSP: fall back to the plain form
    assert EditSupport.of(_caps(False, True)) == EditSupport(False, False)


def test_crlf_buffers_keep_their_line_endings(store: ProposalStore) -> None:
    base = BASE.replace("\n", "\r\n")
    new = base.replace("line 7\r\n", "seven\r\n")
    proposal = store.create("f.txt", base, new, "r")
    [edit] = plan_edits(base, proposal.hunks)
    assert (edit.start_line, edit.end_line, edit.end_character, edit.new_text) == (6, 7, 0, "seven\r\n")
    assert apply_line_edits(base, [edit]) == new
