"""Where Tether's cross-process lock files live: one per key, in the user's state directory.

Why not beside what they guard: a lock inside the workspace or its `.git` would be a file the
agent's commands might reach, and writing into a repository the user merely works under (a home
directory kept in git) is not ours to do. The state directory is private to the user and hidden
from the sandbox; `/tmp/tether-<uid>-locks` is the fallback when it cannot be created.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import platformdirs


def lock_file(key: str) -> Path:
    """The lock file for `key` (a workspace path, a repository's git directory, …); OSError when
    no folder for lock files can be created."""
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()[:32]  # a path need not be UTF-8
    folders = (
        Path(platformdirs.user_state_dir("tether")) / "sandbox-locks",
        Path(tempfile.gettempdir()) / f"tether-{os.getuid()}-locks",
    )
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError:
            continue
        return folder / f"{digest}.lock"
    raise OSError("no writable directory for Tether's lock files")
