"""Checkpoints: a snapshot of the working tree before every mutating call, and rollback.

Why this design (see docs/checkpoints.md for the user's view):

* A checkpoint is a commit in a *private* store (`tether.core.checkpoints.store`) built from a
  *private* index file. The user's HEAD, index, branches, stash, reflog and config are never
  written; nothing in the work tree is renamed or moved aside.
* The private index persists between checkpoints, so git's stat cache makes the next one cost
  about a `git status`: one `git status --ignored=matching` on the private index names what changed
  (ignored files included), only those paths are given to `git update-index`, then `write-tree`,
  `commit-tree`, and one `update-ref` transaction. The store's first snapshot starts from a copy of
  the user's own index where its blob ids are the bytes on disk (`seed`); otherwise (no private
  index yet) it streams every file through `git fast-import` into a single pack (`_import`).
* Each checkpoint is a root commit under `refs/tether/checkpoints/<seq>`, so deleting the ref of an
  old one (retention) can never break a newer one, and the store's own refs keep every listed
  checkpoint's objects alive.
* Rollback snapshots the present first (so it can be undone: `rollback 1` right after a rollback
  returns to where you were), journals its target, restores files by temp file + rename, and an
  interrupted rollback is finished by the next call.
"""

from __future__ import annotations

import builtins
import dataclasses
import heapq
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from tether.core import fsutil
from tether.core.checkpoints import restore, seed
from tether.core.checkpoints.regenerated import REGENERATED_DIRS, regenerated_dir
from tether.core.checkpoints.store import (
    GIT_STUCK_AFTER,
    Location,
    ensure_store,
    ensure_user_exclude,
    locate,
    locked,
    refuse_unsafe_state,
    store_git,
    sync_excludes,
    user_excludes_file,
    write_if_changed,
)
from tether.core.config import CheckpointSettings, user_state_dir
from tether.core.gitcmd import Git, head_commit
from tether.core.gitnames import git_can_store, refused_part
from tether.core.placeholders import recorded_placeholders
from tether.core.redact import redact_text
from tether.errors import CheckpointError, CheckpointRefused

REF_PREFIX = "refs/tether/checkpoints/"
DISABLED_MESSAGE = (
    "checkpoints are disabled (git_enabled = false): this call was not snapshotted "
    "and rollback is unavailable for it"
)
_UNPROCESSABLE = re.compile(rb"(?m)^fatal: Unable to process path (.+)$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
MAINTENANCE_EVERY = 10
PRUNE_GRACE = "1.hour.ago"
"""Unreachable objects younger than this are kept: a checkpoint being written may still need them."""
_REFRESH_STAT_DATA = {"GIT_OPTIONAL_LOCKS": "1"}
"""Let the store's `git status` write back the stat data it refreshed. Why: a file whose stat data
changed but not its bytes (the repository copied or restored, a branch checked out and back, a
file saved unchanged, a rollback's rewrite) is otherwise read and hashed again by every checkpoint,
since nothing else updates its entry: 20,000 such files made each checkpoint 3.6 times slower
(190 ms against 53 ms). Only our private index is written, under the store's lock."""


@dataclass(frozen=True)
class Checkpoint:
    """One snapshot. `id` is what users type (`--to ID`); `ref` keeps it alive in the store."""

    id: str
    ref: str
    commit: str
    time: str
    tool: str
    message: str
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    uncovered_paths: tuple[str, ...] | None = None  # None: a checkpoint from before they were kept

    @property
    def uncovered(self) -> tuple[str, ...]:
        """Skipped paths that rollback could neither restore nor delete and nobody chose to leave
        out: files over the size budget (or a folder of them), nested repositories without a commit
        and names git cannot store (not the user's `exclude:` patterns, not `regenerated:` build
        outputs). Kept apart from `skipped`, whose tags a file could be named like: a file called
        `exclude:x.db` is as much the user's as any other."""
        if self.uncovered_paths is not None:
            return self.uncovered_paths
        return tuple(s for s in self.skipped if not s.startswith(("exclude:", "regenerated:")))

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "ref": self.ref,
            "commit": self.commit,
            "time": self.time,
            "tool": self.tool,
            "message": self.message,
            "skipped": list(self.skipped),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class RollbackPlan:
    """Exactly what a rollback writes: restored = existing files overwritten with the old content,
    created = files that no longer exist and are written back, deleted = files created since.
    `kept` lists paths left alone because writing them would destroy data no checkpoint holds
    (ignored or too-large files in the way, nested repositories)."""

    target: Checkpoint
    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    created: tuple[str, ...]
    kept: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.restored or self.deleted or self.created)

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target.to_json(),
            "restored": list(self.restored),
            "deleted": list(self.deleted),
            "created": list(self.created),
            "kept": list(self.kept),
        }


@dataclass(frozen=True)
class _Staged:
    tree: str
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]
    uncovered: tuple[str, ...]


