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
directory's subdirectories, and whether it holds a `.git`, are kept while its (inode, mtime,
ctime) stays, so a command pays one `stat` per directory. Listing an index is one git process;
the answer changes only when the index file does, so it is kept per index file and its (device,
inode, size, mtime).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from pathlib import Path
from typing import NamedTuple

from tether.core.checkpoints.regenerated import REGENERATED_DIRS
from tether.core.gitcmd import Git
from tether.errors import CheckpointError

_GITLINK = b"160000"


def _output_part(names: frozenset[str]) -> re.Pattern[bytes]:
    """A path with a folder of one of these names in it."""
    return re.compile(b"(?:^|/)(?:" + b"|".join(re.escape(os.fsencode(d)) for d in sorted(names)) + b")/")


class _Listing(NamedTuple):
    subdirs: tuple[str, ...]  # walked into
    outputs: tuple[str, ...]  # build outputs: not walked into, but their own `.git` is looked for
    has_git: bool
    links: tuple[str, ...] = ()  # symbolic links, for `for_secrets`


class _Index(NamedTuple):
    gitlinks: tuple[str, ...]
    in_outputs: tuple[str, ...]  # tracked files inside build-output folders, for the secret walk


_GIT_TIMEOUT = 20.0
_cache: dict[tuple[str, frozenset[str]], tuple[tuple[int, int, int, int], _Index]] = {}
_listings: dict[str, tuple[tuple[int, int, int], _Listing]] = {}
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
    holder = _holder(root)
    own = os.path.join(holder if holder is not None else root, ".git")
    own_gitdir = _gitdir_of(own) if holder is not None else None
    if holder is not None and own_gitdir is not None:
        # The enclosing repository's index names its submodules. When its `.git` is a file (a
        # linked worktree, `--separate-git-dir`), where it points inside the workspace — and any
        # link on the way — is kept like a `.git` directory is.
        kept = (*_named_gitdirs(own, own_gitdir), *_links_on_the_way(str(own_gitdir), root))
        found.update(dict.fromkeys(p for p in kept if p.startswith(root + os.sep)))
        _submodules(Path(holder), root, found, 0, own_gitdir)
    dot_gits, unreadable, _links = _repositories_below(root)
    for directory in unreadable:  # nothing below can be seen: the directory is pinned whole
        found.setdefault(directory)
    for dot_git in dot_gits:
        found.setdefault(dot_git)
        inner = _gitdir_of(dot_git)
        if inner is None:
            continue
        for named in _named_gitdirs(dot_git, inner):  # where else its config lives
            if named.startswith(root + os.sep) and not named.startswith(own + os.sep):
                found.setdefault(named)  # (the user's own `.git` is pinned whole already)
        found.update(dict.fromkeys(_links_on_the_way(str(inner), root)))
        _submodules(Path(os.path.dirname(dot_git)), root, found, 1, inner)
    return tuple(Path(p) for p in found)


def gitlinks(workspace: Path, git_dir: Path | None = None) -> tuple[str, ...]:
    """The gitlink paths in the index of the repository whose work tree is `workspace` (empty when
    it has no index yet, or without `git_dir` no `.git` directory). `git_dir`: where the index is
    when `.git` is a file (a linked worktree: its own index). CheckpointError when unreadable."""
    if git_dir is None:
        git_dir = workspace / ".git"
        if not git_dir.is_dir() or git_dir.is_symlink():
            return ()
    return _listed(git_dir, workspace).gitlinks


class ForSecrets(NamedTuple):
    """What the secret masks need beyond ripgrep's listing, from one walk of the workspace."""

    links: tuple[str, ...]
    """Every symbolic link (ripgrep lists none), but in `.git` and build outputs."""
    tracked_in_outputs: tuple[str, ...]
    """Files the indexes of the repository holding the workspace and of those inside it track
    inside a build-output folder (`build/`, `dist/`, `target/`…): the secret walk skips those
    folders (they hold dependencies and builds), but a file that is tracked is yours. An index
    that cannot be read adds nothing (the policy still refuses such a file by its name)."""
    stores: tuple[str, ...]
    """Tether's checkpoint stores a command could read: `tether/` in the git dir of each of those
    repositories and of their linked worktrees. A checkpoint holds every file it took, the
    git-ignored `.env` included, and any program can decompress git's objects."""


