"""The audit log: `.tether/tool_log.jsonl`, one JSON object per tool call, tamper-evident.

Why these mechanics:

* **Whole lines or nothing.** Each entry is encoded first and written with a single `write()` on an
  `O_APPEND` descriptor, then fsynced, under an exclusive `flock`: two processes appending never
  interleave, and a crash can at worst leave one torn *last* line, which every reader skips.
* **Hash chain.** Each line carries `prev_sha256`, the SHA-256 of the previous line's exact bytes
  (torn fragments included, so they are covered too). Editing or deleting a line breaks the chain at
  the next line, and `verify()` names the first line where it breaks. The lock is what makes
  "read the last line, then append" atomic across processes.
* **Best effort.** The seed says a failed audit write must not block the tool: `append` never
  raises and returns `Warning: failed to write audit log: <err>` instead.
* **Redacted.** Entries pass through `tether.core.redact` before anything is encoded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tether.core.redact import redact

LOG_NAME = "tool_log.jsonl"
TIMESTAMP_FORMAT = "%Y%m%d_%H%M%S"  # the seed's Go layout 20060102_150405
FIELDS = (
    "timestamp",
    "time",
    "tool",
    "input",
    "result",
    "success",
    "dry_run",
    "duration_ms",
    "conversation_id",
    "git_commit",
    "error",
    "decision",
    "sandbox",
)
_TAIL_CHUNK = 65536


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of checking the hash chain; `first_bad_line` is 1-based."""

    ok: bool
    checked: int
    first_bad_line: int | None = None
    reason: str = ""
    torn_lines: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "first_bad_line": self.first_bad_line,
            "reason": self.reason,
            "torn_lines": list(self.torn_lines),
        }


def make_entry(
    *,
    tool: str,
    input: Any,
    result: Any,
    success: bool,
    dry_run: bool,
    duration_ms: int,
    conversation_id: str | None,
    git_commit: str | None,
    error: str | None,
    decision: Any,
    sandbox: Any,
    now: datetime | None = None,
) -> dict[str, Any]:
    """One audit entry with every field of the seed, in a stable order."""
    moment = (now or datetime.now()).astimezone()
    return {
        "timestamp": moment.strftime(TIMESTAMP_FORMAT),
        "time": moment.isoformat(timespec="milliseconds"),
        "tool": tool,
        "input": input,
        "result": result,
        "success": success,
        "dry_run": dry_run,
        "duration_ms": duration_ms,
        "conversation_id": conversation_id,
        "git_commit": git_commit,
        "error": error,
        "decision": decision,
        "sandbox": sandbox,
    }


def state_dir(workspace: Path) -> Path:
    """`.tether/` in the workspace, created, and kept out of git via `.git/info/exclude`."""
    path = Path(workspace) / ".tether"
    path.mkdir(exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        # a repository could ship `.tether` as a symlink so that our writes land elsewhere
        raise OSError(f"{path} is not a real directory (symlink?); refusing to write through it")
    _exclude_from_git(Path(workspace))
    return path


def _exclude_from_git(workspace: Path) -> None:
    from tether.core.gitlinks import common_git_dir  # the one reader of `.git` files

    common = common_git_dir(workspace / ".git")
    if common is None:
        return
    exclude = common / "info" / "exclude"
    with contextlib.suppress(OSError):
        current = exclude.read_bytes() if exclude.exists() else b""
        if {line.strip() for line in current.splitlines()} & {b"/.tether/", b".tether/", b".tether"}:
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        prefix = b"\n" if current and not current.endswith(b"\n") else b""
        fd = os.open(exclude, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, prefix + b"# tether's state (audit log, proposals)\n/.tether/\n")
        finally:
            os.close(fd)


def _sha(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def _last_line(fd: int) -> tuple[bytes | None, bool]:
    """(last line's bytes without newline or None if empty, whether the file ends with a newline)."""
    end = os.lseek(fd, 0, os.SEEK_END)
    if end == 0:
        return None, True
    pos = end
    buf = b""
    ends_nl: bool | None = None
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        if ends_nl is None:
            ends_nl = buf.endswith(b"\n")
        body = buf[:-1] if ends_nl else buf
        idx = body.rfind(b"\n")
        if idx >= 0:
            return body[idx + 1 :], bool(ends_nl)
    return (buf[:-1] if ends_nl else buf), bool(ends_nl)


class AuditLog:
    """Append-only JSONL log of one workspace."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        self.path = self.workspace / ".tether" / LOG_NAME

    def append(self, entry: dict[str, Any]) -> str | None:
        """Write one entry; returns None, or the warning text when the write failed (never raises)."""
        try:
            state_dir(self.workspace)
            clean = redact({k: v for k, v in entry.items() if k != "prev_sha256"})
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                last, ends_nl = _last_line(fd)
                clean["prev_sha256"] = _sha(last) if last is not None else None
                line = json.dumps(clean, ensure_ascii=False, separators=(",", ":"), default=str)
                # backslashreplace: a lone surrogate from the model becomes a JSON escape, not a lost line
                data = line.encode("utf-8", "backslashreplace") + b"\n"
                if not ends_nl:
                    data = b"\n" + data  # a torn tail stays its own (skipped) line
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(f"short write ({written} of {len(data)} bytes)")
                os.fsync(fd)
            finally:
                os.close(fd)  # closing releases the lock
        except Exception as exc:
            return f"Warning: failed to write audit log: {exc}"
        return None

    def _lines(self) -> list[bytes]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return lines

    def read(self, n: int | None = None) -> list[dict[str, Any]]:
        """The last n entries (all when None), oldest first; torn or unparsable lines are skipped."""
        entries: list[dict[str, Any]] = []
        for raw in self._lines():
            parsed = _parse(raw)
            if parsed is not None:
                entries.append(parsed)
        if n is not None:
            return entries[-n:] if n > 0 else []
        return entries

    def verify(self) -> VerifyResult:
        """Check the hash chain; the first line whose `prev_sha256` does not match is named."""
        lines = self._lines()
        torn: list[int] = []
        checked = 0
        prev: bytes | None = None
        for number, raw in enumerate(lines, start=1):
            parsed = _parse(raw)
            if parsed is None:
                torn.append(number)
                prev = raw
                continue
            expected = _sha(prev) if prev is not None else None
            if parsed.get("prev_sha256") != expected:
                if number == 1:
                    bad, reason = 1, "line 1: prev_sha256 must be null on the first line (lines were removed)"
                else:
                    bad = number - 1
                    reason = (
                        f"line {bad} was edited, or a line after it was removed "
                        f"(line {number} records a different hash for its predecessor)"
                    )
                return VerifyResult(False, checked, bad, reason, tuple(torn))
            checked += 1
            prev = raw
        return VerifyResult(ok=True, checked=checked, torn_lines=tuple(torn))


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


__all__ = ["FIELDS", "AuditLog", "VerifyResult", "make_entry", "state_dir"]
