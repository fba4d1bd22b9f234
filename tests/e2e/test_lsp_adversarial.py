"""What a hostile repository or a confused client may try through the language server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _lsp_support import Editor, numbered

pytestmark = pytest.mark.e2e

APP = "src/app.py"
FILES = {APP: numbered(10)}
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803


async def _propose(editor: Editor) -> str:
    content = numbered(10).replace("line 5\n", "five\n")
    answer = await editor.command(
        "tether.runTool", {"name": "write_file", "input": {"path": APP, "content": content}}
    )
    return str(answer["proposal"]["id"])


@pytest.mark.parametrize("forged", ["../outside.txt", "/etc/passwd", ".git/hooks/pre-commit", "a\u0000b"])
@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_a_forged_proposal_path_is_refused(editor: Editor, forged: str) -> None:
    proposal_id = await _propose(editor)
    stored = editor.workspace / ".tether" / "proposals" / f"{proposal_id}.json"
    data = json.loads(stored.read_text())
    data["path"] = forged
    stored.write_text(json.dumps(data))
    error = await editor.command_error("tether.accept", {"id": proposal_id})
    assert error.code == INVALID_PARAMS
    assert "path" in error.message
    assert not (editor.workspace.parent / "outside.txt").exists()
    assert not (editor.workspace / ".git" / "hooks" / "pre-commit").exists()
    listed = await editor.command("tether.proposals", {})
    assert listed["proposals"] == []  # unreadable proposals are not offered
    assert (await editor.command("tether.status", {}))["pendingProposals"] == 0


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_a_file_swapped_for_a_symlink_outside_is_not_written_through(
    editor: Editor, tmp_path: Path
) -> None:
    proposal_id = await _propose(editor)
    outside = tmp_path / "outside.py"
    outside.write_text(numbered(10))
    target = editor.workspace / APP
    target.unlink()
    os.symlink(outside, target)
    error = await editor.command_error("tether.accept", {"id": proposal_id})
    assert error.code == REQUEST_FAILED
    assert outside.read_text() == numbered(10)
    assert (await editor.command("tether.status", {}))["permissions"] == "none"


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_accepting_twice_does_not_apply_twice(editor: Editor) -> None:
    uri = editor.open(APP)
    proposal_id = await _propose(editor)
    await editor.command("tether.accept", {"id": proposal_id})
    error = await editor.command_error("tether.accept", {"id": proposal_id})
    assert error.code == REQUEST_FAILED  # a state, not a malformed argument
    assert "no pending hunks" in error.message
    assert editor.buffers[uri].count("five\n") == 1
    assert len(editor.edits) == 1


@pytest.mark.parametrize("editor", [FILES], indirect=True)
async def test_hunks_the_proposal_does_not_have_are_refused(editor: Editor) -> None:
    proposal_id = await _propose(editor)
    error = await editor.command_error("tether.accept", {"id": proposal_id, "hunks": [2]})
    assert error.code == INVALID_PARAMS
    assert "has no hunk 2" in error.message
    assert (editor.workspace / APP).read_text() == numbered(10)
