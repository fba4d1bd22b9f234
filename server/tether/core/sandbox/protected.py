"""What the sandbox keeps read-only in a workspace: the one list the bash tool and `tether sandbox`
both run with.

The policy owns the names (`tether.core.policy.protected_write_paths`: `.git`, `.envrc`, editor
and CI configuration, …); `tether.core.gitlinks` adds the `.git` of other repositories inside the
workspace, which the user's own git obeys. Reading those needs git: when an index cannot be read
the list is incomplete, and a command that can write must not run (SandboxError).
"""

from __future__ import annotations

from pathlib import Path

from tether.core.gitlinks import protected_git_paths
from tether.core.policy import protected_write_paths
from tether.core.policy.settings import PolicySettings
from tether.errors import CheckpointError, SandboxError


def protected_paths(workspace: Path, settings: PolicySettings | None = None) -> tuple[Path, ...]:
    """Absolute paths (existing or not) no command may write; SandboxError when the other
    repositories inside cannot be listed."""
    paths = tuple(Path(p) for p in protected_write_paths(workspace, settings or PolicySettings()))
    try:
        return paths + protected_git_paths(workspace)
    except CheckpointError as exc:
        raise SandboxError(f"refusing to run a command that can write: {exc}; `git status` says why") from exc
