"""The runner contract: what a sandboxed command is given and what comes back.

Every backend (bubblewrap, firejail, landlock, none) implements the same `Runner.run`, so the
bash_command tool, `tether sandbox` and the tests never know which one ran — except through
`RunResult.backend` and `RunResult.warning`, which are always reported to the user.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

NO_ISOLATION_WARNING = "Warning: sandbox unavailable, running without isolation"


@dataclass(frozen=True)
class RunRequest:
    """One command. Exactly one of `argv` (exec'd directly) and `script` (bash -c) is set.

    `protected` are absolute paths inside the workspace that must stay read-only even though the
    workspace is writable (the gate fills it from the policy's `protected_write_paths`); they may
    not exist yet, and creating them must fail too.

    `read_only_workspace` makes the whole workspace read-only: for commands the policy allowed in
    read mode, which the gate runs without a checkpoint, so they must not be able to change a thing.

    `masked` are existing secret files and directories inside the workspace (`.env`, `.ssh/`:
    docs/secrets.md) that no program may read: every backend hides them, read-only mode or not.
    """

    argv: tuple[str, ...] | None
    script: str | None
    cwd: Path
    workspace: Path
    timeout: float
    max_output_bytes: int
    protected: tuple[Path, ...] = ()
    env_passthrough: tuple[str, ...] = ()
    read_only_workspace: bool = False
    masked: tuple[Path, ...] = ()
    extra_env: tuple[tuple[str, str], ...] = ()
    # Variables that name a folder in the command's private scratch space, discarded with it: (name,
    # subfolder). Package managers' caches: your own (`~/.npm`) is read-only in the sandbox, and
    # npm, yarn, pnpm and bun stop when they cannot write theirs.
    scratch_env: tuple[tuple[str, str], ...] = ()
    # The network proxy's Unix socket (docs/network.md): bound into the sandbox, with a bridge from
    # the sandbox's own loopback to it. None: no network at all (the default).
    network_socket: Path | None = None
    # Fed to the command's stdin, then closed (hooks get their JSON this way); None = /dev/null.
    stdin: bytes | None = None
    # False leaves PATH directories inside the workspace out: a hook's `python3` must not be an
    # activated .venv's, whose site-packages any command may write (a `.pth` file runs first).
    workspace_path: bool = True

    def __post_init__(self) -> None:
        if (self.argv is None) == (self.script is None):
            raise ValueError("RunRequest needs exactly one of argv and script")
        if self.argv is not None and not self.argv:
            raise ValueError("RunRequest.argv must not be empty")
        if self.timeout <= 0:
            raise ValueError("RunRequest.timeout must be positive")

    def command_argv(self) -> tuple[str, ...]:
        """What is exec'd inside the sandbox: the argv, or bash without any rc file for a script."""
        if self.argv is not None:
            return self.argv
        assert self.script is not None
        return ("bash", "--noprofile", "--norc", "-c", self.script)


@dataclass
class RunResult:
    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    binary_output: bool
    backend: str
    warning: str | None = None
    cancelled: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0


@dataclass(frozen=True)
class BackendStatus:
    """The outcome of probing one backend on this machine: usable or not, and why."""

    name: str
    available: bool
    reason: str
    version: str | None = None
    details: tuple[str, ...] = field(default=())


class Runner(ABC):
    """Runs one request confined by its backend. Never raises for the command's own failure."""

    name: str = "abstract"

    @abstractmethod
    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        """Run, wait (bounded by the timeout and `cancel`) and return the captured result.

        Raises SandboxUnavailable when the backend itself cannot start: nothing ran then.
        """
