"""The CLI surface evaluation relies on: checkpoint, checkpoints, rollback, log (real processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _checkpoint_support import init_repo, snapshot_files, tether, user_git_state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "r", {"a.txt": "original\n", "keep.txt": "k\n"})


def test_checkpoint_list_rollback_and_log(repo: Path, tmp_path: Path) -> None:
    state = user_git_state(repo)
    made = tether(repo, "checkpoint", "--message", "before experiment", home=tmp_path)
    assert made.returncode == 0, made.stderr
    cp_id = made.stdout.strip()
    assert len(cp_id) == 12

    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    listing = tether(repo, "checkpoints", "--json", home=tmp_path)
    data = json.loads(listing.stdout)["checkpoints"]
    assert data[0]["id"] == cp_id
    assert data[0]["files_changed"] == ["a.txt", "new.txt"]
    human = tether(repo, "checkpoints", home=tmp_path).stdout
    assert cp_id in human
    assert "2 file(s)" in human

    dry = tether(repo, "rollback", "--dry-run", home=tmp_path)
    assert dry.returncode == 0
    assert "restore  a.txt" in dry.stdout
    assert "delete   new.txt" in dry.stdout
    assert (repo / "new.txt").exists()

    for answer in ("", "n\n", "whatever\n"):  # EOF, no, anything else: nothing happens
        asked = tether(repo, "rollback", stdin=answer, home=tmp_path)
        assert asked.returncode == 1
        assert "Nothing changed" in asked.stdout
        assert (repo / "a.txt").read_text() == "changed\n"

    done = tether(repo, "rollback", "1", "--yes", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (repo / "a.txt").read_text() == "original\n"
    assert not (repo / "new.txt").exists()

    undo = tether(repo, "rollback", stdin="y\n", home=tmp_path)
    assert undo.returncode == 0, undo.stderr
    assert (repo / "a.txt").read_text() == "changed\n"
    assert (repo / "new.txt").exists()

    back = tether(repo, "rollback", "--to", cp_id, "--yes", home=tmp_path)
    assert back.returncode == 0
    assert (repo / "a.txt").read_text() == "original\n"

    log = tether(repo, "log", home=tmp_path)
    assert log.returncode == 0
    assert "rollback" in log.stdout
    assert "checkpoint" in log.stdout
    entries = [json.loads(line) for line in tether(repo, "log", "--json", home=tmp_path).stdout.splitlines()]
    assert {"timestamp", "time", "tool", "success", "dry_run", "git_commit", "prev_sha256"} <= set(entries[0])
    assert len(tether(repo, "log", "2", "--json", home=tmp_path).stdout.splitlines()) == 2
    verify = tether(repo, "log", "--verify", home=tmp_path)
    assert verify.returncode == 0
    assert "intact" in verify.stdout
    assert user_git_state(repo) == state


def test_log_verify_names_an_edited_line(repo: Path, tmp_path: Path) -> None:
    for _ in range(3):
        tether(repo, "checkpoint", home=tmp_path)
    path = repo / ".tether" / "tool_log.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"ok":true', '"ok":false')
    assert '"ok":false' in lines[1]
    path.write_text("\n".join(lines) + "\n")
    verify = tether(repo, "log", "--verify", home=tmp_path)
    assert verify.returncode == 1
    assert "line 2" in verify.stdout


def test_rollback_errors_are_clear(repo: Path, tmp_path: Path) -> None:
    none_yet = tether(repo, "rollback", "--yes", home=tmp_path)
    assert none_yet.returncode == 2
    assert "no checkpoints" in none_yet.stderr
    tether(repo, "checkpoint", home=tmp_path)
    too_far = tether(repo, "rollback", "5", "--yes", home=tmp_path)
    assert too_far.returncode == 2
    assert "only 1" in too_far.stderr
    bad_id = tether(repo, "rollback", "--to", "nope", "--yes", home=tmp_path)
    assert "no checkpoint 'nope'" in bad_id.stderr


def test_git_enabled_false_disables_with_a_warning(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "config" / "tether").mkdir(parents=True)
    (tmp_path / "config" / "tether" / "config.toml").write_text("[tool_safety]\ngit_enabled = false\n")
    made = tether(repo, "checkpoint", home=tmp_path)
    assert made.returncode != 0
    assert "rollback is unavailable" in made.stderr
    listed = tether(repo, "checkpoints", home=tmp_path)
    assert "disabled" in listed.stderr


def test_a_project_cannot_switch_checkpoints_off(repo: Path, tmp_path: Path) -> None:
    """The repository is not trusted: its `.tether/config.toml` may not take your way back away."""
    (repo / ".tether").mkdir()
    (repo / ".tether" / "config.toml").write_text(
        "[tool_safety]\ngit_enabled = false\n[checkpoints]\nexclude = ['*']\nkeep_count = 1\n"
    )
    made = tether(repo, "checkpoint", home=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "git_enabled = False` is ignored" in made.stderr
    assert "`checkpoints.exclude` is ignored" in made.stderr
    assert "a.txt" in snapshot_files(repo, made.stdout.strip())  # `*` excluded nothing


def test_listing_still_works_mid_merge_and_rollback_is_refused(repo: Path, tmp_path: Path) -> None:
    made = tether(repo, "checkpoint", home=tmp_path).stdout.strip()
    (repo / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n")
    listed = tether(repo, "checkpoints", home=tmp_path)
    assert listed.returncode == 0
    assert made in listed.stdout
    assert "middle of a merge" in listed.stderr
    refused = tether(repo, "rollback", "--yes", home=tmp_path)
    assert refused.returncode == 2
    assert "middle of a merge" in refused.stderr
