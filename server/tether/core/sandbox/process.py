"""Spawning a (wrapped) command and collecting its output within time and size limits.

Shared by every backend: the backend only decides the wrapper argv, environment and hooks. Output
is read from both pipes with a selector while the command runs, so the cap holds memory bounded;
the timeout and the cancel event kill the whole process group (and the backend's own tree hook),
and whatever was read until then is returned.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.core.sandbox.base import RunRequest, RunResult
from tether.core.sandbox.output import BoundedCapture
from tether.errors import SandboxUnavailable

_READ_CHUNK = 65536
_POLL_SECONDS = 0.05
# After the command ended or was killed, how long stragglers holding the pipes may keep them open.
_DRAIN_GRACE = 2.0


@dataclass(frozen=True)
class Spawn:
    """What a backend wants executed: the full argv (wrapper + command) and how to stop its tree."""

    argv: Sequence[str]
    env: dict[str, str]
    cwd: Path
    backend: str
    warning: str | None = None
    preexec_fn: Callable[[], None] | None = None
    pass_fds: tuple[int, ...] = ()
    # Called with the wrapper's pid when the run must end early (timeout/cancel), before SIGKILL.
    stop_tree: Callable[[int], None] | None = None


def run_spawn(spawn: Spawn, request: RunRequest, cancel: threading.Event | None) -> RunResult:
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(spawn.argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=spawn.env,
            cwd=str(spawn.cwd),
            start_new_session=True,  # own process group: the timeout can kill the whole tree
            close_fds=True,
            pass_fds=spawn.pass_fds,
            preexec_fn=spawn.preexec_fn,  # noqa: PLW1509 - backends pass async-signal-safe hooks only
        )
    except OSError as exc:
        raise SandboxUnavailable(f"{spawn.backend}: cannot start {spawn.argv[0]!r}: {exc.strerror}") from exc

    # The cap applies to each stream, so stderr noise cannot push the stdout result out.
    cap = max(0, request.max_output_bytes)
    out, err = BoundedCapture(cap), BoundedCapture(cap)
    assert proc.stdout is not None
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    deadline = start + request.timeout
    timed_out = cancelled = False
    drain_deadline: float | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if drain_deadline is None:
                if now >= deadline:
                    timed_out = True
                elif cancel is not None and cancel.is_set():
                    cancelled = True
                if timed_out or cancelled:
                    _kill(proc, spawn)
                    drain_deadline = now + _DRAIN_GRACE
                elif _exited(proc):
                    # The command returned: anything still in its group is a left-behind process.
                    # Its leader is not reaped yet, so the group id cannot have been reused.
                    _killpg(proc.pid)
                    drain_deadline = now + _DRAIN_GRACE
            elif now >= drain_deadline:
                break
            for key, _ in sel.select(timeout=_POLL_SECONDS):
                chunk = os.read(key.fd, _READ_CHUNK)
                if chunk:
                    key.data.feed(chunk)
                else:
                    sel.unregister(key.fileobj)
        if not (timed_out or cancelled):
            # Pipes closed but the command may not have exited yet: wait within the deadline.
            # Short sleeps first: the wrapper usually exits right after closing its pipes.
            pause = 0.0005
            while not _exited(proc):
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                time.sleep(pause)
                pause = min(pause * 2, _POLL_SECONDS / 5)
        _kill(proc, spawn)  # leader still unreaped: the group id is still ours
        proc.wait()
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:  # an exception escaped the loop: never leave the tree running
            _kill(proc, spawn)
            proc.wait()
    so, se = out.result(), err.result()
    exit_code = -1 if (timed_out or cancelled) else _exit_code(proc.returncode)
    return RunResult(
        stdout=so.text,
        stderr=se.text,
        exit_code=exit_code,
        duration_ms=int((time.monotonic() - start) * 1000),
        timed_out=timed_out,
        stdout_truncated=so.truncated,
        stderr_truncated=se.truncated,
        binary_output=so.binary or se.binary,
        backend=spawn.backend,
        warning=spawn.warning,
        cancelled=cancelled,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )


def _exit_code(returncode: int) -> int:
    """Shell convention for signals (128 + n), so a killed command never looks successful."""
    return 128 - returncode if returncode < 0 else returncode


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """True once the process ended, without reaping it (WNOWAIT keeps its pid and group reserved)."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill(proc: subprocess.Popen[bytes], spawn: Spawn) -> None:
    if spawn.stop_tree is not None:
        with contextlib.suppress(OSError):
            spawn.stop_tree(proc.pid)
    _killpg(proc.pid)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