class Checkpoints:
    """Checkpoints of one workspace. Safe to use from several processes (a file lock serialises)."""

    def __init__(self, workspace: Path, settings: CheckpointSettings) -> None:
        self.workspace = Path(workspace).resolve()
        self.settings = settings
        self._loc: Location | None = None
        self._git: Git | None = None
        self._user_excludes: tuple[Path, ...] | None = None
        self.packing_due = False
        """Set when a checkpoint's retention ran: the caller should `pack_objects()` off its path."""

    # --- public API --------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def create(self, tool: str, *, message: str | None = None) -> Checkpoint:
        """Snapshot the whole working tree now; raises CheckpointError/CheckpointRefused."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            self._recover_locked(loc, git)
            cp = self._create_locked(loc, git, tool, message)
            if _seq_of(cp.ref) % MAINTENANCE_EVERY == 0:
                self._expire_locked(git)
                self.packing_due = True
            return cp

    def list(self) -> list[Checkpoint]:
        """Every kept checkpoint, newest first (read only; no lock needed for a ref listing)."""
        if not self.settings.enabled:
            return []
        loc = self._location()
        if not (loc.store / "HEAD").is_file():
            return []
        return _list_refs(store_git(loc))

    def get(self, ident: str) -> Checkpoint:
        """A checkpoint by id, unique id prefix (4+ characters), ref name or sequence number."""
        return _find(self.list(), ident)

    def files_changed_since(self, checkpoint: Checkpoint) -> builtins.list[str]:
        return self.files_changed_since_many([checkpoint])[checkpoint.id]

    def files_changed_since_many(
        self, checkpoints: builtins.list[Checkpoint]
    ) -> dict[str, builtins.list[str]]:
        """Paths that differ between each checkpoint and the present (one snapshot of the present)."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            present = self._stage(loc, git).tree
            result: dict[str, builtins.list[str]] = {}
            for cp in checkpoints:
                out = git.run("diff-tree", "-r", "-z", "--no-renames", "--name-only", cp.commit, present)
                result[cp.id] = [os.fsdecode(p) for p in out.stdout.split(b"\0") if p]
            return result

    def plan_rollback(self, *, steps: int | None = None, to: str | None = None) -> RollbackPlan:
        """Dry run: exactly the files a rollback with the same arguments would touch."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            if loc.journal.exists():
                raise CheckpointError(
                    "a rollback was interrupted (Tether was stopped half-way); the next checkpoint or "
                    "rollback completes it first, so a preview now would be wrong. Run "
                    "`tether checkpoint` to complete it, then preview again."
                )
            target = self._resolve(git, steps, to)
            present = self._stage(loc, git).tree
            ops = restore.plan_ops(self.workspace, restore.diff_trees(git, present, target.commit))
            return _plan(target, ops)

    def rollback(self, *, steps: int | None = None, to: str | None = None) -> tuple[RollbackPlan, Checkpoint]:
        """Restore the tree of a checkpoint; returns the plan done and the checkpoint of the present
        taken first (roll back to it, or `rollback 1`, to undo)."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            self._recover_locked(loc, git)
            target = self._resolve(git, steps, to)
            plan, before = self._rollback_locked(loc, git, target, tool="rollback")
            return plan, before

    def recover(self) -> Checkpoint | None:
        """Finish a rollback interrupted by a crash; returns the checkpoint taken before, if any."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            return self._recover_locked(loc, git)

    def prune(self) -> builtins.list[Checkpoint]:
        """Apply retention and pack now (also done automatically every few checkpoints)."""
        self._require_enabled()
        loc = self._location()
        with locked(loc):
            git = self._prepare(loc)
            doomed = self._expire_locked(git)
        self.pack_objects()
        return doomed

    def pack_objects(self) -> None:
        """Pack and drop unreachable objects: the slow part of maintenance, run off the call's path.

        Why without the lock, so it never holds up a checkpoint (a full repack of a 20k-file store
        took 6.8 s inside one): each step is safe beside a checkpoint being written. Loose objects
        are packed incrementally (`repack -d` only drops loose copies already in a pack); a full
        repack puts unreachable objects in a cruft pack instead of dropping them; and only objects
        unreachable for an hour are pruned — git freshens an object's time whenever a snapshot writes
        it again, so nothing a checkpoint in flight uses is that old. A kill at any point loses
        nothing: git writes a pack completely before it removes what it replaces.
        """
        self.packing_due = False
        if not self.settings.enabled:
            return
        loc = self._location()
        if not (loc.store / "HEAD").is_file():
            return
        # Not `_prepare`: it syncs the excludes and may drop the private index, which a checkpoint
        # holding the lock could be using right now (its `write-tree` would then see an empty tree).
        refuse_unsafe_state(loc)
        git = store_git(loc)
        counts = _count_objects(git)
        if counts.get("packs", 0) > 10:
            git.run("repack", "-d", "-q", "--cruft", f"--cruft-expiration={PRUNE_GRACE}")
        elif counts.get("count", 0) > 2000:
            git.run("repack", "-d", "-q")
        git.run("prune", f"--expire={PRUNE_GRACE}")

    # --- internals ---------------------------------------------------------------------------

    def _require_enabled(self) -> None:
        if not self.settings.enabled:
            raise CheckpointError(DISABLED_MESSAGE)

    def _location(self) -> Location:
        if self._loc is None:
            if not self.workspace.is_dir():
                raise CheckpointRefused(f"workspace {self.workspace} is not a directory")
            self._loc = locate(self.workspace, user_state_dir())
        return self._loc

    def _prepare(self, loc: Location) -> Git:
        refuse_unsafe_state(loc)
        ensure_store(loc)
        if self._user_excludes is None:
            found = user_excludes_file(loc)
            self._user_excludes = (found,) if found is not None else ()
        # First, so that the store's copy of the user's info/exclude already holds the line it adds
        # (after, the next checkpoint saw changed rules and rebuilt the whole private index)
        ensure_user_exclude(loc)
        if sync_excludes(loc, self.settings.exclude, self._user_excludes):
            # ignore rules changed: entries the private index holds may now be excluded, so rebuild
            loc.index.unlink(missing_ok=True)
        if self._git is None:
            self._git = store_git(loc)
        return self._git

    def _stage(self, loc: Location, git: Git, *, adopt: bool = True) -> _Staged:
        """Bring the private index up to date with the work tree; return its tree id.

        One walk of the work tree: `git status` on the private index names what changed, what is
        new and (`--ignored=matching`) what is ignored, a wholly ignored directory once. The
        changed paths go to `git update-index` by name: it looks each one up in the index, where
        `git add` with pathspecs matches every pathspec against every entry (paths x entries).
        The store's first snapshot starts from the user's own index where it can (`seed`).
        """
        seed.drop_unfinished(loc)
        adoption = None
        if adopt and not loc.index.exists() and not _has_checkpoints(git):
            adoption = seed.adopt_user_index(loc, self.settings)
        status_args = (
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
            "--no-renames", "--ignore-submodules=dirty",
        )  # fmt: skip
        # The status refreshes the private index's stat data, as the user's own `git status` does
        # for the user's index, except while the adoption's thread may write that index.
        refresh = _REFRESH_STAT_DATA if adoption is None else None
        unverified: list[str] = []
        try:
            try:
                status = git.run(*status_args, timeout=GIT_STUCK_AFTER, env=refresh)
            except CheckpointError as exc:
                if "index" not in str(exc) or adoption is not None:
                    raise
                # the private index is only a cache (e.g. torn by a power cut): rebuild it from scratch
                loc.index.unlink(missing_ok=True)
                status = git.run(*status_args, timeout=GIT_STUCK_AFTER, env=refresh)
            if adoption is not None:
                # entries the user's index got wrong are out of it now: recorded as they are on disk
                unverified = adoption.finish()
        except CheckpointError:
            if adoption is None:
                raise
            adoption.abandon()
            return self._stage(loc, git, adopt=False)  # from scratch
        except BaseException:
            if adoption is not None:
                adoption.abandon()  # its thread must not write the index once the lock is let go
            raise
        _refuse_unreadable(status.stderr)
        fresh = not loc.index.exists()  # the first snapshot, or a rebuild: status wrote no index
        candidates, gone, ignored_listing = _parse_status(status.stdout)
        gitlinks = set() if fresh else _recorded_gitlinks(loc, git)
        # A nested repository whose `.git` was removed is a plain directory now, but git's status
        # says nothing about a gitlink it cannot look into: its files would never be snapshotted.
        gone += [p for p in sorted(gitlinks) if _lost_its_repository(f"{self.workspace}/{p}")]
        ignored, regenerated = self._ignored_files(git, ignored_listing)
        candidates += ignored
        big: list[str] = []
        if adoption is not None:
            known = set(candidates)
            candidates += [p for p in unverified if p not in known]
            big += adoption.too_big
        if gone:
            # first, and whatever stands on disk: `d/x` (indexed) may lie beyond a symlink `d` now,
            # which update-index refuses to look at, and `d` may enter the index as a file next
            _force_remove(git, gone)
            # A directory where the index held a file, a symlink or a repository: git showed none of
            # its ignored files (or, for a repository, nothing at all). Look again, inside those only.
            now_dirs = [p for p in gone if _is_real_dir(f"{self.workspace}/{p}")]
            if now_dirs:
                again = git.run(*status_args, "--", *(f":(top,literal){d}" for d in now_dirs))
                more, _, more_ignored = _parse_status(again.stdout)
                more_files, more_regenerated = self._ignored_files(
                    git, [p for p in more_ignored if p not in ignored_listing]
                )
                known = set(candidates)
                candidates += [p for p in (*more, *more_files) if p not in known]
                regenerated += [d for d in more_regenerated if d not in regenerated]
        add: list[str] = []
        nested: list[str] = []
        heads: dict[str, str] = {}  # nested repositories with a commit: recorded as gitlinks
        # The sandbox's placeholders, for a command running now: never recorded, and out of the
        # index whatever the status says (one recorded earlier, unchanged, is not in the status).
        placeholders = self._placeholders()
        unstorable: list[str] = []
        symlink_only: list[str] = []
        for i, entry in enumerate(candidates):
            rel = entry.rstrip("/")
            candidates[i] = rel
            if rel in placeholders:
                continue  # removed from the index below
            # status names an untracked nested repository `d/`; a gitlink whose commit moved, or a
            # tracked file a repository replaced (`T`), by its name only
            repository = entry.endswith("/")
            if not repository:
                try:
                    st = os.lstat(f"{self.workspace}/{rel}")  # not pathlib: 10 us a path on 250,000
                except OSError:
                    add.append(rel)  # deleted since the status: `--remove` records the deletion
                    continue
                if not git_can_store(rel, symlink=stat.S_ISLNK(st.st_mode)):
                    # `.GIT/x`, `git~1`: update-index would drop it without a word, read-tree fail.
                    # Named by its refused part: `.GIT` once, not each of its 30,000 files.
                    unstorable.append(refused_part(rel, symlink=stat.S_ISLNK(st.st_mode)))
                    if git_can_store(rel):
                        # refused as a symlink only (`.gitmodules`): the index may still hold the
                        # file it was, which would stay in every snapshot
                        symlink_only.append(rel)
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size > self.settings.max_file_bytes:
                    big.append(rel)
                    continue
                repository = stat.S_ISDIR(st.st_mode) and os.path.lexists(f"{self.workspace}/{rel}/.git")
            if not repository:
                add.append(rel)
            elif not git_can_store(rel):
                unstorable.append(refused_part(rel))
            elif (head := head_commit(self.workspace / rel)) is not None:
                add.append(rel)
                heads[rel] = head  # listed with the gitlinks, so that losing its `.git` later is seen
            else:
                nested.append(rel)  # would be taken for a plain directory: keep out
        # A path before anything under it: `d` (a file in the index, a directory now) leaves the
        # index before `d/x` enters it.
        add.sort(key=os.fsencode)
        vanished: list[str] = []
        if fresh and add and not _has_checkpoints(git):
            # the store's first snapshot. A rebuild (ignore rules changed, index lost) finds
            # nearly every object in the store already, and update-index hashes each file once
            # where the import reads it twice (20k files: 460 against 560 ms)
            nested += self._import(git, add, heads)
        else:
            more_nested, vanished, refused = _update_index(git, add, self.workspace)
            nested += more_nested
            unstorable += refused
        big = sorted(set(big))  # an adopted one is also untracked in the status now
        big_files = set(big)
        unstorable = sorted(set(unstorable))
        removals = big + nested + vanished + symlink_only + sorted(placeholders)
        gitlinks.update(heads)
        gitlinks.difference_update(gone, removals)
        write_if_changed(loc.root / "gitlinks", b"".join(os.fsencode(p) + b"\0" for p in sorted(gitlinks)))
        if any(p == ".gitignore" or p.endswith("/.gitignore") for p in candidates):
            # a directory that just became ignored and is a build output leaves the snapshot
            listed = git.run("ls-files", "-z", "-c", "-i", "--exclude-standard").stdout
            names = self.settings.regenerated
            removals += [
                path for p in listed.split(b"\0") if p and regenerated_dir(path := os.fsdecode(p), names)
            ]
        if removals:
            _force_remove(git, removals)
        tree = git.run("write-tree").stdout.decode("ascii").strip()
        warnings: list[str] = []
        limit_mb = self.settings.max_file_bytes / 1_000_000
        # a folder of such files is named, and held, once: 3,500 files of a data folder were 3,500
        # read-only mounts for each command, past what bubblewrap takes (9,000 arguments)
        by_folder = _by_folder(str(self.workspace), big)
        held_big = _by_folder_up_to(by_folder, _HELD_AT_MOST)
        if big:
            warnings.append(
                f"not snapshotted (over {limit_mb:g} MB; rollback will neither restore nor delete them): "
                + _named([p if p in big_files else f"{p}/ (every file in it)" for p in by_folder])
            )
        if held_big != by_folder:
            warnings.append(
                f"{len(big_files)} files over {limit_mb:g} MB are too many to hold read-only one by one: "
                "for the next call, these folders are read-only whole (what else they hold is "
                "snapshotted as usual): " + _named([p if p in big_files else f"{p}/" for p in held_big])
            )
        if nested:
            warnings.append("nested repositories without a commit were skipped: " + _named(sorted(nested)))
        if unstorable:
            warnings.append(
                "not snapshotted (git cannot store these names; rollback will neither restore nor delete "
                "them): " + _named(unstorable)
            )
        skipped = (
            *big,  # each file, as before folders were held whole (`uncovered` holds those)
            *sorted(nested),
            *unstorable,
            *(f"exclude:{p}" for p in self.settings.exclude),
            *(f"regenerated:{d}" for d in sorted(regenerated)),
        )
        return _Staged(tree, tuple(skipped), tuple(warnings), (*held_big, *sorted(nested), *unstorable))

    def _placeholders(self) -> set[str]:
        """The sandbox's placeholders in the work tree now, relative: listed by the sandbox in its
        registry (a command cannot add to it; a path is listed before its placeholder is made) and
        an empty regular file — marked or not yet. An empty file of the user's at such a path is
        left out too: there is nothing in it to lose."""
        prefix = f"{self.workspace}/"
        found: set[str] = set()
        for full in recorded_placeholders(self.workspace):
            if not full.startswith(prefix):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size == 0:
                found.add(full[len(prefix) :])
        return found

    def _ignored_files(
        self, git: Git, listing: builtins.list[str]
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """Git-ignored files not yet in the snapshot, and the build-output directories left out.

        `listing` is what `git status --ignored=matching` names: a wholly ignored directory once
        (`node_modules/`) instead of each of its 50,000 files. Such a directory is a build output
        by its name (left out, reported) or else listed file by file. Paths matching
        `[checkpoints] exclude` are left out as before.
        """
        files: list[str] = []
        regenerated: list[str] = []
        expand: list[str] = []
        for path in listing:
            if path.rstrip("/") == ".tether" or path.startswith(".tether/"):
                continue
            build = regenerated_dir(path, self.settings.regenerated)
            if build is not None:
                if build not in regenerated:
                    regenerated.append(build)
            elif path.endswith("/"):
                expand.append(path)
            else:
                files.append(path)
        for directory in expand:
            if os.path.lexists(f"{self.workspace}/{directory}.git"):
                continue  # an ignored nested repository: its own `.git` keeps its history
            inner, deeper = self._walk_ignored(directory.rstrip("/"))
            files += inner
            regenerated += [d for d in deeper if d not in regenerated]
        if self.settings.exclude:
            skipped = _matching_excludes(git, self.settings.exclude)
            files = [
                f for f in files if not any(f == s or f.startswith(s.rstrip("/") + "/") for s in skipped)
            ]
        return files, regenerated

    def _walk_ignored(self, directory: str) -> tuple[builtins.list[str], builtins.list[str]]:
        """Every file and symlink under an ignored directory (git names it once), pruning build
        outputs by name and nested repositories (their own `.git` keeps their history). FIFOs,
        sockets and devices are left out: git cannot store them (`git add` skipped them too)."""
        names = REGENERATED_DIRS.union(self.settings.regenerated)
        files: builtins.list[str] = []
        regenerated: builtins.list[str] = []
        pending = [directory]
        while pending:
            rel_dir = pending.pop()
            try:
                with os.scandir(f"{self.workspace}/{rel_dir}") as entries:
                    listed = list(entries)
            except OSError:
                continue  # gone or unreadable since the status (os.walk skipped these too)
            for entry in listed:
                rel = f"{rel_dir}/{entry.name}"
                if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                    files.append(rel)  # a symlink to a directory is snapshotted as a link
                elif not entry.is_dir(follow_symlinks=False):
                    continue
                elif entry.name in names:
                    regenerated.append(rel)
                elif not os.path.lexists(f"{entry.path}/.git"):
                    pending.append(rel)
        return files, regenerated

    def _import(self, git: Git, paths: builtins.list[str], heads: dict[str, str]) -> builtins.list[str]:
        """The first snapshot of a work tree: every file streamed into one pack by `git fast-import`,
        then read into the private index, whose stat data `update-index --refresh` fills in (it
        hashes each file again and records only what matches). Returns the directories that turned
        out to be nested repositories without a commit (left out).

        Why not `update-index --add`: it writes a loose object per file (or, streamed into a pack,
        looks for each new tree among the packs before writing it); fast-import keeps its own table
        and writes blobs and trees into one pack, measured 2-3x faster on 20,000 files.
        """
        nested: builtins.list[str] = []
        try:
            git.feed("fast-import", "--quiet", "--force", chunks=self._import_stream(paths, heads, nested))
            tree = git.run("rev-parse", "--verify", f"{_IMPORT_REF}^{{tree}}").stdout.decode("ascii").strip()
            git.run("read-tree", tree)  # refuses a path git never stores (`.GIT/x`): the checkpoint fails
        finally:
            git.run("update-ref", "-d", _IMPORT_REF, ok_codes=(0, 1))
        # exit 1: some files changed since the import
        git.run("update-index", "-q", "--refresh", ok_codes=(0, 1), timeout=GIT_STUCK_AFTER)
        return nested

    def _import_stream(
        self, paths: builtins.list[str], heads: dict[str, str], nested: builtins.list[str]
    ) -> Iterator[bytes]:
        """fast-import's input for `paths`: one commit holding each file, symlink and gitlink (the
        nested repositories' commits in `heads`); every byte read from the work tree, never through
        a symlink. A directory without a commit in `heads` is added to `nested`, left out."""
        yield (
            b"feature done\ncommit "
            + _IMPORT_REF.encode()
            + b"\ncommitter Tether <tether@localhost> 0 +0000\ndata 0\n"
        )
        root = os.fsencode(self.workspace) + b"/"
        for rel in paths:
            full = root + os.fsencode(rel)
            try:
                st = os.lstat(full)
            except OSError:
                continue  # gone since the status: not in the snapshot
            name = _fast_import_path(rel)
            if stat.S_ISREG(st.st_mode):
                try:
                    # not a plain open: a FIFO put in the file's place since the lstat would make it
                    # wait for a writer forever, with the store's lock held
                    fd = fsutil.open_if_regular(full)
                except PermissionError as exc:
                    raise _unreadable(f"{rel}: {exc.strerror}") from exc
                except OSError as exc:
                    raise CheckpointError(f"snapshot failed: cannot open {rel}: {exc.strerror}") from exc
                if fd is None:
                    continue  # gone, or a symlink or FIFO now, since the lstat: the next one sees it
                try:
                    data = _read_all(fd, st.st_size)
                except OSError as exc:
                    raise CheckpointError(f"snapshot failed: cannot read {rel}: {exc.strerror}") from exc
                finally:
                    os.close(fd)
                mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
                yield b"M %s inline %s\ndata %d\n%s\n" % (mode, name, len(data), data)
            elif stat.S_ISLNK(st.st_mode):
                if not git_can_store(rel, symlink=True):
                    continue  # a file when the status looked (`.gitmodules`): the next snapshot says so
                try:
                    target = os.readlink(full)
                except OSError:
                    continue  # gone or replaced since the lstat: the next snapshot sees it
                yield b"M 120000 inline %s\ndata %d\n%s\n" % (name, len(target), target)
            elif stat.S_ISDIR(st.st_mode):
                head = heads.get(rel)
                if head is None:
                    nested.append(rel)
                else:
                    yield b"M 160000 %s %s\n" % (head.encode("ascii"), name)
            # else a FIFO, socket or device: git cannot store it (`git add` skipped them too)
        yield b"\ndone\n"

    def _create_locked(self, loc: Location, git: Git, tool: str, message: str | None) -> Checkpoint:
        started = time.monotonic()
        staged = self._stage(loc, git)
        elapsed = time.monotonic() - started
        warnings = list(staged.warnings)
        if elapsed > self.settings.time_budget_seconds:
            warnings.append(
                f"checkpoint took {elapsed:.1f} s, over the {self.settings.time_budget_seconds:g} s budget; "
                "exclude large generated directories with [checkpoints] exclude = [...]"
            )
        seq = _next_seq(loc, git)
        now = datetime.now().astimezone()
        stamp = now.isoformat(timespec="seconds")
        # the gate passes a call summary (a command line may hold a token): redact, one line, short
        tool = re.sub(r"[\x00-\x1f\x7f]+", " ", redact_text(tool)).strip()[:200] or "unknown"
        message = redact_text(message) if message else None
        subject = f"pre-tool: {tool} at {stamp}"
        meta = {
            "seq": seq,
            "tool": tool,
            "time": now.isoformat(timespec="milliseconds"),
            "message": _CONTROL.sub(" ", message) if message else None,
            "skipped": list(staged.skipped),
            "uncovered": list(staged.uncovered),
            "warnings": warnings,
        }
        body = f"{subject}\n\nTether-Meta: {json.dumps(meta, ensure_ascii=True)}\n"
        commit = git.run("commit-tree", staged.tree, "-F", "-", input=body.encode()).stdout
        sha = commit.decode("ascii").strip()
        ref = f"{REF_PREFIX}{seq:010d}"
        git.run(
            "update-ref", "--stdin",
            input=f"update {ref} {sha}\noption no-deref\nupdate HEAD {sha}\n".encode(),
        )  # fmt: skip
        return _checkpoint(ref, sha, meta, subject)

    def _resolve(self, git: Git, steps: int | None, to: str | None) -> Checkpoint:
        if steps is not None and to is not None:
            raise CheckpointError("give either a number of steps or a checkpoint id, not both")
        cps = _list_refs(git)
        if not cps:
            raise CheckpointError("there are no checkpoints for this workspace yet")
        if to is not None:
            return _find(cps, to)
        n = 1 if steps is None else steps
        if n < 1:
            raise CheckpointError(f"steps must be 1 or more, not {n}")
        if n > len(cps):
            raise CheckpointError(f"cannot roll back {n} steps: only {len(cps)} checkpoint(s) are kept")
        return cps[n - 1]

    def _rollback_locked(
        self, loc: Location, git: Git, target: Checkpoint, *, tool: str
    ) -> tuple[RollbackPlan, Checkpoint]:
        before = self._create_locked(loc, git, tool, f"before rollback to {target.id}")
        ops = restore.plan_ops(self.workspace, restore.diff_trees(git, before.commit, target.commit))
        _write_journal(loc, target)
        restore.apply_ops(git, self.workspace, ops)
        loc.journal.unlink(missing_ok=True)
        return _plan(target, ops), before

    def _recover_locked(self, loc: Location, git: Git) -> Checkpoint | None:
        try:
            raw = loc.journal.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw)
            target = Checkpoint(**{k: data[k] for k in ("id", "ref", "commit", "time", "tool", "message")})
            git.run("cat-file", "-e", f"{target.commit}^{{tree}}")
        except (ValueError, KeyError, TypeError, CheckpointError):
            # the journal is written before any file is touched; unreadable means never used
            loc.journal.unlink(missing_ok=True)
            return None
        _plan_done, before = self._rollback_locked(loc, git, target, tool="rollback-recovery")
        return before

    def _expire_locked(self, git: Git) -> builtins.list[Checkpoint]:
        """Retention: drop the refs of checkpoints past `keep_count`/`keep_days` (one transaction,
        fast); their objects go later, with `pack_objects`."""
        cps = _list_refs(git)
        keep = max(1, self.settings.keep_count)
        cutoff = datetime.now().astimezone() - timedelta(days=self.settings.keep_days)
        doomed = [cp for i, cp in enumerate(cps) if i >= keep or (i > 0 and _parse_time(cp.time) < cutoff)]
        if doomed:
            git.run("update-ref", "--stdin", input="".join(f"delete {cp.ref}\n" for cp in doomed).encode())
        git.run("pack-refs", "--all")  # one packed-refs file instead of hundreds of loose refs
        return doomed


# --- helpers -------------------------------------------------------------------------------------


def _by_folder(workspace: str, files: builtins.list[str]) -> builtins.list[str]:
    """`files` (left out of the snapshot), with each folder that holds nothing else named instead
    of what it holds, from the deepest up (never the workspace itself). Only folders that hold one
    of them are listed. A folder with anything else in it, even an empty folder, stays as it is:
    what the agent may change there is unchanged."""
    named = set(files)
    folders = {f.rpartition("/")[0] for f in named if "/" in f}
    pending = [(-folder.count("/"), folder) for folder in folders]  # deepest first
    heapq.heapify(pending)
    looked: set[str] = set()
    while pending:
        _depth, folder = heapq.heappop(pending)
        if folder in looked:
            continue
        looked.add(folder)
        try:
            with os.scandir(f"{workspace}/{folder}") as entries:
                inside = [f"{folder}/{entry.name}" for entry in entries]
        except OSError:
            continue
        if inside and all(path in named for path in inside):
            named.difference_update(inside)
            named.add(folder)
            if "/" in folder:
                parent = folder.rpartition("/")[0]
                heapq.heappush(pending, (-parent.count("/"), parent))
    return sorted(named)


# Each held path is a read-only mount (and its folder a pinned one) for every command: bubblewrap
# takes 9,000 arguments in all, three a mount.
_HELD_AT_MOST = 1_000


def _by_folder_up_to(paths: builtins.list[str], at_most: int) -> builtins.list[str]:
    """`paths` when there are at most `at_most`; else their folders, one level up at a time, until
    there are (never the workspace itself: a file at the top stays as it is). What else those
    folders hold is held with them: safe, and still better than no command that writes running at
    all (a folder per sample, `samples/<id>/{data.bin,meta.json}`, 3,500 of them)."""
    held = sorted(paths)
    while len(held) > at_most:
        up = {p.rpartition("/")[0] if "/" in p else p for p in held}
        # only the top-most of them: a folder inside another held one is held already
        top = sorted(p for p in up if not any(a in up for a in _ancestors(p)))
        if top == held:
            break  # everything left is at the top of the workspace
        held = top
    return held


def _ancestors(path: str) -> Iterator[str]:
    while "/" in path:
        path = path.rpartition("/")[0]
        yield path


_NAMED_AT_MOST = 10

# How update-index says it left out a name it refuses to store, and goes on (exit 0)
_GIT_IGNORED = b"Ignoring path "


def _named(paths: builtins.list[str]) -> str:
    """A warning's list of paths, the first few by name: a data folder of 20,000 files over the
    budget made every call's warning (in the editor, the audit log and each checkpoint) 1 MB long.
    The checkpoint's `skipped` keeps them all."""
    if len(paths) <= _NAMED_AT_MOST:
        return ", ".join(paths)
    more = len(paths) - _NAMED_AT_MOST
    return (
        ", ".join(paths[:_NAMED_AT_MOST])
        + f" and {more} more (`tether checkpoints --json` lists them all under `skipped`)"
    )


