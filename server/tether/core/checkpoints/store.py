"""Where checkpoints live, and the refusals before anything is written.

Why a separate git directory instead of refs in the user's repository: checkpoint refs under the
user's `refs/` would show up in `git log --all`, gitk and `git push --mirror`, and the user's
`.git/config` (filters, fsmonitor, hooks) would apply to our commands. A private store is a bare git
directory used with `--work-tree=<workspace>` and its own index file:

* in a git workspace it is `<git dir>/tether/store` (per worktree), so it moves with the repository
  and the user's `git gc` never looks at it (its objects are its own, no alternates);
* in any other directory it is `<user state dir>/shadow/<sha256 of the real path>/store`.

Its `info/attributes` says `* -text -filter -ident -working-tree-encoding`: that file has the highest
precedence of all attribute sources, so the bytes stored are the bytes on disk, and no clean/smudge
filter named in the workspace's `.gitattributes` can run (none is defined in the store's config
either). Its `info/exclude` holds `.tether/`, the user's own `info/exclude` and the configured
`exclude` patterns, so "ignored" means what it means to the user plus Tether's own state.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.core.gitcmd import Git
from tether.errors import CheckpointError, CheckpointRefused

GIT_STUCK_AFTER = 600.0
"""Seconds after which a git run of a snapshot is taken for stuck and stopped, far above any real
run (0.5 s of status for 250,000 files): a git that reads the work tree waits for a writer forever
when a FIFO takes a file's place between its look at the file and its open, with the store's lock
held."""

STORE_ATTRIBUTES = (
    b"# written by tether: store exact bytes, never run filters\n"
    b"* -text -filter -ident -working-tree-encoding\n"
)


@dataclass(frozen=True)
class Location:
    """Where one workspace's checkpoints are kept."""

    workspace: Path  # real path, the work tree
    root: Path  # directory holding store/, index, lock, journal
    kind: Literal["git", "shadow"]
    user_git_dir: Path | None  # the user's (per-worktree) git dir, for refusal checks
    user_common_dir: Path | None  # where the user's info/exclude lives

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    @property
    def journal(self) -> Path:
        return self.root / "rollback-journal.json"


def locate(workspace: Path, state_dir: Path) -> Location:
    """Find the git repository containing the workspace (GitPython), or choose a shadow store."""
    import git as gitpython  # GitPython: discovery only; plumbing goes through tether.core.gitcmd

    real = workspace.resolve()
    try:
        repo = gitpython.Repo(real, search_parent_directories=True)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
        repo = None
    except Exception as exc:  # GitPython raises plain errors for half-broken repositories
        raise CheckpointRefused(f"{real}: the git repository here cannot be read: {exc}") from exc
    if repo is not None:
        git_dir = Path(repo.git_dir).resolve()
        if repo.bare or repo.working_tree_dir is None:
            raise CheckpointRefused(
                f"{real} is a bare git repository (no working tree): there is nothing to snapshot; "
                "open a checkout of it instead"
            )
        top = Path(repo.working_tree_dir).resolve()
        if real == git_dir or git_dir in real.parents:
            raise CheckpointRefused(f"{real} is inside a .git directory; open the working tree instead")
        common = Path(getattr(repo, "common_dir", git_dir)).resolve()
        if real == top:
            root = git_dir / "tether"
        else:
            rel = os.fsencode(real.relative_to(top))
            root = git_dir / "tether" / "sub" / hashlib.sha256(rel).hexdigest()[:20]
        return Location(real, root, "git", git_dir, common)
    key = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
    return Location(real, state_dir / "shadow" / key, "shadow", None, None)


def refuse_unsafe_state(loc: Location) -> None:
    """Raise CheckpointRefused when the user's repository is mid-operation."""
    gd = loc.user_git_dir
    if gd is None:
        return
    states = (
        ("MERGE_HEAD", "a merge", "git merge --continue or git merge --abort"),
        ("rebase-merge", "a rebase", "git rebase --continue or git rebase --abort"),
        ("rebase-apply", "a rebase or git am", "git rebase --continue/--abort or git am --abort"),
        ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue or --abort"),
        ("REVERT_HEAD", "a revert", "git revert --continue or --abort"),
    )
    for name, what, fix in states:
        if (gd / name).exists():
            raise CheckpointRefused(
                f"the repository at {loc.workspace} is in the middle of {what}; Tether will not snapshot "
                f"or roll back a half-finished operation. Finish it first ({fix})."
            )


# A split index: `add` and `write-tree` rewrite only the small part that changed instead of the
# whole index, which halves their cost on a 20,000-file tree (measured: 36 -> 18 ms). The shared
# part lives in the store as `sharedindex.<sha>`; git expires old ones by itself.
STORE_TUNING: tuple[str, ...] = ("core.splitIndex=true",)


