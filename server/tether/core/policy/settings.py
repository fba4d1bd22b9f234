"""The part of the effective configuration the policy reads (pure data, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from tether.core.policy.ruleset import Rule
from tether.core.policy.secrets import DEFAULT_SECRET_PATTERNS, SecretSettings


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
    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    """Secret file names (`secrets.py`): the defaults plus `[secrets] paths` from any layer."""
    secret_allowed: tuple[str, ...] = ()
    """Workspace-relative paths let through (`[secrets] allow`, user config only)."""
    max_command_length: int = 10_000
    network_enabled: bool = False
    """`[network]` allows some domains: curl and wget may run, through the proxy (docs/network.md)."""

    @cached_property
    def secrets(self) -> SecretSettings:
        """Made once per settings object (they are frozen): every path of every command is
        checked against it, and `secret_pattern`'s cache hashes it each time."""
        return SecretSettings(self.secret_patterns, frozenset(self.secret_allowed))