def _plan(target: Checkpoint, ops: restore.Ops) -> RollbackPlan:
    return RollbackPlan(
        target=target,
        restored=tuple(sorted(c.path for c in ops.restored)),
        deleted=tuple(sorted(c.path for c in ops.deleted)),
        created=tuple(sorted(c.path for c in ops.created)),
        kept=ops.kept,
    )


# From this many paths on, new blobs are streamed into one pack (git's bulk check-in, enabled by a
# tiny `core.bigFileThreshold` for that one command) instead of one loose object file each.
_BULK_PATHS = 256
_IMPORT_REF = "refs/tether/import"
"""Where `git fast-import` leaves the first snapshot's commit, deleted as soon as its tree is read."""


def _under_any(path: str, roots: builtins.list[str]) -> bool:
    return any(path == root.rstrip("/") or path.startswith(root.rstrip("/") + "/") for root in roots)


def _matching_excludes(git: Git, patterns: tuple[str, ...]) -> builtins.list[str]:
    """Untracked paths matching `[checkpoints] exclude` alone (no .gitignore read): never snapshotted."""
    out = git.run(
        "ls-files", "-z", "--others", "--ignored", "--directory", *(f"--exclude={p}" for p in patterns)
    ).stdout
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _read_all(fd: int, size: int) -> bytes:
    """The whole file behind `fd`, whose size was `size` a moment ago (it may have changed since)."""
    parts = []
    while chunk := os.read(fd, max(size + 1, 65536)):
        parts.append(chunk)
    return b"".join(parts)


