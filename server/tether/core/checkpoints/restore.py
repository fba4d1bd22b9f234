"""Turning "tree now" vs "tree then" into file operations, and doing them safely.

The plan is computed from `git diff-tree` between the snapshot of the present (taken just before)
and the target checkpoint, so every file a rollback overwrites or deletes is in a checkpoint first.
Paths the present snapshot does not contain (ignored, too large, excluded) are never written over:
they are reported as `kept`. Nested repositories (gitlinks) are never touched.

Writes go to a temp file under `.tether/tmp/` and are renamed into place, so a crash leaves each
file wholly old or wholly new; the journal in the store lets the next call finish the rollback.
Restored files are not fsynced one by one: a killed process loses nothing that reached the page
cache, and the journal (which is fsynced) makes any rollback cut short redo itself from the store.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.core.gitcmd import BlobReader, Git
from tether.core.placeholders import is_marked_placeholder
from tether.errors import CheckpointError

GITLINK = "160000"
SYMLINK = "120000"
EXEC = "100755"


@dataclass(frozen=True)
class Change:
    """One path differing between the present snapshot (old) and the target (new)."""

    path: str
    old_mode: str
    new_mode: str
    new_sha: str
    status: str  # A (only in target), D (only now), M, T


@dataclass(frozen=True)
class Ops:
    """What a rollback will do: restored = overwritten, created = written back, deleted."""

    restored: tuple[Change, ...]
    created: tuple[Change, ...]
    deleted: tuple[Change, ...]
    kept: tuple[str, ...]


def diff_trees(git: Git, old: str, new: str) -> list[Change]:
    """Raw recursive diff (no renames), parsed from NUL-separated output."""
    out = git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new).stdout
    fields = out.split(b"\0")
    changes: list[Change] = []
    i = 0
    while i + 1 < len(fields):
        meta = fields[i]
        if not meta.startswith(b":"):
            i += 1
            continue
        old_mode, new_mode, _old_sha, new_sha, status = meta[1:].decode("ascii").split(" ")
        path = os.fsdecode(fields[i + 1])
        changes.append(Change(path, old_mode, new_mode, new_sha, status[0]))
        i += 2
    return changes


def plan_ops(workspace: Path, changes: Iterable[Change]) -> Ops:
    """Classify the diff; anything that would destroy data not held in a checkpoint is kept."""
    restored: list[Change] = []
    created: list[Change] = []
    deleted: list[Change] = []
    kept: list[str] = []
    changes = list(changes)
    delete_paths = {c.path for c in changes if c.status == "D" and c.old_mode != GITLINK}
    for c in changes:
        if GITLINK in (c.old_mode, c.new_mode):
            kept.append(c.path)  # nested repositories and submodules are never modified
        elif c.status == "D":
            deleted.append(c)
        elif c.status == "A":
            if _blocked(workspace, c.path, delete_paths):
                kept.append(c.path)
            else:
                created.append(c)
        elif _blocked_parents(workspace, c.path, delete_paths):
            kept.append(c.path)
        else:
            restored.append(c)
    return Ops(tuple(restored), tuple(created), tuple(deleted), tuple(sorted(kept)))


def _parents(workspace: Path, rel: str, delete_paths: set[str]) -> Literal["clear", "replaced", "blocked"]:
    """What stands above rel: "clear" (real directories, or missing ones that are created),
    "replaced" (a file or symlink this rollback deletes: nothing is below it then) or "blocked"
    (a file or symlink it does not delete)."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        parent_rel = "/".join(parts[:depth])
        try:
            st = os.lstat(workspace / parent_rel)
        except FileNotFoundError:
            return "clear"  # missing parents are created
        except NotADirectoryError:
            return "blocked"
        if stat.S_ISDIR(st.st_mode):
            continue
        # a file or symlink in the way: fine only if the rollback deletes it (file -> dir change)
        return "replaced" if parent_rel in delete_paths else "blocked"
    return "clear"


def _blocked_parents(workspace: Path, rel: str, delete_paths: set[str]) -> bool:
    """True when a parent of rel is something other than a real directory we may write into."""
    return _parents(workspace, rel, delete_paths) == "blocked"


