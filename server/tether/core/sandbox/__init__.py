"""Run commands confined: read-only system, writable workspace, no network, no secrets, bounded.

    runner = select_runner(config.sandbox)          # raises SandboxUnavailable: fail closed
    result = runner.run(RunRequest(argv=("pytest", "-q"), script=None, cwd=ws, workspace=ws,
                                   timeout=30, max_output_bytes=500_000, protected=(ws / ".git",)))

Backends: bubblewrap (preferred), firejail, landlock, none (only when the user configured it).
"""

from __future__ import annotations

from tether.core.sandbox.base import (
    NO_ISOLATION_WARNING,
    BackendStatus,
    Runner,
    RunRequest,
    RunResult,
)
from tether.core.sandbox.env import hardened_git_env, sandbox_env
from tether.core.sandbox.fake import FakeRunner
from tether.core.sandbox.probe import (
    ALL_BACKENDS,
    STRENGTH_ORDER,
    auto_choice,
    make_runner,
    probe_backend,
    probe_backends,
    select_runner,
)

__all__ = [
    "ALL_BACKENDS",
    "NO_ISOLATION_WARNING",
    "STRENGTH_ORDER",
    "BackendStatus",
    "FakeRunner",
    "RunRequest",
    "RunResult",
    "Runner",
    "auto_choice",
    "hardened_git_env",
    "make_runner",
    "probe_backend",
    "probe_backends",
    "sandbox_env",
    "select_runner",
]