def _fast_import_path(rel: str) -> bytes:
    """A path as fast-import reads it: raw bytes, C-quoted only when it must be (a newline, or a
    leading quote that would otherwise start a quoted string)."""
    raw = os.fsencode(rel)
    if b"\n" not in raw and not raw.startswith(b'"'):
        return raw
    escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _refuse_unreadable(stderr: bytes) -> None:
    if b"Permission denied" in stderr:
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = next((line for line in lines if "Permission denied" in line), lines[0] if lines else "")
        raise _unreadable(detail.strip())


def _unreadable(detail: str) -> CheckpointRefused:
    return CheckpointRefused(
        f"part of the workspace cannot be read ({detail}); a snapshot would be incomplete, "
        "so Tether refuses. Fix the permissions or add the path to [checkpoints] exclude."
    )


def _update_index(
    git: Git, add: builtins.list[str], workspace: Path
) -> tuple[list[str], list[str], list[str]]:
    """Stage `add` (sorted) in the private index; returns the paths left out after all: directories
    that turned out to be nested repositories without a commit, paths that vanished or became
    something git cannot store since the status, and names git refused although `git_can_store`
    took them (a git whose rule differs: reported, never dropped in silence). Anything else that
    fails is a CheckpointError.

    Many new files (an unpacked archive, a rebuilt index) are streamed into one pack (git's bulk
    check-in, enabled by a tiny `core.bigFileThreshold`) instead of a loose object file each.
    """
    indexer = git
    if len(add) >= _BULK_PATHS:
        indexer = dataclasses.replace(git, extra_config=(*git.extra_config, "core.bigFileThreshold=1"))
    nested: list[str] = []
    vanished: list[str] = []
    add = list(add)
    while add:
        # `--replace`: a file that became a directory (or back) swaps its entries; ignored files
        # are named one by one, and update-index never consults ignore rules: an ignored `.env`
        # is the user's too and is snapshotted like any other file
        result = indexer.run(
            "update-index", "--add", "--remove", "--replace", "-z", "--stdin",
            input=b"".join(os.fsencode(p) + b"\0" for p in add), ok_codes=(0, 128), timeout=GIT_STUCK_AFTER,
        )  # fmt: skip
        if result.returncode == 0:
            refused = []
            if _GIT_IGNORED in result.stderr:
                refused = [p for p in add if _GIT_IGNORED + os.fsencode(p) + b"\n" in result.stderr]
            return nested, vanished, refused
        _refuse_unreadable(result.stderr)
        failed = _UNPROCESSABLE.search(result.stderr)
        unprocessable = os.fsdecode(failed.group(1)) if failed else ""
        if unprocessable not in add:
            raise CheckpointError(f"snapshot failed: git update-index: {result.err_text}")
        if b"beyond a symbolic link" in result.stderr or b"unsupported file type" in result.stderr:
            # its directory became a symlink since the status, or it became a FIFO or socket
            # (git cannot store one; `git add` skipped them): not in this snapshot
            vanished.append(unprocessable)
        elif (workspace / unprocessable).is_dir():
            # a directory where the status saw none, e.g. a nested repository created since
            # without a commit (one with a commit would have been recorded)
            nested.append(unprocessable)
        else:
            raise CheckpointError(f"snapshot failed: git update-index: {result.err_text}")
        add.remove(unprocessable)
    return nested, vanished, []