def for_secrets(workspace: Path, outputs: frozenset[str] = REGENERATED_DIRS) -> ForSecrets:
    """`ForSecrets`, as absolute paths, from the listings the walk for other repositories keeps
    (an unchanged folder costs one `stat`). `outputs`: the build-output folder names the secret
    walk skips (the built-in ones and the user's `[checkpoints] regenerated`)."""
    root = os.path.realpath(workspace)
    holder = _holder(root)
    walk = _repositories_below(root)
    found: list[str] = []
    stores: dict[str, None] = {}
    for dot_git in ([os.path.join(holder, ".git")] if holder is not None else []) + walk.dot_gits:
        gitdir = _gitdir_of(dot_git)
        if gitdir is None:
            continue
        stores.update(dict.fromkeys(_stores_of(gitdir)))
        top = os.path.dirname(dot_git)
        try:
            found += [os.path.join(top, p) for p in _listed(gitdir, Path(top), outputs).in_outputs]
        except CheckpointError:
            continue
    return ForSecrets(tuple(walk.links), tuple(found), tuple(stores))


def _holder(root: str) -> str | None:
    """The folder holding the `.git` git finds first for `root` (itself or one above), if any."""
    up = (root, *map(str, Path(root).parents))
    return next((d for d in up if os.path.lexists(os.path.join(d, ".git"))), None)


def _submodules(
    work_tree: Path, root: str, found: dict[str, None], depth: int, git_dir: Path | None = None
) -> None:
    """Add `<submodule>/.git` (inside `root`) for each gitlink of this work tree's index, and
    recurse into each checked-out one through its own gitdir."""
    if depth > 16:
        return  # git refuses deeper nesting than this long before
    for rel in _listed(git_dir or work_tree / ".git", work_tree).gitlinks:
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