def _blocked(workspace: Path, rel: str, delete_paths: set[str]) -> bool:
    """A path to create must not hold anything the present snapshot lacks (ignored, too big)."""
    parents = _parents(workspace, rel, delete_paths)
    if parents != "clear":
        # "replaced": looking at rel now would look through the symlink this rollback deletes
        return parents == "blocked"
    target = workspace / rel
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if not stat.S_ISDIR(st.st_mode):
        # the sandbox's empty placeholder holds nothing to lose (snapshots leave it out)
        return not is_marked_placeholder(target, st)
    # a directory where a file goes back: only if every file below is deleted by this rollback
    for root, dirs, files in os.walk(target):
        dirs.sort()
        for name in files:
            rel_file = os.path.relpath(os.path.join(root, name), workspace).replace(os.sep, "/")
            if rel_file not in delete_paths:
                return True
        for name in list(dirs):
            full = os.path.join(root, name)
            if os.path.islink(full):
                rel_link = os.path.relpath(full, workspace).replace(os.sep, "/")
                if rel_link not in delete_paths:
                    return True
                dirs.remove(name)
    return False


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def apply_ops(git: Git, workspace: Path, ops: Ops) -> None:
    """Delete, then write; each write is temp file + rename in `.tether/tmp`."""
    tmp_dir = _private_tmp(workspace)
    touched_dirs: set[Path] = set()
    for c in sorted(ops.deleted, key=lambda c: c.path.count("/"), reverse=True):
        path = workspace / c.path
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            continue  # something else appeared there since the snapshot: leave it
        except OSError as exc:
            raise CheckpointError(f"rollback could not delete {c.path}: {exc.strerror}") from exc
        touched_dirs.add(path.parent)
    _remove_empty_dirs(workspace, touched_dirs)
    # directories standing where files come back (all their files were deleted above)
    for c in (*ops.created, *ops.restored):
        path = workspace / c.path
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_empty_tree(path)
    mask = _umask()
    writes = sorted((*ops.restored, *ops.created), key=lambda c: c.path)
    with BlobReader(git) as blobs:
        for n, c in enumerate(writes):
            _write_one(blobs, workspace, tmp_dir, c, n=n, mask=mask)


def _write_one(
    blobs: BlobReader, workspace: Path, tmp_dir: Path | None, c: Change, *, n: int, mask: int
) -> None:
    path = workspace / c.path
    data = blobs.read(c.new_sha)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _tmp_for(tmp_dir, path.parent, n)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if c.new_mode == SYMLINK:
            os.symlink(os.fsdecode(data), tmp)
        else:
            mode = _file_mode(path, executable=c.new_mode == EXEC, mask=mask)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        raise CheckpointError(f"rollback could not write {c.path}: {exc.strerror or exc}") from exc


def _file_mode(path: Path, *, executable: bool, mask: int) -> int:
    """Git records only the executable bit. An existing file keeps its other permission bits (a
    0600 secret stays 0600); a file written back gets the umask's, as `git checkout` does — also
    in place of the sandbox's read-only placeholder."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and not is_marked_placeholder(path, st):
        base = stat.S_IMODE(st.st_mode) & 0o666
        return base | ((base & 0o444) >> 2) if executable else base
    return (0o777 if executable else 0o666) & ~mask


def _private_tmp(workspace: Path) -> Path | None:
    """`.tether/tmp`, emptied, when `.tether` and `tmp` are real directories (a repository could
    ship `.tether` as a symlink to elsewhere: then temp files go beside their destination)."""
    tmp_dir = workspace / ".tether" / "tmp"
    for path in (tmp_dir.parent, tmp_dir):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
    for leftover in tmp_dir.iterdir():
        with contextlib.suppress(OSError):
            leftover.unlink()
    return tmp_dir


def _tmp_for(tmp_dir: Path | None, dest_dir: Path, n: int) -> Path:
    """A temp path on the destination's filesystem (rename must not cross devices)."""
    name = f"rollback-{os.getpid()}-{n}.tmp"
    try:
        if tmp_dir is not None and os.stat(tmp_dir).st_dev == os.stat(dest_dir).st_dev:
            return tmp_dir / name
    except OSError:
        pass
    return dest_dir / f".tether-{name}"


def _remove_empty_dirs(workspace: Path, dirs: set[Path]) -> None:
    """Remove directories our deletions emptied, walking up; never the workspace itself."""
    for start in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        d = start
        while d != workspace and workspace in d.parents:
            try:
                os.rmdir(d)
            except OSError:
                break
            d = d.parent


def _remove_empty_tree(path: Path) -> None:
    for root, dirs, _files in os.walk(path, topdown=False):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)