def _recorded_gitlinks(loc: Location, git: Git) -> set[str]:
    """The nested repositories the private index records as gitlinks: kept in a small file next to
    the index (listing the whole index each time would cost a walk of it); read from the index once
    when the file is missing (a store from before it existed) or unreadable."""
    try:
        data = (loc.root / "gitlinks").read_bytes()
    except OSError:
        data = b"".join(
            entry.partition(b"\t")[2] + b"\0"
            for entry in git.run("ls-files", "-z", "--stage").stdout.split(b"\0")
            if entry.startswith(b"160000 ")
        )
    return {os.fsdecode(p) for p in data.split(b"\0") if p}


def _lost_its_repository(path: str) -> bool:
    return _is_real_dir(path) and not os.path.lexists(f"{path}/.git")


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _has_checkpoints(git: Git) -> bool:
    return bool(git.run("for-each-ref", "--count=1", "--format=x", REF_PREFIX).stdout.strip())


def _force_remove(git: Git, paths: builtins.list[str]) -> None:
    """Drop these entries from the private index, whatever the work tree holds.

    git cannot name an entry it refuses (`git~1`), and then only says "Ignoring path". The index
    never holds one (an adopted index with one is not adopted), so such a path is in no index and
    is not asked for. Should git still ignore one (its rule differs from `git_can_store`), the
    entry would stay in every snapshot: the private index, only a cache, goes, and the next
    snapshot is built from the files."""
    named = [p for p in paths if git_can_store(p)]  # a sandbox placeholder in `.git/` is in no index
    if not named:
        return
    result = git.run(
        "update-index",
        "--force-remove",
        "-z",
        "--stdin",
        input=b"".join(os.fsencode(p) + b"\0" for p in named),
    )
    if _GIT_IGNORED in result.stderr:
        index = git.index_file
        if index is not None:
            index.unlink(missing_ok=True)
        raise CheckpointError(
            f"snapshot failed: git would not remove an entry from the private index ({result.err_text}); "
            "the index was dropped, and the next checkpoint builds it again from the files"
        )


