"""Limits on every backend that runs here: timeout kills the tree, output is capped while
streaming (memory stays bounded), binary output is safe, cancellation stops the command."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import tracemalloc
from pathlib import Path

import pytest

from tether.core.sandbox import STRENGTH_ORDER, RunRequest, make_runner, probe_backend
from tether.core.sandbox.base import Runner
from tether.errors import SandboxUnavailable


@pytest.fixture(params=STRENGTH_ORDER)
def runner(request: pytest.FixtureRequest) -> Runner:
    status = probe_backend(str(request.param))
    if not status.available:
        pytest.skip(f"backend {request.param} cannot run here: {status.reason}")
    return make_runner(str(request.param))


def _req(ws: Path, script: str, *, timeout: float = 30, cap: int = 500_000) -> RunRequest:
    return RunRequest(argv=None, script=script, cwd=ws, workspace=ws, timeout=timeout, max_output_bytes=cap)


def _alive_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found


def test_simple_argv_and_exit_codes(runner: Runner, tmp_path: Path) -> None:
    ok = runner.run(RunRequest(("echo", "a b", "$HOME"), None, tmp_path, tmp_path, 30, 1000))
    assert (ok.stdout, ok.exit_code, ok.timed_out) == ("a b $HOME\n", 0, False)
    assert ok.backend == runner.name
    fail = runner.run(_req(tmp_path, "echo out; echo err >&2; exit 3"))
    assert (fail.stdout, fail.stderr, fail.exit_code) == ("out\n", "err\n", 3)
    killed = runner.run(_req(tmp_path, "kill -9 $$"))
    assert killed.exit_code == 137


def test_missing_program_is_the_commands_failure(runner: Runner, tmp_path: Path) -> None:
    """Exit 127 like a shell, not a "sandbox unavailable" error."""
    result = runner.run(RunRequest(("no-such-program-x", "a"), None, tmp_path, tmp_path, 30, 1000))
    assert result.exit_code == 127
    assert "no-such-program-x" in result.stderr


def test_output_that_looks_like_a_wrapper_error_is_just_output(runner: Runner, tmp_path: Path) -> None:
    for text in ("Error: x", "bwrap: x", "Error disable file: fs.c:151 x"):
        result = runner.run(_req(tmp_path, f"echo '{text}' >&2; exit 1"))
        assert result.exit_code == 1
        assert result.stderr == f"{text}\n"


def test_timeout_kills_grandchildren_and_keeps_partial_output(runner: Runner, tmp_path: Path) -> None:
    marker = f"{400 + secrets.randbelow(500)}.{secrets.randbelow(10**6)}"
    script = (
        f"echo before; echo err-before >&2; (sleep {marker} & setsid sleep {marker} & wait) & sleep {marker}"
    )
    result = runner.run(_req(tmp_path, script, timeout=1.5))
    assert result.timed_out
    assert result.exit_code == -1
    assert result.stdout == "before\n"
    assert result.stderr == "err-before\n"
    assert _alive_with(marker) == []


@pytest.mark.slow
def test_one_gigabyte_is_capped_with_bounded_memory(runner: Runner, tmp_path: Path) -> None:
    cap = 100_000
    tracemalloc.start()
    try:
        result = runner.run(
            _req(tmp_path, "head -c 1000000000 /dev/zero | tr '\\0' 'x'; echo; echo END", cap=cap)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0
    assert result.stdout_truncated
    assert result.stdout_bytes == 1_000_000_000 + 5
    assert result.stdout.startswith("x" * 1000)
    assert result.stdout.endswith("xxx\nEND\n")
    assert "bytes truncated …]" in result.stdout
    assert len(result.stdout.encode()) < cap + 200
    # Python-level allocations during the whole run stay within a few times the cap.
    assert peak < 8 * cap + 2_000_000, f"peak traced memory {peak} bytes"


def test_binary_output_is_decoded_safely(runner: Runner, tmp_path: Path) -> None:
    result = runner.run(_req(tmp_path, "printf 'ok\\377\\376\\000end'; head -c 3000 /dev/urandom >&2"))
    assert result.binary_output
    assert result.stdout.startswith("ok\ufffd\ufffd")
    assert result.stdout.endswith("end")
    result.stdout.encode("utf-8")  # always valid text
    result.stderr.encode("utf-8")
    text = runner.run(_req(tmp_path, "printf 'héllo ✓\\n'"))
    assert text.stdout == "héllo ✓\n"
    assert not text.binary_output


def test_cancel_stops_the_command(runner: Runner, tmp_path: Path) -> None:
    marker = f"{300 + secrets.randbelow(500)}.{secrets.randbelow(10**6)}"
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    try:
        result = runner.run(_req(tmp_path, f"echo started; sleep {marker}", timeout=120), cancel)
    finally:
        timer.cancel()
    assert result.cancelled
    assert not result.timed_out
    assert result.exit_code == -1
    assert result.stdout == "started\n"
    assert _alive_with(marker) == []


def test_stdin_is_empty_and_cwd_is_honoured(runner: Runner, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    result = runner.run(RunRequest(None, "pwd; cat; echo done", sub, tmp_path, 30, 10_000))
    assert result.stdout == f"{sub}\ndone\n"


def test_environment_is_allowlisted(runner: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("MY_SETTING", "visible")
    request = RunRequest(("env",), None, tmp_path, tmp_path, 30, 100_000, env_passthrough=("MY_SETTING",))
    result = runner.run(request)
    assert "secret" not in result.stdout
    assert "MY_SETTING=visible" in result.stdout
    assert "GIT_CONFIG_GLOBAL=/dev/null" in result.stdout


def test_a_bwrap_setup_failure_is_unavailable_not_a_command_failure(tmp_path: Path) -> None:
    """bwrap cannot chdir into a missing directory: nothing ran, and the caller is told so."""
    if not probe_backend("bubblewrap").available:
        pytest.skip(f"bubblewrap cannot run here: {probe_backend('bubblewrap').reason}")
    runner = make_runner("bubblewrap")
    request = RunRequest(("true",), None, tmp_path / "missing", tmp_path, 30, 1000)
    with pytest.raises(SandboxUnavailable, match="could not set up the sandbox"):
        runner.run(request)


def test_read_only_workspace(runner: Runner, tmp_path: Path) -> None:
    """Read-mode commands get no checkpoint, so the sandbox keeps the whole workspace read-only."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    request = RunRequest(
        argv=None,
        script="cat a.txt; echo x >> a.txt; echo y > sub/new; mkdir d; rm a.txt; "
        "echo tmp > ${TMPDIR:-/tmp}/t; cat ${TMPDIR:-/tmp}/t",
        cwd=tmp_path,
        workspace=tmp_path,
        timeout=30,
        max_output_bytes=10_000,
        protected=(tmp_path / ".git",),
        read_only_workspace=True,
    )
    result = runner.run(request)
    assert result.stdout == "a\ntmp\n"  # reads work, and scratch space outside the workspace too
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "sub"]
    assert list((tmp_path / "sub").iterdir()) == []


def test_stdin_is_fed_when_given(runner: Runner, tmp_path: Path) -> None:
    request = RunRequest(("cat",), None, tmp_path, tmp_path, 30, 10_000_000, stdin=b"x" * 1_000_000)
    assert runner.run(request).stdout == "x" * 1_000_000


def test_a_virtualenv_under_tmp_stays_usable_and_read_only(
    runner: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI checkout under /tmp: its venv must not vanish behind the private /tmp, nor be writable."""
    venv = tmp_path / "checkout" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib").mkdir()
    (venv / "lib" / "data.txt").write_text("from the venv\n")
    tool = venv / "bin" / "venv-tool"
    tool.write_text(f"#!/bin/sh\ncat {venv}/lib/data.txt\n")
    tool.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ['PATH']}")
    result = runner.run(_req(ws, f"venv-tool; touch {venv}/lib/planted"))
    assert result.stdout == "from the venv\n"
    assert result.exit_code != 0  # the touch failed
    assert not (venv / "lib" / "planted").exists()
