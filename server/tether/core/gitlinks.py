"""Other repositories' `.git` inside the workspace, for the sandbox to keep read-only.

Why: the user's own `git status` (and an editor's, on its own) looks into every submodule the index
records, with that submodule's repository and config — and into theirs, at any depth. A command in
the sandbox could rewrite `lib/.git` — a file `gitdir: ../.git/modules/lib` — to point at a gitdir
it made, or edit the config of a repository whose `.git` is a directory, and name a
`core.fsmonitor` program there: the user's next `git status` would run it outside the sandbox. The
same holds for a repository the user keeps below the workspace (a folder of projects opened as one
workspace, a tool cloned into `vendor/`). The policy refuses `.git` in any directory for commands
it reads, but a program it allows (a test run) can write anything the sandbox lets it; so these
paths join the sandbox's protected set.

What is found: every `.git` below the workspace, at any depth — inside other repositories' work
trees and inside ignored folders too, and whatever its kind: a planted empty `.git` file must not
hide a real repository below it — except in build outputs (`node_modules/`, `target/`, …); for a
`.git` file, the gitdir it names when that lies in the workspace (`--separate-git-dir`, a bare
repository with worktrees); and the submodules of every one of those repositories' indexes,
recursively (one not checked out is an empty directory: a `.git` made there would be obeyed).

Why caches: a walk of every directory on every command would cost a scan of the tree; each
directory's subdirectories are kept while its (inode, mtime) stays, so a command pays one `stat`
and one `lstat` of `.git` per directory. Listing an index is one git process; the answer changes
only when the index file does, so it is kept per index file and its (device, inode, size, mtime).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from tether.core.checkpoints.regenerated import REGENERATED_DIRS
from tether.core.gitcmd import Git
from tether.errors import CheckpointError

_GITLINK = b"160000"
_GIT_TIMEOUT = 20.0
_cache: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...]]] = {}
_listings: dict[str, tuple[tuple[int, int], tuple[str, ...], bool]] = {}
_cache_lock = threading.Lock()


def protected_git_paths(workspace: Path) -> tuple[Path, ...]:
    """The `.git` of each other repository inside `workspace`, which the user's git obeys when it
    looks there: every `.git` below the root (not in build outputs), the gitdir a `.git` file
    names inside the workspace, and the submodules of each repository (the directory itself for
    one not checked out: a placeholder `.git` would make `git status` fail meanwhile). Raises
    CheckpointError when an index cannot be read: the caller must not run a command that could
    write without knowing them (fail closed)."""
    root = os.path.realpath(workspace)
    found: dict[str, None] = {}  # ordered, without repeats
    top = _repository_top(workspace)
    if top is not None:
        _submodules(top, root, found, depth=0)
    own = os.path.join(str(top) if top is not None else root, ".git")
    for dot_git in _repositories_below(root):
        found.setdefault(dot_git)
        inner = _gitdir_of(dot_git)
        if inner is None:
            continue
        for named in _named_gitdirs(dot_git, inner):  # where else its config lives
            if named.startswith(root + os.sep) and not named.startswith(own + os.sep):
                found.setdefault(named)  # (the user's own `.git` is pinned whole already)
        _submodules(Path(os.path.dirname(dot_git)), root, found, 1, inner)
    return tuple(Path(p) for p in found)


def gitlinks(workspace: Path) -> tuple[str, ...]:
    """The gitlink paths in the index of the repository whose work tree is `workspace` (empty when
    it has no `.git` directory or no index yet)."""
    git_dir = workspace / ".git"
    if not git_dir.is_dir() or git_dir.is_symlink():
        return ()
    return _listed(git_dir, workspace)


def _repository_top(workspace: Path) -> Path | None:
    top = next((d for d in (workspace, *workspace.parents) if (d / ".git").exists()), None)
    if top is None or not (top / ".git").is_dir() or (top / ".git").is_symlink():
        return None  # none, or a linked worktree / submodule checkout: its index lies outside
    return top


def _submodules(
    work_tree: Path, root: str, found: dict[str, None], depth: int, git_dir: Path | None = None
) -> None:
    """Add `<submodule>/.git` (inside `root`) for each gitlink of this work tree's index, and
    recurse into each checked-out one through its own gitdir."""
    if depth > 16:
        return  # git refuses deeper nesting than this long before
    for rel in _listed(git_dir or work_tree / ".git", work_tree):
        full = os.path.join(os.path.realpath(work_tree), rel)
        dot_git = os.path.join(full, ".git")
        if os.path.lexists(dot_git):
            if full.startswith(root + os.sep):
                found.setdefault(dot_git)
            inner = _gitdir_of(dot_git)
            if inner is not None:
                _submodules(Path(full), root, found, depth + 1, inner)
        elif full.startswith(root + os.sep):
            found.setdefault(full)  # not checked out: the directory, so no `.git` can be made in it


def _gitdir_of(dot_git: str) -> Path | None:
    """The repository a `.git` directory is, or a `gitdir:` file names (relative to its folder)."""
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        return Path(dot_git)
    line = _first_line(dot_git)
    if line is None or not line.startswith("gitdir:"):
        return None
    target = os.path.join(os.path.dirname(dot_git), line[len("gitdir:") :].strip())
    return Path(target) if os.path.isdir(target) else None


def _first_line(path: str) -> str | None:
    """The first line of a small regular file, stripped; None for anything else. Non-blocking and
    not through a link: a FIFO named `.git` must not hang every command."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096).split(b"\n", 1)[0].decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def _listed(git_dir: Path, work_tree: Path) -> tuple[str, ...]:
    index = git_dir / "index"
    try:
        st = os.lstat(index)
    except FileNotFoundError:
        return ()  # nothing added yet: no gitlink
    except OSError as exc:
        raise CheckpointError(f"cannot read the repository's index {index}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block git; a link could lead anywhere
        raise CheckpointError(f"the repository's index {index} is not a regular file: remove it")
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get(str(index))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    listed = (
        Git(git_dir=git_dir, work_tree=work_tree)
        .run("ls-files", "--stage", "-z", timeout=_GIT_TIMEOUT)
        .stdout
    )
    paths = []
    for entry in listed.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        if meta.startswith(_GITLINK + b" "):
            paths.append(os.fsdecode(path))
    with _cache_lock:
        _cache[str(index)] = (stamp, tuple(paths))
    return tuple(paths)


def _repositories_below(root: str) -> list[str]:
    """Every `.git` entry in a directory below `root`, whatever it is (not through symlinks, not
    into build outputs such as `node_modules/`). The walk goes on inside repositories: one kept in
    another's work tree is obeyed there too, and a `.git` (even an empty file) must not stop it."""
    found: list[str] = []
    pending = list(_listing(root)[0])
    while pending:
        directory = pending.pop()
        subdirs, has_git = _listing(directory)
        if has_git:
            found.append(directory + "/.git")
        pending.extend(subdirs)
    return found


def _named_gitdirs(dot_git: str, gitdir: Path) -> list[str]:
    """Where a repository's config and hooks live when its `.git` is a file: the gitdir it names
    and, for a linked worktree, the common directory that gitdir's `commondir` names."""
    if not os.path.isfile(dot_git) or os.path.islink(dot_git):
        return []  # a `.git` directory: pinned itself
    named = [os.path.realpath(gitdir)]
    common = _first_line(os.path.join(gitdir, "commondir"))
    if common:
        named.append(os.path.realpath(os.path.join(gitdir, common)))
    return named


def _listing(directory: str) -> tuple[tuple[str, ...], bool]:
    """The subdirectories of `directory` (not `.git`, not build outputs, not through links) and
    whether it holds a `.git` entry, kept while its (inode, mtime) stays: adding, removing or
    renaming an entry — `.git` too — changes a directory's mtime, so an unchanged folder costs one
    `stat` (a 20,000-file tree: ~2,000 of them per command)."""
    try:
        st = os.stat(directory)
    except OSError:
        return (), False
    stamp = (st.st_ino, st.st_mtime_ns)
    with _cache_lock:
        cached = _listings.get(directory)
    if cached is not None and cached[0] == stamp:
        return cached[1], cached[2]
    subdirs: list[str] = []
    has_git = False
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name == ".git":
                    has_git = True
                elif entry.name not in REGENERATED_DIRS and entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
    except OSError:
        return (), False
    with _cache_lock:
        _listings[directory] = (stamp, tuple(subdirs), has_git)
    return tuple(subdirs), has_git