def store_git(loc: Location, extra_config: tuple[str, ...] = STORE_TUNING) -> Git:
    return Git(git_dir=loc.store, work_tree=loc.workspace, index_file=loc.index, extra_config=extra_config)


def ensure_store(loc: Location) -> None:
    """Create the store once, atomically (init in a temp dir, then rename), and its attributes."""
    if (loc.store / "HEAD").is_file():
        write_if_changed(loc.store / "info" / "attributes", STORE_ATTRIBUTES)
        return
    try:
        loc.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot create the checkpoint store at {loc.root}: {exc.strerror}") from exc
    if loc.kind == "shadow":
        write_if_changed(loc.root / "workspace", os.fsencode(loc.workspace) + b"\n")
    tmp = loc.root / f"store.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    Git(git_dir=tmp).run("init", "-q", "--bare", str(tmp))
    (tmp / "info").mkdir(exist_ok=True)
    (tmp / "info" / "attributes").write_bytes(STORE_ATTRIBUTES)
    for hook in (tmp / "hooks").glob("*"):
        hook.unlink()
    try:
        os.rename(tmp, loc.store)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not (loc.store / "HEAD").is_file():
            raise CheckpointError(f"cannot create the checkpoint store: {exc.strerror}") from exc


def user_excludes_file(loc: Location) -> Path | None:
    """The user's own `core.excludesFile` (global or repository config), if one is set.

    Checkpoint commands run with the user's config switched off, so this one value is read on
    purpose (`git config --get` only reads; it runs nothing) and its patterns are copied into the
    store, so that "ignored" means what it means to the user. Git's default
    (`~/.config/git/ignore`) is read by git itself."""
    cwd = loc.workspace
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        proc = subprocess.run(
            ["git", "config", "--path", "--get", "core.excludesFile"],
            cwd=cwd,
            env=env,
            capture_output=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else cwd / path


def exclude_lines(loc: Location, patterns: tuple[str, ...], extra_files: tuple[Path, ...] = ()) -> bytes:
    """The store's info/exclude: Tether's state, the user's info/exclude and excludes file,
    configured excludes."""
    parts = [b"# written by tether; regenerated from the workspace's settings\n", b"/.tether/\n"]
    sources = list(extra_files)
    if loc.user_common_dir is not None:
        sources.insert(0, loc.user_common_dir / "info" / "exclude")
    for source in sources:
        with contextlib.suppress(OSError):
            user = source.read_bytes()
            parts.append(user if user.endswith(b"\n") or not user else user + b"\n")
    parts += [p.encode("utf-8") + b"\n" for p in patterns]
    return b"".join(parts)


def sync_excludes(loc: Location, patterns: tuple[str, ...], extra_files: tuple[Path, ...] = ()) -> bool:
    """Write the store's excludes; True when they changed (the private index must be rebuilt)."""
    return write_if_changed(loc.store / "info" / "exclude", exclude_lines(loc, patterns, extra_files))


def ensure_user_exclude(loc: Location) -> None:
    """Add `/.tether/` to the user's `.git/info/exclude` (append only, never rewrite)."""
    if loc.user_common_dir is None:
        return
    path = loc.user_common_dir / "info" / "exclude"
    try:
        current = path.read_bytes() if path.exists() else b""
        lines = {line.strip() for line in current.splitlines()}
        if lines & {b"/.tether/", b".tether/", b".tether", b"/.tether"}:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        prefix = b"\n" if current and not current.endswith(b"\n") else b""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, prefix + b"# tether's state (audit log, proposals)\n/.tether/\n")
        finally:
            os.close(fd)
    except OSError as exc:
        raise CheckpointError(f"cannot add .tether/ to {path}: {exc.strerror}") from exc


def write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


@contextlib.contextmanager
def locked(loc: Location) -> Iterator[None]:
    """Exclusive lock for everything that touches the private index, refs or the work tree.

    Holding it also proves that any `*.lock` file git left in the store belongs to a process that
    died (only Tether uses the store, always under this lock), so those are removed here.
    """
    loc.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(loc.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _remove_stale_locks(loc)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _remove_stale_locks(loc: Location) -> None:
    candidates = [loc.root / "index.lock", loc.store / "packed-refs.lock", loc.store / "HEAD.lock"]
    refs = loc.store / "refs" / "tether" / "checkpoints"
    with contextlib.suppress(OSError), os.scandir(refs) as entries:
        candidates += [Path(e.path) for e in entries if e.name.endswith(".lock")]
    for path in candidates:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
