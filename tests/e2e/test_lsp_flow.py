"""The whole flow through the real server: propose → preview → accept one hunk → rollback → log.

Parametrised over pytest-lsp's recorded Neovim and VS Code capabilities: VS Code gets versioned,
annotated edits; Neovim (no `documentChanges` in its recorded capabilities) gets the `changes` map.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _lsp_support import Editor, capabilities, numbered, start_editor, stop_editor
from lsprotocol import types

pytestmark = pytest.mark.e2e

APP = "src/app.py"
ORIGINAL = numbered(30)
FILES = {APP: ORIGINAL}
REQUEST_FAILED = -32803


def three_hunks(text: str) -> str:
    """Change lines 3, 15 and 27: far enough apart to be three hunks."""
    lines = text.splitlines(keepends=True)
    for n in (3, 15, 27):
        lines[n - 1] = lines[n - 1].replace("line", "changed")
    return "".join(lines)


def text_edits(params: types.ApplyWorkspaceEditParams) -> tuple[list[Any], int | None]:
    """(edits, version) of the only document in a WorkspaceEdit, whichever form it took."""
    edit = params.edit
    if edit.document_changes:
        [change] = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        return list(change.edits), change.text_document.version
    assert edit.changes is not None
    [edits] = edit.changes.values()
    return list(edits), None


async def propose(editor: Editor, content: str, path: str = APP) -> dict[str, Any]:
    answer = await editor.command(
        "tether.runTool", {"name": "write_file", "input": {"path": path, "content": content}}
    )
    assert answer["result"]["dryRun"] is True
    assert answer["result"]["ok"] is True
    return dict(answer["proposal"])


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_propose_preview_accept_one_hunk_rollback_and_log(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal = await propose(editor, three_hunks(ORIGINAL))
    assert [h["index"] for h in proposal["hunks"]] == [1, 2, 3]
    assert [h["range"]["start"]["line"] for h in proposal["hunks"]] == [2, 14, 26]
    assert proposal["uri"] == uri

    # Previews: one diagnostic per hunk on exactly its line, three lenses per hunk, quick fixes.
    diagnostics = editor.diagnostics(APP)
    assert sorted(d.range.start.line for d in diagnostics) == [2, 14, 26]
    assert all(
        d.source == "tether" and d.severity == types.DiagnosticSeverity.Information for d in diagnostics
    )
    assert any("changed 15" in d.message and proposal["id"] in d.message for d in diagnostics)
    lenses = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    titles = sorted({lens.command.title for lens in lenses if lens.command})
    assert titles == ["Tether: accept", "Tether: diff", "Tether: reject"]
    assert sorted(lens.range.start.line for lens in lenses) == [2] * 3 + [14] * 3 + [26] * 3
    actions = await editor.raw_request(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=14, character=0), end=types.Position(line=14, character=3)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        ),
    )
    titles = [a["title"] for a in actions]
    assert len(titles) == 4, titles  # accept/reject this hunk, accept/reject the whole proposal
    [action] = [a for a in actions if a["title"].startswith("Tether: Accept hunk 2")]
    assert action["kind"] == "quickfix"
    assert action["command"]["arguments"] == [{"id": proposal["id"], "hunks": [2]}]

    # Accept hunk 2 of 3 with the code action's own command: exactly that hunk reaches the buffer.
    accepted = await editor.command(action["command"]["command"], *action["command"]["arguments"])
    assert accepted["applied"] == [2]
    assert accepted["appliedVia"] == "editor"
    assert accepted["checkpoint"]
    assert len(editor.edits) == 1
    edits, version = text_edits(editor.edits[0])
    assert len(edits) == 1
    assert (edits[0].range.start.line, edits[0].range.end.line) == (14, 15)
    assert edits[0].new_text == "changed 15\n"
    expected = ORIGINAL.replace("line 15\n", "changed 15\n")
    assert editor.buffers[uri] == expected
    if editor.kind == "visual_studio_code":
        assert version == 1
        assert isinstance(edits[0], types.AnnotatedTextEdit)
        annotations = editor.edits[0].edit.change_annotations or {}
        assert annotations[edits[0].annotation_id].label == f"write_file {APP}"
        assert annotations[edits[0].annotation_id].needs_confirmation is False
    assert (editor.workspace / APP).read_text() == ORIGINAL  # the buffer changed, not the disk
    assert accepted["proposal"]["state"] == "partially_accepted"
    assert [h["state"] for h in accepted["proposal"]["hunks"]] == ["pending", "accepted", "pending"]
    assert sorted(d.range.start.line for d in editor.diagnostics(APP)) == [2, 26]

    # The user saves; rollback restores the file and the open buffer.
    editor.save(uri)
    assert (editor.workspace / APP).read_text() == expected
    rolled = await editor.command("tether.rollback", {})
    assert rolled["restored"] == [APP]
    assert rolled["buffersUpdated"] == [APP]
    assert (editor.workspace / APP).read_text() == ORIGINAL
    assert editor.buffers[uri] == ORIGINAL

    # The audit log lists every call, each mutation with its checkpoint.
    entries = (await editor.command("tether.toolLog", {}))["entries"]
    assert [e["tool"] for e in entries] == ["write_file", "accept", "rollback"]
    assert entries[0]["dry_run"] is True
    assert entries[0]["git_commit"] is None
    assert entries[1]["git_commit"] == accepted["checkpoint"]
    assert entries[2]["git_commit"] == rolled["checkpoint"]
    assert all(e["success"] for e in entries)
    checkpoints = (await editor.command("tether.checkpoints", {}))["checkpoints"]
    assert {accepted["checkpoint"], rolled["checkpoint"]} <= {c["id"] for c in checkpoints}

    # Live views got one event per call.
    states = [(e.tool, e.state) for e in editor.events]
    assert states == [
        ("write_file", "proposed"),
        ("accept", "partially_accepted"),
        ("rollback", "rolled_back"),
    ]


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_unsaved_buffer_is_the_base_of_the_proposal(editor: Editor) -> None:
    uri = editor.open(APP)
    editor.replace_line(uri, 0, "# unsaved header\nline 1\n")  # the buffer now differs from disk
    buffer = editor.buffers[uri]
    proposal = await propose(editor, buffer.replace("line 20\n", "changed 20\n"))
    [hunk] = proposal["hunks"]
    assert hunk["range"]["start"]["line"] == 20  # line 20 is the 21st line of the *buffer*
    accepted = await editor.command("tether.accept", {"id": proposal["id"]})
    assert accepted["applied"] == [1]
    assert editor.buffers[uri] == buffer.replace("line 20\n", "changed 20\n")
    assert (editor.workspace / APP).read_text() == ORIGINAL


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_edit_elsewhere_rebases_the_edit(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal = await propose(editor, ORIGINAL.replace("line 15\n", "changed 15\n"))
    editor.replace_line(uri, 0, "# two\n# new lines\nline 1\n")
    [diagnostic] = await editor.next_diagnostics(APP)
    assert diagnostic.range.start.line == 16  # the preview followed the typing
    accepted = await editor.command("tether.accept", {"id": proposal["id"]})
    assert accepted["applied"] == [1]
    edits, _ = text_edits(editor.edits[-1])
    assert [(e.range.start.line, e.new_text) for e in edits] == [(16, "changed 15\n")]
    assert editor.buffers[uri].splitlines()[16] == "changed 15"


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_user_edit_of_the_same_lines_makes_the_proposal_stale(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal = await propose(editor, ORIGINAL.replace("line 15\n", "changed 15\n"))
    editor.replace_line(uri, 14, "the user wrote this\n")
    error = await editor.command_error("tether.accept", {"id": proposal["id"]})
    assert error.code == REQUEST_FAILED
    assert "stale" in error.message
    assert editor.edits == []  # nothing was sent, nothing applied blindly
    assert "the user wrote this" in editor.buffers[uri]
    shown = await editor.command("tether.proposal", {"id": proposal["id"]})
    assert shown["proposal"]["state"] == "stale"
    assert [(e.tool, e.state) for e in editor.events][-1] == ("accept", "stale")
    assert editor.diagnostics(APP) == []  # a stale proposal is no longer offered in the buffer
    rejected = await editor.command("tether.reject", {"id": proposal["id"]})
    assert rejected["rejected"] == [1]
    assert rejected["proposal"]["state"] == "rejected"


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_a_refused_edit_leaves_the_proposal_pending(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal = await propose(editor, three_hunks(ORIGINAL))
    editor.refuse = True
    error = await editor.command_error("tether.accept", {"id": proposal["id"], "hunks": [1, 3]})
    assert error.code == REQUEST_FAILED
    assert "the user said no" in error.message
    assert len(editor.edits) == 1
    edits, _ = text_edits(editor.edits[0])
    assert [e.range.start.line for e in edits] == [2, 26]
    assert editor.buffers[uri] == ORIGINAL
    listed = (await editor.command("tether.proposals", {}))["proposals"]
    assert [h["state"] for h in listed[0]["hunks"]] == ["pending"] * 3
    assert len(editor.diagnostics(APP)) == 3
    editor.refuse = False
    accepted = await editor.command("tether.accept", {"id": proposal["id"], "hunks": [1, 3]})
    assert accepted["applied"] == [1, 3]
    assert editor.buffers[uri] == three_hunks(ORIGINAL).replace("changed 15", "line 15")


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_a_file_that_is_not_open_is_written_by_the_gate(editor: Editor) -> None:
    proposal = await propose(editor, ORIGINAL.replace("line 2\n", "changed 2\n"))
    assert len(editor.diagnostics(APP)) == 1  # previews for closed files come from the disk
    accepted = await editor.command("tether.accept", {"id": proposal["id"]})
    assert accepted["appliedVia"] == "disk"
    assert editor.edits == []
    assert (editor.workspace / APP).read_text() == ORIGINAL.replace("line 2\n", "changed 2\n")
    assert editor.diagnostics(APP) == []


async def test_a_client_without_change_annotations_gets_versioned_plain_edits(tmp_path: Path) -> None:
    caps = capabilities("visual_studio_code", annotations=False)
    editor = await start_editor(tmp_path, caps, "visual_studio_code", files=FILES)
    try:
        uri = editor.open(APP)
        editor.replace_line(uri, 0, "line 1\n")  # version 2, same text
        proposal = await propose(editor, three_hunks(ORIGINAL))
        await editor.command("tether.accept", {"id": proposal["id"], "hunks": [3]})
        [params] = editor.edits
        assert params.edit.change_annotations is None
        edits, version = text_edits(params)
        assert version == 2
        assert [type(e) for e in edits] == [types.TextEdit]
        assert editor.buffers[uri] == ORIGINAL.replace("line 27\n", "changed 27\n")
    finally:
        await stop_editor(editor)


async def test_review_asks_the_client_to_confirm(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path, capabilities("visual_studio_code"), "visual_studio_code", files=FILES
    )
    try:
        editor.open(APP)
        proposal = await propose(editor, three_hunks(ORIGINAL))
        await editor.command("tether.accept", {"id": proposal["id"], "review": True})
        [params] = editor.edits
        edits, _ = text_edits(params)
        assert len(edits) == 3
        annotations = params.edit.change_annotations or {}
        assert {e.annotation_id for e in edits} == set(annotations)
        assert all(a.needs_confirmation for a in annotations.values())
    finally:
        await stop_editor(editor)


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_rollback_dry_run_writes_nothing(editor: Editor) -> None:
    proposal = await propose(editor, ORIGINAL.replace("line 2\n", "changed 2\n"))
    await editor.command("tether.accept", {"id": proposal["id"]})
    changed = (editor.workspace / APP).read_text()
    plan = await editor.command("tether.rollback", {"dryRun": True})
    assert plan["dryRun"] is True
    assert plan["restored"] == [APP]
    assert (editor.workspace / APP).read_text() == changed


async def test_a_client_that_cannot_apply_edits_is_never_written_behind(tmp_path: Path) -> None:
    caps = capabilities("visual_studio_code")
    assert caps.workspace is not None
    caps.workspace.apply_edit = False
    editor = await start_editor(tmp_path, caps, "visual_studio_code", files=FILES)
    try:
        uri = editor.open(APP)
        proposal = await propose(editor, ORIGINAL.replace("line 2\n", "changed 2\n"))
        error = await editor.command_error("tether.accept", {"id": proposal["id"]})
        assert error.code == REQUEST_FAILED
        assert "close the file, then accept again" in error.message
        assert editor.edits == []
        assert (editor.workspace / APP).read_text() == ORIGINAL
        editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        accepted = await editor.command("tether.accept", {"id": proposal["id"]})
        assert accepted["appliedVia"] == "disk"
        assert (editor.workspace / APP).read_text() == ORIGINAL.replace("line 2\n", "changed 2\n")
    finally:
        await stop_editor(editor)


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_with_write_permission_clean_buffers_follow_the_write(editor: Editor) -> None:
    await editor.command("tether.setPermissions", {"permissions": "write"})
    uri = editor.open(APP)
    new = ORIGINAL.replace("line 9\n", "nine\n")
    answer = await editor.command(
        "tether.runTool", {"name": "write_file", "input": {"path": APP, "content": new}}
    )
    assert answer["result"]["ok"] is True
    assert answer["result"]["dryRun"] is False
    assert answer["result"]["checkpoint"]
    assert (editor.workspace / APP).read_text() == new
    assert answer["buffersUpdated"] == [APP]
    assert editor.buffers[uri] == new


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_with_write_permission_unsaved_work_is_never_overwritten(editor: Editor) -> None:
    await editor.command("tether.setPermissions", {"permissions": "write"})
    uri = editor.open(APP)
    editor.replace_line(uri, 0, "# my unsaved work\n")
    mine = editor.buffers[uri]
    answer = await editor.command(
        "tether.runTool", {"name": "write_file", "input": {"path": APP, "content": "new\n"}}
    )
    assert answer["result"]["ok"] is True
    assert answer["buffersUpdated"] == []
    assert editor.buffers[uri] == mine
    warnings = [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]
    assert any("unsaved changes" in w and APP in w for w in warnings)


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_concurrent_accepts_of_one_proposal_both_land(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal = await propose(editor, three_hunks(ORIGINAL))
    first, second = await asyncio.gather(
        editor.command("tether.accept", {"id": proposal["id"], "hunks": [1]}),
        editor.command("tether.accept", {"id": proposal["id"], "hunks": [3]}),
    )
    assert (first["applied"], second["applied"]) == ([1], [3])
    assert editor.buffers[uri] == three_hunks(ORIGINAL).replace("changed 15", "line 15")
    assert second["proposal"]["state"] == "partially_accepted"
