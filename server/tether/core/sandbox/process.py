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
# After the wrapper reported the command's exit: how long it may take to exit on its own (it does at
# once, unless the command left a process behind) before the sandbox is stopped.
_LEFT_BEHIND_GRACE = 0.25


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
    # True when argv[0] is the user's command itself (no wrapper): a missing program is then the
    # command's failure (exit 127, like a shell), not an unavailable sandbox.
    direct: bool = False
    # Its write end is passed to the child and closed in the parent once the child started.
    marker: StartMarker | None = None


def run_spawn(spawn: Spawn, request: RunRequest, cancel: threading.Event | None) -> RunResult:
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(spawn.argv),
            stdin=subprocess.DEVNULL if request.stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=spawn.env,
            cwd=str(spawn.cwd),
            start_new_session=True,  # own process group: the timeout can kill the whole tree
            close_fds=True,
            pass_fds=spawn.pass_fds + ((spawn.marker.write_fd,) if spawn.marker is not None else ()),
            preexec_fn=spawn.preexec_fn,  # noqa: PLW1509 - backends pass async-signal-safe hooks only
        )
    except OSError as exc:
        if spawn.direct and isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError):
            return not_started(
                spawn,
                f"{spawn.argv[0]}: {exc.strerror}\n",
                127 if isinstance(exc, FileNotFoundError) else 126,
            )
        raise SandboxUnavailable(f"{spawn.backend}: cannot start {spawn.argv[0]!r}: {exc.strerror}") from exc

    if spawn.marker is not None:
        spawn.marker.close_write()  # only the sandbox keeps a write end now
    if request.stdin is not None:
        _feed_stdin(proc, request.stdin)
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
    reported: int | None = None  # the command's own status, when the wrapper outlives it
    reported_at: float | None = None
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
                elif spawn.marker is not None and (reported := spawn.marker.exit_status()) is not None:
                    # The command returned. Its wrapper exits by itself unless the command left a
                    # process behind, and stopping a sandbox costs firejail ~1 s: a moment first.
                    reported_at = now if reported_at is None else reported_at
                    if now - reported_at >= _LEFT_BEHIND_GRACE:
                        _kill(proc, spawn)
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
    if reported is not None and not (timed_out or cancelled):
        exit_code = reported
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


class StartMarker:
    """Tells a sandbox set-up failure from the command's own failure, unspoofably.

    The sandbox writes one byte to this pipe once confinement is in place and right before it
    execs the command, so a command cannot fake "the sandbox failed" by printing a wrapper-like
    error: either the byte arrived (whatever happened next is the command's) or it did not.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self._seen = b""

    def shell_prefix(self, argv: Sequence[str], *, report_exit: bool = False) -> list[str]:
        """`argv` run by a bash that first writes the marker and closes its descriptor.

        With `report_exit` the bash stays, runs `argv` without the descriptor and then writes its
        exit status: for a wrapper that outlives the command (firejail waits for every process in
        its namespace, so a daemon the command started would hold the call until the timeout).
        The command cannot fake the status: it never holds the descriptor.
        """
        fd = self.write_fd
        if report_exit:
            script = f'printf x >&{fd} && {{ "$@" {fd}>&-; s=$?; printf "e%d\\n" "$s" >&{fd}; exit "$s"; }}'
        else:
            script = f'printf x >&{fd} && exec {fd}>&- && exec "$@"'
        return ["/bin/bash", "--noprofile", "--norc", "-c", script, "tether-sandbox", *argv]

    def _read(self) -> bytes:
        if self.read_fd >= 0:
            try:
                while chunk := os.read(self.read_fd, 64):
                    self._seen += chunk
            except BlockingIOError:
                pass
        return self._seen

    def started(self) -> bool:
        return self._read().startswith(b"x")

    def exit_status(self) -> int | None:
        """The command's exit status once the wrapper reported it (`report_exit`), else None."""
        seen = self._read()
        if not (seen.startswith(b"xe") and seen.endswith(b"\n")):
            return None
        try:
            return int(seen[2:-1])
        except ValueError:
            return None

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.close_write()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def __enter__(self) -> StartMarker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def not_started(spawn: Spawn, stderr: str, exit_code: int) -> RunResult:
    """The result of a command that could not be executed (not found / not executable)."""
    return RunResult(
        stdout="",
        stderr=stderr,
        exit_code=exit_code,
        duration_ms=0,
        timed_out=False,
        stdout_truncated=False,
        stderr_truncated=False,
        binary_output=False,
        backend=spawn.backend,
        warning=spawn.warning,
        stderr_bytes=len(stderr.encode()),
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


def _feed_stdin(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write stdin from a thread: a command that does not read it must not block the output loop."""
    pipe = proc.stdin
    assert pipe is not None

    def feed() -> None:
        with contextlib.suppress(OSError):  # the command exited or closed stdin early: its choice
            try:
                pipe.write(data)
            finally:
                pipe.close()

    threading.Thread(target=feed, name="sandbox-stdin", daemon=True).start()
