"""Recognising the sandbox's placeholder files.

Why this is its own module: the sandbox makes an empty, read-only file marked with an xattr where
a protected path is missing (a mount needs a mount point), and checkpoints must never record one —
a checkpoint taken while a command runs would otherwise snapshot a file the user never had, and a
rollback would create it. Both sides need the same test; neither should import the other.
"""

from __future__ import annotations

import os
import stat

PLACEHOLDER_XATTR = "user.tether.placeholder"


def is_marked_placeholder(path: str | os.PathLike[str], st: os.stat_result) -> bool:
    """An empty regular file without write permission that carries the sandbox's mark.

    `st` is the caller's `lstat` of `path`; the xattr is read only for files that pass the cheap
    checks, so a snapshot of 250,000 files pays it for almost none.
    """
    if not stat.S_ISREG(st.st_mode) or st.st_size != 0 or st.st_mode & 0o222:
        return False
    try:
        return os.getxattr(path, PLACEHOLDER_XATTR, follow_symlinks=False) == b"1"
    except OSError:
        return False