def _listed(git_dir: Path, work_tree: Path, outputs: frozenset[str] = REGENERATED_DIRS) -> _Index:
    """The index's gitlinks, and the files it tracks in folders named in `outputs`; cached while
    the index file stays the same."""
    index = git_dir / "index"
    try:
        st = os.lstat(index)
    except FileNotFoundError:
        return _Index((), ())  # nothing added yet
    except OSError as exc:
        raise CheckpointError(f"cannot read the repository's index {index}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block git; a link could lead anywhere
        raise CheckpointError(f"the repository's index {index} is not a regular file: remove it")
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get((str(index), outputs))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    in_an_output = _output_part(outputs)
    listed = (
        Git(git_dir=git_dir, work_tree=work_tree)
        .run("ls-files", "--stage", "-z", timeout=_GIT_TIMEOUT)
        .stdout
    )
    links: list[str] = []
    in_outputs: list[str] = []
    for entry in listed.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        if meta.startswith(_GITLINK + b" "):
            links.append(os.fsdecode(path))
        elif in_an_output.search(path):
            in_outputs.append(os.fsdecode(path))
    found = _Index(tuple(links), tuple(in_outputs))
    with _cache_lock:
        _cache[(str(index), outputs)] = (stamp, found)
    return found


class _Walk(NamedTuple):
    dot_gits: list[str]
    unreadable: list[str]
    links: list[str]


def _repositories_below(root: str) -> _Walk:
    """Every `.git` entry in a directory below `root`, whatever it is (not through symlinks), and
    the directories that cannot be read. The walk goes on inside repositories — one kept in
    another's work tree is obeyed there too, and a `.git` (even an empty file) must not stop it —
    but not into build outputs (`node_modules/`, `build/`), whose own `.git` is still looked for.
    An unreadable directory (`chmod 000` by an earlier command, to be undone by the next) could
    hide a repository: it is returned, to be pinned whole."""
    found: list[str] = []
    unreadable: list[str] = []
    listing = _listing(root)
    pending = list(listing.subdirs) if listing is not None else []
    outputs = list(listing.outputs) if listing is not None else []
    links = list(listing.links) if listing is not None else []
    while pending:
        directory = pending.pop()
        listing = _listing(directory)
        if listing is None:
            unreadable.append(directory)
            continue
        if listing.has_git:
            found.append(directory + "/.git")
        pending.extend(listing.subdirs)
        outputs.extend(listing.outputs)
        links.extend(listing.links)
    for directory in outputs:  # not cached: a `.git` made in `build/` changes `build/`'s mtime only
        try:
            os.lstat(f"{directory}/.git")
        except FileNotFoundError:
            continue
        except OSError:  # cannot be searched (`chmod 000 dist`): what is there cannot be known
            unreadable.append(directory)
            continue
        found.append(f"{directory}/.git")
    return _Walk(found, unreadable, links)


def _links_on_the_way(path: str, root: str) -> list[str]:
    """Symbolic links inside the workspace on the way to a gitdir a `.git` file names: a command
    could point one at a gitdir it made. A mount cannot pin a link, so these are returned to be
    protected — which refuses commands that can write, naming the link (docs/sandbox.md)."""
    links = []
    current = os.path.normpath(path)
    while current.startswith(root + os.sep):
        if os.path.islink(current):
            links.append(current)
        current = os.path.dirname(current)
    return links


def _named_gitdirs(dot_git: str, gitdir: Path) -> list[str]:
    """Where a repository's config and hooks live when its `.git` is a file: the gitdir it names
    and, for a linked worktree, the common directory that gitdir's `commondir` names."""
    if not os.path.isfile(dot_git) or os.path.islink(dot_git):
        return []  # a `.git` directory: pinned itself
    named = os.path.realpath(gitdir)
    common = _common_of(gitdir)
    return [named] if common == named else [named, common]


def common_git_dir(dot_git: Path) -> Path | None:
    """The directory holding the config and `info/` of the repository whose `.git` is `dot_git` —
    itself, or for a `.git` file (a linked worktree, a submodule) what it names, through its
    `commondir`; None when `dot_git` is neither (a FIFO there is never read)."""
    gitdir = _gitdir_of(str(dot_git))
    return Path(_common_of(gitdir)) if gitdir is not None else None


def _common_of(gitdir: Path) -> str:
    common = _first_line(os.path.join(gitdir, "commondir"))
    return os.path.realpath(os.path.join(gitdir, common) if common else gitdir)


def _listing(directory: str) -> _Listing | None:
    """What the walk needs of `directory`, kept while its (inode, mtime, ctime) stays: adding,
    removing or renaming an entry — `.git` too — changes a directory's mtime, and a `chmod` or a
    restored mtime its ctime, so an unchanged folder costs one `stat` (a 20,000-file tree: ~2,000
    per command). None when it cannot be read; an empty listing when it is gone."""
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        return _Listing((), (), False)
    except OSError:
        return None
    stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    with _cache_lock:
        cached = _listings.get(directory)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    subdirs: list[str] = []
    outputs: list[str] = []
    links: list[str] = []
    has_git = False
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name == ".git":
                    has_git = True
                elif entry.is_dir(follow_symlinks=False):
                    (outputs if entry.name in REGENERATED_DIRS else subdirs).append(entry.path)
                elif entry.is_symlink():
                    links.append(entry.path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return _Listing((), (), False)  # gone (or replaced) since the stat
        return None
    listing = _Listing(tuple(subdirs), tuple(outputs), has_git, tuple(links))
    with _cache_lock:
        _listings[directory] = (stamp, listing)
    return listing


def _stores_of(gitdir: Path) -> list[str]:
    """`tether/` in this git dir, its common dir and each of its linked worktrees', where one is."""
    common = _common_of(gitdir)
    worktrees = os.path.join(common, "worktrees")
    linked = [os.path.join(worktrees, n) for n in _names_in(worktrees)]
    stores = (os.path.join(d, "tether") for d in dict.fromkeys((os.path.realpath(gitdir), common, *linked)))
    return [store for store in stores if os.path.isdir(store) and not os.path.islink(store)]


def _names_in(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []
