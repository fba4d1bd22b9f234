"""The first snapshot of a git workspace starts from the user's own index.

Why: the first snapshot must record every file. From scratch that is reading each of them in
Python, hashing and compressing it into the store, then hashing it again for the stat data (20,000
files: 0.8 s, four times `git add -A`). The user's index already holds every tracked file's stat
data, its tree of directories, and objects the user's store keeps compressed. Adopted:
* every tracked file's blob id is **checked against the bytes on disk** (`git hash-object
  --no-filters`, in C): an index is only a cache of what was added or checked out, and a blob made
  through a conversion (Git LFS or git-crypt filter, an end-of-line rule, on this branch or one the
  user left, or since removed from the config) is not the file's bytes — a rollback would write the
  pointer or the ciphertext back. An entry that differs is dropped, and the snapshot's status adds
  the file as it is on disk. The index's stat data then makes that status skip every other file;
* the blobs and trees it names are copied from the user's object store into one pack of the
  store's, compressed as they are (`pack-objects --indexed-objects`, run beside the hashing). The
  store stays self-contained (no alternates): the user's `git gc` can never take an object a
  checkpoint needs.
Nothing of the user's is written: the index is read once, the object store is only read, no user
config is read. The copy keeps the index file's modification time (git's check for "racily
clean" entries compares against it). A marker file stands until every entry is checked and every
object it names is in the store: an index whose adoption did not finish (killed, interrupted,
failed) is thrown away by the next snapshot, never trusted.

Not adopted (the first snapshot starts from scratch, the log says why): entries marked
assume-unchanged or skip-worktree (the status would never look at those files) or unmerged; a
linked worktree or a workspace that is a folder inside the repository (the index's paths are not
the workspace's); a SHA-256 repository; a split index; anything git or the checks fail on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from tether.core.checkpoints.regenerated import REGENERATED_DIRS, regenerated_dir
from tether.core.checkpoints.store import GIT_STUCK_AFTER, Location, store_git, write_if_changed
from tether.core.config import CheckpointSettings
from tether.core.gitcmd import Git, head_commit
from tether.core.gitnames import git_can_store
from tether.errors import CheckpointError

log = logging.getLogger(__name__)

_GITLINK = b"160000"
_SYMLINK = b"120000"
_HEAD = 51  # "H 100644 <40 hex digits> 0": tag, mode, object id and stage in `ls-files -v -s`
_MAX_PATHSPECS = 1000
_WATCH = 0.5  # how often `finish` looks at the file git hashes now, while it waits
_READ_PAUSE = 0.005  # between reads of git's ids: about 900 of them, well within a pipe's 64 KiB
_WORK_PREFIX = ".index.adopt-"
T = TypeVar("T")


@dataclasses.dataclass(slots=True)
class _Entry:
    mode: bytes
    oid: bytes
    path: bytes


class Adoption:
    """The user's index, adopted as the private index while, on a thread of its own, its blob ids
    are checked against the files and its objects copied: the snapshot's status runs meanwhile.

    Until `finish` returns, a marker file says the private index may name objects the store lacks
    or blobs that are not the bytes on disk: `drop_unfinished` throws such an index away."""

    def __init__(self, loc: Location, settings: CheckpointSettings, entries: list[_Entry]) -> None:
        self.too_big: list[str] = []
        self._loc = loc
        self._git = store_git(loc, extra_config=())
        self._hasher: _Hasher | None = None
        self._checking = _Background(self._check_and_copy, settings.max_file_bytes, entries)

    def finish(self) -> list[str]:
        """Wait for the check and the copy; return the paths whose entry was not the file's bytes
        (taken out of the index: the caller adds them as they are on disk). Raises CheckpointError
        when the index cannot be used after all (it is gone again)."""
        try:
            if not self._wait_for_the_check():
                self._stop_hashing()  # the index is given up: the snapshot starts from scratch
            unverified = self._checking.result()
        except BaseException:
            self.abandon()
            raise
        _marker(self._loc).unlink()
        return unverified

    def _wait_for_the_check(self) -> bool:
        """Wait for the check and the copy: False after `GIT_STUCK_AFTER`, or as soon as git is seen
        twice in a row on the same file whose path no longer names what git was given. A FIFO put in a
        file's place since the thread looked at it makes `git hash-object` wait for a writer
        forever, also once the FIFO is removed or replaced. (A big file rewritten while git hashes
        it can look the same: the index is then given up for nothing, which costs only time.)"""
        deadline = time.monotonic() + GIT_STUCK_AFTER
        seen: tuple[int, bytes] | None = None
        while not self._checking.wait(_WATCH):
            hasher = self._hasher
            now = hasher.reading_a_changed_file() if hasher is not None else None
            if now is not None and now == seen:
                log.info("%s is no longer the file it was: the first checkpoint starts from scratch", now[1])
                return False
            seen = now
            if time.monotonic() > deadline:
                return False
        return True

    def abandon(self) -> None:
        """Stop and wait for the thread (it must not write the index once the caller lets the lock
        go, also through a second Ctrl-C), then drop the index."""
        self._stop_hashing()
        self._checking.wait_out()
        drop_unfinished(self._loc)

    def _stop_hashing(self) -> None:
        if self._hasher is not None:
            self._hasher.kill()

    def _check_and_copy(self, max_bytes: int, entries: list[_Entry]) -> list[str]:
        """Each file handed to `git hash-object` as soon as it is seen to be a regular file within
        the budget. Out of the index before the copy of the objects (never copied): files over the
        budget, and entries whose file is gone or of another type now (the status may have passed
        them already, trusting the entry: from scratch they would not be recorded either). The copy
        runs beside the hashing; entries that differ from their file go out of the index."""
        root = os.fsencode(self._loc.workspace) + b"/"
        files: list[_Entry] = []
        links: list[_Entry] = []
        gone: list[bytes] = []
        with _Hasher(self._git, root) as hasher:
            self._hasher = hasher
            for entry in entries:
                try:
                    st = os.lstat(root + entry.path)  # bytes, not pathlib: 2 us a path
                except OSError:
                    gone.append(entry.path)
                    continue
                if entry.mode == _SYMLINK and stat.S_ISLNK(st.st_mode):
                    links.append(entry)
                elif entry.mode != _SYMLINK and stat.S_ISREG(st.st_mode):
                    if st.st_size > max_bytes:
                        self.too_big.append(os.fsdecode(entry.path))
                    else:
                        files.append(entry)
                        hasher.add(entry.path, _identity(st))
                else:
                    gone.append(entry.path)
            if self.too_big or gone:
                _force_remove(self._git, [os.fsencode(p) for p in self.too_big] + gone)
            copying: _Background[None] = _Background(_copy_objects, self._loc, self._git)
            try:
                hashed = hasher.ids()
            finally:
                copying.wait_out()  # never left writing into the store after this returns
        unverified = [e.path for e, oid in zip(files, hashed, strict=True) if oid != e.oid]
        unverified += [e.path for e in links if _link_oid(root + e.path) != e.oid]
        copying.result()
        if unverified:
            _force_remove(self._git, unverified)
            log.info("%d entries of the user's index are not the bytes on disk", len(unverified))
        return [os.fsdecode(p) for p in unverified]


def adopt_user_index(loc: Location, settings: CheckpointSettings) -> Adoption | None:
    """Start making the user's index the private index (`Adoption.finish` completes it); None
    when it is not adopted (the reason is logged; the caller snapshots from scratch)."""
    _remove_copies(loc)
    work = loc.root / f"{_WORK_PREFIX}{os.getpid()}"
    reason = _unsuitable(loc)
    if reason is None:
        try:
            assert loc.user_git_dir is not None
            _copy_keeping_mtime(loc.user_git_dir / "index", work)
            outcome = _prepare(loc, settings, work)
            if not isinstance(outcome, str):
                _marker(loc).write_bytes(b"")
                os.replace(work, loc.index)
                return Adoption(loc, settings, outcome)
            reason = outcome
        except OSError as exc:
            reason = f"the index cannot be copied: {exc.strerror}"
        except CheckpointError as exc:
            reason = str(exc)
    work.unlink(missing_ok=True)
    drop_unfinished(loc)
    log.info("first checkpoint of %s starts from scratch: %s", loc.workspace, reason)
    return None


def drop_unfinished(loc: Location) -> None:
    """Throw away a private index whose adoption did not finish (killed, or failed): the next
    snapshot starts again."""
    if os.path.lexists(_marker(loc)):
        loc.index.unlink(missing_ok=True)
        (loc.root / "gitlinks").unlink(missing_ok=True)
        _marker(loc).unlink()


def _marker(loc: Location) -> Path:
    return loc.root / "adopting"


def _remove_copies(loc: Location) -> None:
    """Copies left by an adoption that was killed (the store's lock is held: none is running)."""
    with contextlib.suppress(OSError), os.scandir(loc.root) as entries:
        for entry in entries:
            if entry.name.startswith(_WORK_PREFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _unsuitable(loc: Location) -> str | None:
    """Why the user's index does not describe this workspace in this store's terms, or None."""
    gd = loc.user_git_dir
    if loc.kind != "git" or gd is None:
        return "not a git repository"
    if gd != loc.user_common_dir:
        return "a linked worktree"
    if loc.root != gd / "tether":
        return "the workspace is a folder inside the repository"
    if any(c in str(gd) for c in ':"\\\n'):
        return "the repository's path cannot be named as an alternate object directory"  # `:` splits it
    if not os.path.lexists(gd / "index"):
        return "no index yet"
    return _not_regular(gd / "index") or _not_regular(gd / "objects" / "info" / "alternates")


def _not_regular(path: Path) -> str | None:
    """Why git should not read `path` (a FIFO there would hang it), or None; a missing one is fine."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    return None if stat.S_ISREG(mode) else f"{path} is not a regular file"


def _copy_keeping_mtime(source: Path, target: Path) -> None:
    """One read of `source` (git replaces the index by rename, so an open file is whole), written
    to `target` with the modification time of what was read."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    target.write_bytes(b"".join(chunks))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def _prepare(loc: Location, settings: CheckpointSettings, work: Path) -> list[_Entry] | str:
    """Read the copy's entries and take out what a snapshot leaves out by rule. Returns the
    entries left to check against the files, or why the copy cannot be used."""
    git = dataclasses.replace(store_git(loc, extra_config=()), index_file=work)
    entries = _entries(git)
    if isinstance(entries, str):
        return entries
    leave = _left_out_by_rules(git, settings, entries)
    # A gitlink stays only over a repository whose commit git can read: the status passes one it
    # cannot read (no commit yet, a broken `.git` file) as unchanged, and its files would then be
    # in no checkpoint. Taken out, the status sees the folder as from scratch.
    root = loc.workspace
    gitlinks = [e.path for e in entries if e.mode == _GITLINK]
    leave.update(p for p in gitlinks if head_commit(root / os.fsdecode(p)) is None)
    if leave:
        _force_remove(git, sorted(leave))
    # The gitlinks the index keeps, for the snapshot: without this file it lists the whole index
    # to find them (130 ms on 250,000 entries). Gone with the index if the adoption is given up.
    kept = sorted(p for p in gitlinks if p not in leave)
    write_if_changed(loc.root / "gitlinks", b"".join(p + b"\0" for p in kept))
    if not leave and not gitlinks:
        return entries  # the common case, without a second pass over every entry
    return [e for e in entries if e.path not in leave and e.mode != _GITLINK]


def _entries(git: Git) -> list[_Entry] | str:
    """Every entry of the copied index, or why it cannot be used as it is."""
    listed = git.run("ls-files", "-z", "-v", "-s").stdout
    records = [r.partition(b"\t") for r in listed.split(b"\0")]
    if records.pop() != (b"", b"", b""):
        return "unexpected output from git ls-files"
    for head, tab, path in records:
        if len(head) != _HEAD or not tab:
            return "unexpected output from git ls-files"
        if head[0:2] != b"H " or head[-1:] != b"0":
            return f"{os.fsdecode(path)}: marked assume-unchanged or skip-worktree, or unmerged"
    refused = _refused_by_git(listed)
    if refused is not None:
        # written with `core.protectNTFS` off: the private index could never name it to drop it
        return f"{os.fsdecode(refused)}: a name git refuses to store"
    return [_Entry(head[2:8], head[9:49], path) for head, _tab, path in records]


def _refused_by_git(listed: bytes) -> bytes | None:
    """The first path in `ls-files -z -v -s` output that git refuses to store, if any.

    Why not each path in turn: 250,000 calls cost about 100 ms. Only a path holding `git` in some
    case or a `~` can be refused (git never writes an empty, `.` or `..` part into an index), and
    neither can appear in the tag, mode, object id or stage: the few records holding one (a
    `.gitignore`, `.github/`) are checked one by one."""
    lowered = listed.lower()
    for needle in (b"git", b"~"):
        at = lowered.find(needle)
        while at >= 0:
            start = listed.rfind(b"\0", 0, at) + 1
            end = listed.find(b"\0", at)
            head, _, path = listed[start:end].partition(b"\t")
            if not git_can_store(os.fsdecode(path), symlink=head[2:8] == _SYMLINK):
                return path
            at = lowered.find(needle, end)
    return None


def _left_out_by_rules(git: Git, settings: CheckpointSettings, entries: list[_Entry]) -> set[bytes]:
    """Tracked paths a snapshot from scratch leaves out: Tether's own `.tether/`, ignored build
    outputs (`regenerated`), `[checkpoints] exclude` patterns. An ignored tracked file elsewhere
    stays: from scratch it is recorded as an ignored file."""
    joined = b"\0" + b"\0".join(e.path for e in entries)
    leave: set[bytes] = set()
    if b"\0.tether" in joined:
        leave.update(e.path for e in entries if e.path == b".tether" or e.path.startswith(b".tether/"))
    names = REGENERATED_DIRS.union(settings.regenerated)
    if set(map(os.fsencode, names)).intersection(joined.replace(b"\0", b"/").split(b"/")):
        builds = sorted({d for e in entries if (d := regenerated_dir(os.fsdecode(e.path), names))})
        # only the entries inside such a directory are matched against the ignore rules
        limit = [f":(top,literal){d}/" for d in builds] if len(builds) <= _MAX_PATHSPECS else []
        listed = git.run("ls-files", "-z", "-c", "-i", "--exclude-standard", "--", *limit).stdout
        leave.update(p for p in listed.split(b"\0") if p and regenerated_dir(os.fsdecode(p), names))
    if settings.exclude:
        patterns = (f"--exclude={p}" for p in settings.exclude)
        leave.update(p for p in git.run("ls-files", "-z", "-c", "-i", *patterns).stdout.split(b"\0") if p)
    return leave


class _Background(Generic[T]):
    """`fn(*args)` on a thread of its own; `result()` waits and raises what it raised.

    Waits on an event, not `Thread.join`: a join interrupted by Ctrl-C marks a thread that is still
    running as stopped (CPython 3.11, bpo-45274), and a later join then returns at once."""

    def __init__(self, fn: Callable[..., T], *args: object) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn, *args), name="tether-adopt", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., T], *args: object) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the caller
            self._error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def wait_out(self) -> None:
        """Wait until `fn` has returned, whatever it raised, through any Ctrl-C meanwhile."""
        while True:
            try:
                self._done.wait()
                return
            except KeyboardInterrupt:
                continue

    def result(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


_Identity = tuple[int, int, int]


def _identity(st: os.stat_result) -> _Identity:
    """What tells one file from another at a path: the inode, and the time it was last changed.
    The inode alone is not enough: a file removed for a FIFO frees its inode number, and the file
    that takes the FIFO's place next often gets it back (ext4)."""
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class _Hasher:
    """`git hash-object --no-filters --stdin-paths` fed one path at a time: the blob id of each
    file's bytes exactly as on disk (in C), in order. A path git would not read back from its line
    as it is (`_plain_line`) gets none: its entry is read again by the snapshot."""

    def __init__(self, git: Git, root: bytes) -> None:
        self._proc = git.popen("hash-object", "--no-filters", "--stdin-paths")
        self._root = root
        self._plain: list[bool] = []
        self._handed: list[tuple[bytes, _Identity]] = []  # paths given to git, with what they named
        self._out: list[bytes] = []
        self._answered = 0  # the ids read back so far: git works on `_handed[_answered]`
        assert self._proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self._proc.stdout.fileno(),), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        while chunk := os.read(fd, 1 << 16):  # git flushes each id: the count follows its progress
            self._out.append(chunk)
            self._answered += chunk.count(b"\n")
            # Read in batches: woken for each id, this thread took the GIL from the thread that
            # feeds git, 250,000 times on 250,000 files (the feeding took 2.2-2.5 s, now 1.9 s).
            # The watch samples every 0.5 s, and git blocked on a file has flushed every id before.
            time.sleep(_READ_PAUSE)

    def __enter__(self) -> _Hasher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self._proc.wait()

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()

    def reading_a_changed_file(self) -> tuple[int, bytes] | None:
        """Which file git is reading now (its place in the order, its path) when its path no longer
        names the regular file that was handed to git (gone, of another type, another file, or
        that file changed since), else None. A FIFO that git is waiting on stays in its way when
        the path changes again."""
        index = self._answered
        if index >= len(self._handed):
            return None
        path, handed = self._handed[index]
        try:
            now = os.lstat(self._root + path)
        except OSError:
            return (index, path)
        same = stat.S_ISREG(now.st_mode) and _identity(now) == handed
        return None if same else (index, path)

    def add(self, path: bytes, identity: _Identity) -> None:
        plain = _plain_line(path)
        self._plain.append(plain)
        if plain:
            self._handed.append((path, identity))
            assert self._proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # git stopped: its exit code says so
                self._proc.stdin.write(path + b"\n")

    def ids(self) -> list[bytes | None]:
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        try:
            code = self._proc.wait(timeout=GIT_STUCK_AFTER)
        except subprocess.TimeoutExpired as exc:
            raise CheckpointError("git hash-object took too long") from exc
        self._reader.join()
        if code != 0:
            raise CheckpointError(f"git hash-object failed (exit {code})")
        found = b"".join(self._out).split(b"\n")
        if found.pop() != b"" or len(found) != sum(self._plain):
            raise CheckpointError("git hash-object gave an unexpected answer")
        ids = iter(found)
        return [next(ids) if plain else None for plain in self._plain]