def _parse_status(out: bytes) -> tuple[list[str], list[str], list[str]]:
    """Three lists: paths whose work-tree side differs from the private index, plus untracked
    paths; the indexed paths gone from the work tree; and the ignored ones (`!!`, a wholly ignored
    directory with a trailing "/")."""
    paths: list[str] = []
    gone: list[str] = []
    ignored: list[str] = []
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        x, y, path = entry[0:1], entry[1:2], entry[3:]
        if x in (b"R", b"C"):
            i += 1  # the rename source follows; renames are disabled, but be safe
        if x == b"!":
            ignored.append(os.fsdecode(path))
        elif y == b"D":
            gone.append(os.fsdecode(path))
        elif y != b" " or x == b"?":
            paths.append(os.fsdecode(path))  # a trailing "/" marks a nested repository
    return paths, gone, ignored


def _next_seq(loc: Location, git: Git) -> int:
    path = loc.root / "seq"
    try:
        last = int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        cps = _list_refs(git)
        last = _seq_of(cps[0].ref) if cps else 0
    seq = last + 1
    tmp = path.with_name(f"seq.tmp-{os.getpid()}")
    tmp.write_text(f"{seq}\n", encoding="ascii")
    os.replace(tmp, path)
    return seq


def _seq_of(ref: str) -> int:
    try:
        return int(ref.rsplit("/", 1)[-1])
    except ValueError:
        return 0


