"""The command and path policy: pure, parser-based, allowlist-only.

Why we parse bash this way: command allowlists built on string matching and blocklists have been
bypassed again and again — `sed`'s `e` flag, `git --upload-pa=` abbreviations, `rg --pre`,
`find -exec`, `${x@P}` prompt expansion, `>|`, env-prefixed pagers, `timeout`/`env`/`xargs`
wrappers. So we parse the command with tree-sitter-bash, accept only an allowlist of syntax node
types, re-do bash's quote removal ourselves and refuse any ambiguity, then check each simple
command against a per-program argument schema and every path against the workspace. Anything not
provably safe is denied, with a rule id, a reason and a suggestion.

This package does no I/O beyond resolving paths (realpath, glob) and imports nothing that runs
processes or talks to the network; `tests/unit/test_imports.py` enforces it.

    decision = decide("git log --oneline | head -5", "read", workspace, settings)
    if not decision.allowed:
        return decision.error_payload()
"""

from __future__ import annotations

from tether.core.policy.decide import allowed_commands, decide, decide_argv, lowest_mode
from tether.core.policy.paths import PathCheck, check_path, is_protected, protected_write_paths
from tether.core.policy.rules import RULES
from tether.core.policy.settings import PolicySettings
from tether.core.policy.types import MODES, Decision, Mode, Redirect, Segment

__all__ = [
    "MODES",
    "RULES",
    "Decision",
    "Mode",
    "PathCheck",
    "PolicySettings",
    "Redirect",
    "Segment",
    "allowed_commands",
    "check_path",
    "decide",
    "decide_argv",
    "is_protected",
    "lowest_mode",
    "protected_write_paths",
]