def _plain_line(path: bytes) -> bool:
    """Whether git reads `path` back from a line as it is (it unquotes a leading `"` and drops the
    `\r` of a line ending in `\r\n`: `notes\r` would be taken for `notes`)."""
    return b"\n" not in path and not path.startswith(b'"') and not path.endswith(b"\r")


def _link_oid(path: bytes) -> bytes | None:
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(target) + target, usedforsecurity=False).hexdigest().encode()


def _copy_objects(loc: Location, git: Git) -> None:
    """Every blob and tree the copied index names, from the user's object store into one pack of
    the store's. Run in the store, the user's objects named as an alternate for this one command
    (read only: pack-objects writes its temporary files in the store, and no user config is read).
    `--window=0`: no delta search (the user's deltas are reused; loose objects go in whole, to be
    packed better by maintenance later)."""
    assert loc.user_common_dir is not None
    user_objects = str(loc.user_common_dir / "objects")
    reader = dataclasses.replace(git, extra_env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": user_objects})
    reader.run(
        "pack-objects", "-q", "--revs", "--indexed-objects", "--window=0",
        str(loc.store / "objects" / "pack" / "pack"),
        input=b"", timeout=GIT_STUCK_AFTER,
    )  # fmt: skip


def _force_remove(git: Git, paths: list[bytes]) -> None:
    git.run("update-index", "--force-remove", "-z", "--stdin", input=b"".join(p + b"\0" for p in paths))
