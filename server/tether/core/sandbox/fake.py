"""A scripted runner for unit tests of *callers* (the gate, the tool's result shaping).

It runs nothing. Tests of the sandbox itself never use it: they run the real backends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tether.core.sandbox.base import Runner, RunRequest, RunResult


class FakeRunner(Runner):
    """Returns `respond(request)` (default: success with empty output) and records every request."""

    name = "fake"

    def __init__(self, respond: Callable[[RunRequest], RunResult] | None = None) -> None:
        self.requests: list[RunRequest] = []
        self._respond = respond

    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        self.requests.append(request)
        if self._respond is not None:
            return self._respond(request)
        return RunResult(
            stdout="",
            stderr="",
            exit_code=0,
            duration_ms=0,
            timed_out=False,
            stdout_truncated=False,
            stderr_truncated=False,
            binary_output=False,
            backend=self.name,
        )
