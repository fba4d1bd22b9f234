"""The file tools and proposals through the real gate: permission → dry run/proposal → accept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.core.config import EffectiveConfig
from tether.core.gate import Gate
from tether.core.session import FaceOverrides, open_session


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    return root


def gate(root: Path, perms: str) -> Gate:
    return open_session(root, FaceOverrides(permissions=perms), config=EffectiveConfig()).gate


def test_definitions_include_every_file_tool(repo: Path) -> None:
    names = {d["name"] for d in gate(repo, "none").tool_definitions()}
    assert {"read_file", "list_files", "grep", "write_file", "edit_file", "git_operation"} <= names


def test_without_write_an_edit_is_a_proposal_and_accept_applies_it(repo: Path) -> None:
    g = gate(repo, "read")
    new = (repo / "app.py").read_text().replace("line 3\n", "LINE 3\n").replace("line 25\n", "LINE 25\n")
    result = g.call("write_file", {"path": "app.py", "content": new})
    assert result.ok
    assert result.dry_run
    assert result.proposal is not None
    assert result.text.startswith("=== app.py (dry-run) ===\n--- old\n+++ new\n@@ -1,6 +1,6 @@\n")
    assert result.text.endswith("(dry-run: use --tool=write to apply)")
    assert "LINE 3" not in (repo / "app.py").read_text()

    accepted = g.accept(result.proposal.id, [2])
    assert accepted.ok, accepted.text
    assert accepted.proposal is not None
    assert accepted.proposal.state == "partially_accepted"
    original = "".join(f"line {i}\n" for i in range(1, 31))
    assert (repo / "app.py").read_text() == original.replace("line 25\n", "LINE 25\n")

    # after a restart, the proposal is still there with its decisions
    again = gate(repo, "read")
    stored = again.proposals.get(result.proposal.id)
    assert [h.state for h in stored.hunks] == ["pending", "accepted"]
    rejected = again.reject(result.proposal.id)
    assert rejected.ok
    assert again.proposals.get(result.proposal.id).summary_for_model() == (
        f"Proposal {result.proposal.id} (app.py): hunk 2 applied; hunk 1 rejected by the user."
    )


def test_with_write_the_edit_lands_and_seed_errors_come_back_exactly(repo: Path) -> None:
    g = gate(repo, "read,write")
    done = g.call(
        "edit_file", {"command": "str_replace", "path": "app.py", "old_str": "line 7\n", "new_str": "seven\n"}
    )
    assert done.ok, done.text
    assert not done.dry_run
    assert "seven\n" in (repo / "app.py").read_text()
    missing = g.call(
        "edit_file", {"command": "str_replace", "path": "app.py", "old_str": "nope", "new_str": ""}
    )
    assert not missing.ok
    assert missing.text == "Error: old_str not found in file"
    twice = g.call(
        "edit_file", {"command": "str_replace", "path": "app.py", "old_str": "line 1", "new_str": ""}
    )
    assert twice.text == (
        "Error: old_str found 11 times at lines 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19. "
        "Provide more context for unique match."
    )
    exists = g.call("edit_file", {"command": "create", "path": "app.py", "content": "x"})
    assert exists.text == "Error: File already exists. Use str_replace to edit existing files."


def test_stale_proposal_through_the_gate(repo: Path) -> None:
    g = gate(repo, "none")
    result = g.call(
        "edit_file",
        {"command": "str_replace", "path": "app.py", "old_str": "line 20\n", "new_str": "twenty\n"},
    )
    assert result.proposal is not None
    (repo / "app.py").write_text((repo / "app.py").read_text().replace("line 20\n", "user's 20\n"))
    accepted = g.accept(result.proposal.id)
    assert not accepted.ok
    assert "is stale" in accepted.text
    assert g.proposals.get(result.proposal.id).state == "stale"
    assert "twenty" not in (repo / "app.py").read_text()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "a.txt", "content": "x" * 4_000_001}, "tool input is too large"),
        ({"path": "a.txt", "content": ["nested", {"deep": "x" * 4_000_001}]}, "tool input is too large"),
        ({"path": "a.txt", "content": "ok\udc80"}, "unpaired UTF-16 surrogate"),
        ({"path": "a.txt", "content": "ok", "extra": [{"k\udfff": 1}]}, "unpaired UTF-16 surrogate"),
    ],
)
def test_input_no_file_can_hold_is_refused_before_any_tool_runs(
    repo: Path, args: dict[str, object], expected: str
) -> None:
    result = gate(repo, "all").call("write_file", args)
    assert not result.ok
    assert expected in result.text
    assert not (repo / "a.txt").exists()
    assert gate(repo, "all").log()[-1]["success"] is False
