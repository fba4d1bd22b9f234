"""Session permissions: a set of `read`, `write`, `command` (seed `--tool=` values).

Empty is the default and makes every tool call a dry run. `all` is all three; combinations such as
`read,write` are accepted in any order. Anything else is an error, never silently "none".
"""

from __future__ import annotations

from typing import Literal, get_args

from tether.errors import ConfigError

Permission = Literal["read", "write", "command"]
Permissions = frozenset[Permission]

ALL_PERMISSIONS: Permissions = frozenset(get_args(Permission))
NO_PERMISSIONS: Permissions = frozenset()
PERMISSION_WORDS = ("none", "read", "write", "command", "all")


def parse_permissions(text: str | None) -> Permissions:
    """Parse `none`, `all`, `read`, `read,write`, `` … into a permission set."""
    if text is None:
        return NO_PERMISSIONS
    words = [w.strip().lower() for w in text.replace("+", ",").split(",")]
    words = [w for w in words if w]
    granted: set[Permission] = set()
    for word in words:
        if word == "none":
            continue
        if word == "all":
            granted |= ALL_PERMISSIONS
        elif word in ALL_PERMISSIONS:
            granted.add(word)
        else:
            raise ConfigError(
                f"unknown permission {word!r}: use none, read, write, command, all, or a comma list"
            )
    return frozenset(granted)


def format_permissions(perms: Permissions) -> str:
    """The canonical spelling (`none`, `all`, or `read,write` in fixed order)."""
    if not perms:
        return "none"
    if perms == ALL_PERMISSIONS:
        return "all"
    return ",".join(p for p in ("read", "write", "command") if p in perms)
