"""Recognising the sandbox's placeholder files.

Why this is its own module: the sandbox makes an empty, read-only file marked with an xattr where
a protected path is missing (a mount needs a mount point), and checkpoints must never record one —
a checkpoint taken while a command runs would otherwise snapshot a file the user never had, and a
rollback would create it. Both sides need the same test; neither should import the other.

Why a registry besides the mark: a command in the sandbox can set the same xattr on a file of its
own. Were the mark enough, such a file would be left out of every checkpoint, and a rollback would
leave it behind. So checkpoints skip only the paths the sandbox itself listed, in a file in the
user's state directory (beside the workspace's lock, out of the sandbox's reach), and only while
the file there is empty — listed before it is made, it may not carry the mark yet. The mark decides
what the sandbox removes afterwards and what a rollback may replace.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tether.core.lockfiles import lock_file

PLACEHOLDER_XATTR = "user.tether.placeholder"


def is_marked_placeholder(path: str | os.PathLike[str], st: os.stat_result) -> bool:
    """An empty regular file without write permission that carries the sandbox's mark.

    `st` is the caller's `lstat` of `path`; the xattr is read only for files that pass the cheap
    checks. Only what may be removed or replaced asks this: the sandbox's cleanup, a rollback.
    """
    if not stat.S_ISREG(st.st_mode) or st.st_size != 0 or st.st_mode & 0o222:
        return False
    try:
        return os.getxattr(path, PLACEHOLDER_XATTR, follow_symlinks=False) == b"1"
    except OSError:
        return False


def _registry(workspace: Path) -> Path:
    return lock_file(str(workspace)).with_suffix(".placeholders")


def record_placeholders(workspace: Path, paths: Iterable[Path]) -> None:
    """Add `paths` to the workspace's registry: under a lock of its own (concurrent runs each add,
    none loses another's entries), through a unique temp file renamed into place (a checkpoint
    reading meanwhile sees the old list or the new one)."""
    registry = _registry(workspace)
    lock = os.open(registry.with_suffix(".placeholders-lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        listed = recorded_placeholders(workspace) | {str(p) for p in paths}
        fd, temp = tempfile.mkstemp(dir=registry.parent, prefix=registry.name + ".")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(b"".join(os.fsencode(p) + b"\0" for p in sorted(listed)))
            os.replace(temp, registry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    finally:
        os.close(lock)  # also releases the flock


def recorded_placeholders(workspace: Path) -> frozenset[str]:
    """The absolute paths the sandbox made placeholders at in `workspace` (empty when none)."""
    try:
        data = _registry(workspace).read_bytes()
    except OSError:
        return frozenset()
    return frozenset(os.fsdecode(p) for p in data.split(b"\0") if p)


def forget_placeholders(workspace: Path) -> None:
    """The last run out removed the placeholders: the registry goes too (the caller holds the
    workspace's lock exclusively, so no run is adding to it)."""
    with contextlib.suppress(OSError):
        _registry(workspace).unlink()
