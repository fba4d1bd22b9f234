"""The audit log: fields, hash chain, tampering, torn lines, failures, concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import datetime
from pathlib import Path

import pytest

from tether.core.audit import FIELDS, AuditLog, make_entry


def entry(tool: str = "bash_command", **extra: object) -> dict[str, object]:
    base = make_entry(
        tool=tool,
        input={"command": "ls"},
        result={"exit_code": 0},
        success=True,
        dry_run=False,
        duration_ms=12,
        conversation_id="conv-1",
        git_commit="abc123def456",
        error=None,
        decision={"allowed": True, "rule": "allow.ls", "reason": "read-only", "decidedBy": "policy"},
        sandbox={"backend": "bubblewrap"},
    )
    base.update(extra)
    return base


def test_entry_has_every_seed_field_in_order() -> None:
    e = make_entry(
        tool="t",
        input={},
        result=None,
        success=False,
        dry_run=True,
        duration_ms=0,
        conversation_id=None,
        git_commit=None,
        error="boom",
        decision=None,
        sandbox=None,
        now=datetime(2026, 1, 2, 15, 4, 5),
    )
    assert tuple(e) == FIELDS
    assert e["timestamp"] == "20260102_150405"
    assert e["time"].startswith("2026-01-02T15:04:05.000")


def test_append_read_and_chain(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for i in range(5):
        assert log.append(entry(duration_ms=i)) is None
    entries = log.read()
    assert [e["duration_ms"] for e in entries] == [0, 1, 2, 3, 4]
    assert entries[0]["prev_sha256"] is None
    assert all(len(e["prev_sha256"]) == 64 for e in entries[1:])
    assert [e["duration_ms"] for e in log.read(2)] == [3, 4]
    result = log.verify()
    assert result.ok
    assert result.checked == 5
    raw = (tmp_path / ".tether" / "tool_log.jsonl").read_bytes()
    assert raw.count(b"\n") == 5
    assert raw.endswith(b"\n")


def test_a_lone_surrogate_from_the_model_is_recorded_not_lost(tmp_path: Path) -> None:
    """Valid JSON input can carry "\\udc80"; UTF-8 cannot encode it, and the line must still land."""
    log = AuditLog(tmp_path)
    assert log.append(entry(input={"path": "a\udc80.py"})) is None
    assert log.append(entry()) is None
    assert log.read()[0]["input"] == {"path": "a\udc80.py"}
    assert log.verify().ok


def test_secrets_are_redacted_before_writing(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.append(entry(input={"command": "curl -H 'Authorization: Bearer sk-ant-api03-SECRETSECRET'"}))
    raw = (tmp_path / ".tether" / "tool_log.jsonl").read_text()
    assert "SECRETSECRET" not in raw
    assert "[REDACTED]" in raw


@pytest.mark.parametrize("victim", [0, 2, 3])
def test_verify_names_the_edited_line(tmp_path: Path, victim: int) -> None:
    log = AuditLog(tmp_path)
    for i in range(5):
        log.append(entry(duration_ms=i))
    path = tmp_path / ".tether" / "tool_log.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[victim] = lines[victim].replace(b'"success":true', b'"success":false')
    path.write_bytes(b"\n".join(lines))
    result = log.verify()
    assert not result.ok
    assert result.first_bad_line == victim + 1
    assert f"line {victim + 1}" in result.reason


def test_verify_detects_a_removed_line(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for i in range(4):
        log.append(entry(duration_ms=i))
    path = tmp_path / ".tether" / "tool_log.jsonl"
    lines = path.read_bytes().split(b"\n")
    del lines[1]
    path.write_bytes(b"\n".join(lines))
    result = log.verify()
    assert not result.ok
    assert result.first_bad_line == 1


def test_torn_last_line_is_skipped_and_the_next_append_starts_fresh(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.append(entry(duration_ms=1))
    path = tmp_path / ".tether" / "tool_log.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"timestamp":"2026010')  # a crash mid-write
    assert [e["duration_ms"] for e in log.read()] == [1]
    assert log.verify().ok
    assert log.append(entry(duration_ms=2)) is None
    assert [e["duration_ms"] for e in log.read()] == [1, 2]
    result = log.verify()
    assert result.ok
    assert result.torn_lines == (2,)


def test_failed_write_warns_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / ".tether").write_text("a file where the directory should be")
    warning = AuditLog(tmp_path).append(entry())
    assert warning is not None
    assert warning.startswith("Warning: failed to write audit log: ")


def test_unserialisable_values_are_stringified(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    assert log.append(entry(result={"path": Path("/x"), "set": {1}})) is None
    assert log.read()[0]["result"]["path"] == "/x"


def test_tether_dir_is_excluded_from_git(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.tmp")
    AuditLog(tmp_path).append(entry())
    AuditLog(tmp_path).append(entry())
    text = (tmp_path / ".git" / "info" / "exclude").read_text()
    assert text.startswith("*.tmp\n")
    assert text.count("/.tether/") == 1


def test_a_linked_worktree_excludes_it_in_the_common_git_dir(tmp_path: Path) -> None:
    """`.git` a file naming `main/.git/worktrees/wt`, whose `commondir` is `../..`: the exclude
    goes where git reads it, in the main repository's `info/`; a FIFO named `.git` is never read."""
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    AuditLog(worktree).append(entry())
    assert "/.tether/" in (tmp_path / "main" / ".git" / "info" / "exclude").read_text()
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / ".git")
    AuditLog(fifo).append(entry())  # returns: nothing waits for a writer
    assert len(AuditLog(fifo).read()) == 1


def _writer(workspace: str, n: int) -> None:
    log = AuditLog(Path(workspace))
    for i in range(n):
        assert log.append(entry(input={"command": "x" * (i * 997 % 20000), "pid": os.getpid()})) is None


def test_concurrent_writers_never_interleave_and_keep_the_chain(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 40)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    log = AuditLog(tmp_path)
    raw = (tmp_path / ".tether" / "tool_log.jsonl").read_bytes().split(b"\n")
    assert raw[-1] == b""
    for line in raw[:-1]:
        json.loads(line)
    assert len(log.read()) == 120
    assert log.verify().ok


def test_symlinked_state_dir_or_log_is_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".tether").symlink_to(elsewhere)
    warning = AuditLog(ws).append(entry())
    assert warning is not None
    assert "symlink" in warning
    assert list(elsewhere.iterdir()) == []
    ws2 = tmp_path / "ws2"
    (ws2 / ".tether").mkdir(parents=True)
    target = tmp_path / "victim.txt"
    target.write_text("keep\n")
    (ws2 / ".tether" / "tool_log.jsonl").symlink_to(target)
    assert AuditLog(ws2).append(entry()) is not None
    assert target.read_text() == "keep\n"
