"""Protected paths for a workspace, from the policy when it provides them.

The policy owns the list (`tether.core.policy.protected_write_paths`); this shim lets the sandbox
CLI and tool ask for it in one place. Until the policy module exports it, a conservative built-in
list is used, so the sandbox never runs with *no* protected paths.
"""

from __future__ import annotations

from pathlib import Path

from tether.core.policy.settings import PolicySettings

FALLBACK_PROTECTED = (
    ".git",
    ".tether",
    ".vscode",
    ".idea",
    ".envrc",
    ".env",
    ".gitmodules",
    ".github/workflows",
    ".gitlab-ci.yml",
    ".pre-commit-config.yaml",
)


def protected_paths(workspace: Path, settings: PolicySettings | None = None) -> tuple[Path, ...]:
    settings = settings if settings is not None else PolicySettings()
    try:
        import importlib

        # Looked up dynamically: the policy package may not export it yet in this checkout.
        provider = vars(importlib.import_module("tether.core.policy"))["protected_write_paths"]
    except (ImportError, KeyError):
        paths = [workspace / rel for rel in FALLBACK_PROTECTED]
        paths += [workspace / rel for rel in settings.extra_protected if not any(c in rel for c in "*?[")]
        return tuple(paths)
    return tuple(Path(p) for p in provider(workspace, settings))
