"""The part of the effective configuration the policy reads (pure data, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tether.core.policy.ruleset import Rule


@dataclass(frozen=True)
class PolicySettings:
    """What the user (and, narrowing only, the project) configured for command and path rules.

    `extra_allowed` comes from the user config alone (`command_whitelist`): command prefixes such as
    `make lint` that are allowed in command mode on top of the built-in schemas. `denied` holds deny
    prefixes from either config; a deny always wins. `extra_protected` adds workspace-relative paths
    (or globs) that may never be written.
    """

    extra_allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    extra_protected: tuple[str, ...] = field(default_factory=tuple)
    rules: tuple[Rule, ...] = ()
    """Rules as data from every layer (`ruleset.py`): the strictest matching rule wins."""
    max_command_length: int = 10_000
