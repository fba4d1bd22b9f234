"""Session permissions: a set of `read`, `write`, `command`, `workspace`.

Empty is the default and makes every tool call a dry run. `all` is `read,write,command` — it does
not include `workspace`, which must be asked for by name: `workspace` lets any program run in the
sandbox, and grants `read` and `command` with it (the ladder none < read < command < workspace).
Combinations such as `read,write` are accepted in any order. Anything else is an error, never
silently "none".
"""

from __future__ import annotations

from typing import Literal, get_args

from tether.errors import ConfigError

Permission = Literal["read", "write", "command", "workspace"]
Permissions = frozenset[Permission]

ALL_PERMISSIONS: Permissions = frozenset({"read", "write", "command"})
"""What `all` means: not `workspace`, which is never granted without being named."""
WORKSPACE_PERMISSIONS: Permissions = frozenset({"read", "command", "workspace"})
NO_PERMISSIONS: Permissions = frozenset()
PERMISSION_WORDS = ("none", "read", "write", "command", "workspace", "all")
_ORDER: tuple[Permission, ...] = get_args(Permission)


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
        elif word == "workspace":
            granted |= WORKSPACE_PERMISSIONS
        elif word in _ORDER:
            granted.add(word)
        else:
            raise ConfigError(
                f"unknown permission {word!r}: use none, read, write, command, workspace, all, "
                "or a comma list"
            )
    return frozenset(granted)


def format_permissions(perms: Permissions) -> str:
    """The canonical spelling (`none`, `all`, or the words in the fixed order
    `read,write,command,workspace`)."""
    if not perms:
        return "none"
    if perms == ALL_PERMISSIONS:
        return "all"
    return ",".join(p for p in _ORDER if p in perms)
