"""The `.git` of every submodule the user's index records, for the sandbox to keep read-only.

Why: the user's own `git status` (and an editor's, on its own) looks into every submodule the index
records, with that submodule's repository and config. A command in the sandbox could rewrite
`lib/.git` — a file `gitdir: ../.git/modules/lib` — to point at a gitdir it made, or edit the
config of a submodule whose `.git` is a directory, and name a `core.fsmonitor` program there: the
user's next `git status` would run it outside the sandbox. The policy refuses `.git` in any
directory for commands it reads, but a program it allows (a test run) can write anything the
sandbox lets it; so these paths join the sandbox's protected set.

Why a cache: listing the index is one git process; the answer changes only when the index file
does, so it is kept per index file and its (device, inode, size, mtime).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tether.core.gitcmd import Git
from tether.errors import CheckpointError

_GITLINK = b"160000"
_cache: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...]]] = {}
_cache_lock = threading.Lock()


def submodule_git_paths(workspace: Path) -> tuple[Path, ...]:
    """`<submodule>/.git` for every gitlink in the index of the repository holding `workspace`
    whose directory lies inside it (the directory itself where it has no `.git`). Raises
    CheckpointError when the index cannot be read: the caller must not run a command that could
    write without knowing them (fail closed)."""
    top = next((d for d in (workspace, *workspace.parents) if (d / ".git").exists()), None)
    if top is None:
        return ()
    git_dir = top / ".git"
    if not git_dir.is_dir() or git_dir.is_symlink():
        return ()  # a linked worktree or a submodule checkout: its index lies outside, read-only
    index = git_dir / "index"
    try:
        st = os.stat(index)
    except FileNotFoundError:
        return ()  # nothing added yet: no gitlink
    except OSError as exc:
        raise CheckpointError(f"cannot read the repository's index {index}: {exc.strerror}") from exc
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get(str(index))
    if cached is not None and cached[0] == stamp:
        paths = cached[1]
    else:
        paths = _gitlinks(Git(git_dir=git_dir, work_tree=top))
        with _cache_lock:
            _cache[str(index)] = (stamp, paths)
    root = os.path.realpath(workspace)
    out = []
    for rel in paths:
        full = os.path.join(os.path.realpath(top), rel)
        if not full.startswith(root + os.sep):
            continue
        # Not checked out (`lib/` empty, or missing): the directory itself, so no `.git` can be
        # made in it. A placeholder `lib/.git` would make the user's `git status` fail meanwhile.
        dot_git = os.path.join(full, ".git")
        out.append(Path(dot_git if os.path.lexists(dot_git) else full))
    return tuple(out)


def _gitlinks(git: Git) -> tuple[str, ...]:
    """The paths of the index's gitlinks (mode 160000), from `git ls-files --stage`."""
    listed = git.run("ls-files", "--stage", "-z").stdout
    found = []
    for entry in listed.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        if meta.startswith(_GITLINK + b" "):
            found.append(os.fsdecode(path))
    return tuple(found)
