"""No isolation: only when the user explicitly configured `sandbox.backend = "none"`.

It still applies the environment allowlist, the limits and the process-group kill, and every result
carries the loud warning so the model, the user and the audit log all see it.
"""

from __future__ import annotations

import threading

from tether.core.sandbox.base import NO_ISOLATION_WARNING, Runner, RunRequest, RunResult
from tether.core.sandbox.env import request_env
from tether.core.sandbox.process import Spawn, run_spawn


class NoSandboxRunner(Runner):
    name = "none"

    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        env = request_env(request, scratch=None)  # no private space to point caches at
        spawn = Spawn(
            argv=request.command_argv(),
            env=env,
            cwd=request.cwd,
            backend=self.name,
            warning=NO_ISOLATION_WARNING,
            direct=True,
        )
        return run_spawn(spawn, request, cancel)