def _checkpoint(ref: str, sha: str, meta: dict[str, object], subject: str) -> Checkpoint:
    message = meta.get("message")
    skipped = meta.get("skipped") or []
    warnings = meta.get("warnings") or []
    uncovered = meta.get("uncovered")
    return Checkpoint(
        id=sha[:12],
        ref=ref,
        commit=sha,
        time=str(meta.get("time", "")),
        tool=str(meta.get("tool", "")),
        message=str(message) if message else subject,
        skipped=tuple(str(s) for s in skipped) if isinstance(skipped, list) else (),
        warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
        uncovered_paths=tuple(str(u) for u in uncovered) if isinstance(uncovered, list) else None,
    )


def _list_refs(git: Git) -> list[Checkpoint]:
    out = git.run(
        "for-each-ref", "--sort=-refname", "--format=%(objectname) %(refname)%00%(contents)%01", REF_PREFIX
    ).stdout
    cps: list[Checkpoint] = []
    for chunk in out.split(b"\x01"):
        record = chunk.lstrip(b"\n")
        if not record:
            continue
        head, _, contents = record.partition(b"\0")
        sha, _, ref = head.decode("utf-8", "replace").partition(" ")
        text = contents.decode("utf-8", "replace")
        subject = text.split("\n", 1)[0]
        meta: dict[str, object] = {}
        for line in text.splitlines():
            if line.startswith("Tether-Meta: "):
                try:
                    parsed = json.loads(line[len("Tether-Meta: ") :])
                except ValueError:
                    parsed = {}
                if isinstance(parsed, dict):
                    meta = parsed
        cps.append(_checkpoint(ref, sha, meta, subject))
    return cps


