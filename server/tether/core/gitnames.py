"""Which paths git can store: its `verify_path`, as git 2.24 and later run it on Linux.

Why a copy of git's rule here: git refuses some names outright, whatever the index or command
(`.GIT/x`, `git~1`, `.git.`, `a\\.git`; for a symlink also `.gitmodules` and its NTFS short names).
`update-index` only says "Ignoring path" and goes on, and `read-tree` fails the whole snapshot. A
checkpoint that met such a file either lost it silently (rollback could then neither restore nor
delete it) or failed every time, which refused every call that changes the workspace. Knowing the
rule before git runs lets a checkpoint leave such a file out and say so, and lets the tools treat it
like any file a checkpoint does not hold.

The copy follows git's `read-cache.c` (`verify_path`, `verify_dotfile`) and `path.c`
(`is_ntfs_dotgit`, `is_ntfs_dot_generic`) byte for byte, with `core.protectNTFS` on (the default since
git 2.24, and set for the store by `gitcmd`) and `core.protectHFS` off (the default off macOS, also
set). A test holds it to the git on the machine over generated names.
"""

from __future__ import annotations

import os

_SEPARATORS = b"/\\"


def git_can_store(path: str, *, symlink: bool = False) -> bool:
    """False when git refuses `path` (relative, `/`-separated) as a file (or symlink) entry."""
    if path and not (
        path.startswith((".", "/"))
        or path.endswith("/")
        or "/." in path
        or "//" in path
        or "~" in path
        or "git" in path.lower()
    ):
        # Every name git refuses has an empty, `.` or `..` part, a `git` in some case or a `~`
        # (`gi7eba~1`). Most paths have none of these: 0.3 us each instead of 2-5 us.
        return True
    name = os.fsencode(path)
    start = 0
    while True:
        # the start of a component (git's `inside:` label)
        rest = name[start:]
        if _is_ntfs_dotgit(rest) or (symlink and _is_ntfs_dotgitmodules(rest)):
            return False
        if not rest or rest[:1] == b"/":
            return False  # an empty component; a trailing `/` names a directory, never a file
        if rest[:1] == b"." and not _dotfile_ok(rest[1:], symlink=symlink):
            return False
        slash = name.find(b"/", start + 1)
        component = name[start + 1 : slash if slash >= 0 else len(name)]
        # git also looks behind every backslash, which NTFS takes for a separator
        backslash = component.find(b"\\")
        while backslash >= 0:
            after = name[start + 1 + backslash + 1 :]
            if _is_ntfs_dotgit(after) or (symlink and _is_ntfs_dotgitmodules(after)):
                return False
            backslash = component.find(b"\\", backslash + 1)
        if slash < 0:
            return True
        start = slash + 1


def _dotfile_ok(rest: bytes, *, symlink: bool) -> bool:
    """git's `verify_dotfile`: `rest` follows a component's leading dot."""
    if not rest or rest[:1] == b"/":
        return False  # `.`
    if rest[:3].lower() == b"git":
        after = rest[3:]
        if not after or after[:1] == b"/":
            return False  # `.git`, in any case
        # `.gitmodules` as a symlink
        return not (symlink and after[:7].lower() == b"modules" and (len(after) == 7 or after[7:8] == b"/"))
    return not (rest[:1] == b"." and (len(rest) == 1 or rest[1:2] == b"/"))  # `..`


def _is_ntfs_dotgit(name: bytes) -> bool:
    """`.git` or `git~1`, any case, then only dots and spaces up to a separator, `:` or the end."""
    if name[:4].lower() == b".git":
        tail = name[4:]
    elif name[:3].lower() == b"git" and name[3:5] == b"~1":
        tail = name[5:]
    else:
        return False
    for byte in tail:
        if byte in _SEPARATORS or byte == ord(":"):
            return True
        if byte not in b". ":
            return False
    return True


def _is_ntfs_dotgitmodules(name: bytes) -> bool:
    return _is_ntfs_dot_generic(name, b"gitmodules", b"gi7eba")


def _is_ntfs_dot_generic(name: bytes, dotgit_name: bytes, shortname_prefix: bytes) -> bool:
    """git's `is_ntfs_dot_generic`: `.<dotgit_name>`, its short name `<first six>~1`..`~4`, or the
    fall-back short name `<prefix>~N`, any case, then only dots and spaces (or a `:`) to the end."""
    if name[:1] == b"." and name[1 : 1 + len(dotgit_name)].lower() == dotgit_name:
        return _only_spaces_and_periods(name[1 + len(dotgit_name) :])
    if name[:6].lower() == dotgit_name[:6] and name[6:7] == b"~" and name[7:8] in (b"1", b"2", b"3", b"4"):
        return _only_spaces_and_periods(name[8:])
    i = 0
    saw_tilde = False
    while i < 8:
        if i >= len(name):
            return False
        byte = name[i]
        if saw_tilde:
            if not 0x30 <= byte <= 0x39:
                return False
        elif byte == ord("~"):
            i += 1
            if i >= len(name) or not 0x31 <= name[i] <= 0x39:
                return False
            saw_tilde = True
        elif i >= 6 or byte & 0x80 or bytes([byte]).lower() != shortname_prefix[i : i + 1]:
            return False
        i += 1
    return _only_spaces_and_periods(name[8:])


def _only_spaces_and_periods(tail: bytes) -> bool:
    for byte in tail:
        if byte == ord(":"):
            return True
        if byte not in b". ":
            return False
    return True


def refused_part(path: str, *, symlink: bool = False) -> str:
    """The shortest leading part of `path` that git refuses: `.GIT` for `.GIT/a/b`, so that a
    directory of 30,000 such files is reported, and held, as one path. `path` itself when only the
    whole is refused (`.gitmodules` as a symlink), or when git would take it (nothing to shorten)."""
    end = path.find("/", 1)  # never the empty part before a leading `/`: that would name the root
    while end >= 0:
        if not git_can_store(path[:end]):
            return path[:end]
        end = path.find("/", end + 1)
    return path