def _find(cps: list[Checkpoint], ident: str) -> Checkpoint:
    ident = ident.strip()
    exact = [cp for cp in cps if ident in (cp.id, cp.ref, cp.commit)]
    if exact:
        return exact[0]
    if ident.isdigit() and len(ident) < 4:
        by_seq = [cp for cp in cps if _seq_of(cp.ref) == int(ident)]
        if by_seq:
            return by_seq[0]
    if len(ident) >= 4:
        matches = [cp for cp in cps if cp.commit.startswith(ident.lower())]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise CheckpointError(f"checkpoint id {ident!r} is ambiguous; give more characters")
    raise CheckpointError(f"no checkpoint {ident!r}; `tether checkpoints` lists the ids")


def _parse_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return datetime.now().astimezone()


def _count_objects(git: Git) -> dict[str, int]:
    out = git.run("count-objects", "-v").stdout.decode("ascii", "replace")
    counts: dict[str, int] = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            counts[key.strip()] = int(value.strip())
    return counts


def _write_journal(loc: Location, target: Checkpoint) -> None:
    data = json.dumps(
        {k: getattr(target, k) for k in ("id", "ref", "commit", "time", "tool", "message")}
    ).encode()
    tmp = loc.journal.with_name(f"{loc.journal.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, loc.journal)
    dir_fd = os.open(loc.root, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


__all__ = ["Checkpoint", "CheckpointError", "CheckpointRefused", "Checkpoints", "RollbackPlan"]
