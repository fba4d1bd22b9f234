"""`tether sandbox` and `tether doctor` as a user (and the external evaluation) runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.core.sandbox import auto_choice

TETHER = [sys.executable, "-m", "tether"]


def _tether(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False
    )


def _user_env(tmp_path: Path, config: str | None = None) -> dict[str, str]:
    """A clean user config (so the developer's own config cannot change the outcome)."""
    env = dict(os.environ)
    cfg = tmp_path / "user-config.toml"
    cfg.write_text(config or "")
    env["TETHER_CONFIG"] = str(cfg)
    return env


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_sandbox_exit_code_backend_and_output(ws: Path, tmp_path: Path) -> None:
    proc = _tether(
        "sandbox",
        "--workspace",
        str(ws),
        "--",
        "bash",
        "-c",
        "echo out; echo err >&2; exit 7",
        env=_user_env(tmp_path),
    )
    assert proc.returncode == 7
    assert proc.stdout == "out\n"
    assert f"tether: sandbox backend: {auto_choice()}" in proc.stderr
    assert "err" in proc.stderr


def test_sandbox_runs_argv_without_a_shell(ws: Path, tmp_path: Path) -> None:
    proc = _tether("sandbox", "--workspace", str(ws), "--", "echo", "$HOME;", "*", env=_user_env(tmp_path))
    assert proc.stdout == "$HOME; *\n"


def test_sandbox_defaults_to_the_current_directory(ws: Path, tmp_path: Path) -> None:
    proc = _tether("sandbox", "--", "pwd", env=_user_env(tmp_path), cwd=ws)
    assert proc.stdout.strip() == str(ws.resolve())


def test_sandbox_timeout_exits_124(ws: Path, tmp_path: Path) -> None:
    proc = _tether(
        "sandbox", "--workspace", str(ws), "--timeout", "1", "--", "sleep", "30", env=_user_env(tmp_path)
    )
    assert proc.returncode == 124
    assert "timeout after 1s" in proc.stderr


def test_configured_backend_that_cannot_run_is_refused(ws: Path, tmp_path: Path) -> None:
    """firejail missing from PATH: nothing runs, the error says why (fail closed)."""
    env = _user_env(tmp_path)
    env["PATH"] = "/nonexistent"
    marker = ws / "ran"
    proc = _tether(
        "sandbox",
        "--workspace",
        str(ws),
        "--backend",
        "firejail",
        "--",
        "/usr/bin/touch",
        str(marker),
        env=env,
    )
    assert proc.returncode == 2
    assert "firejail" in proc.stderr
    assert "not installed" in proc.stderr
    assert not marker.exists()


def test_backend_from_user_config_is_used(ws: Path, tmp_path: Path) -> None:
    env = _user_env(tmp_path, '[sandbox]\nbackend = "landlock"\n')
    proc = _tether("sandbox", "--workspace", str(ws), "--", "true", env=env)
    if "landlock" not in proc.stderr and proc.returncode == 2:
        pytest.skip(f"landlock cannot run here: {proc.stderr.strip()}")
    assert "tether: sandbox backend: landlock" in proc.stderr


def test_none_backend_warns_loudly(ws: Path, tmp_path: Path) -> None:
    proc = _tether(
        "sandbox", "--workspace", str(ws), "--backend", "none", "--", "true", env=_user_env(tmp_path)
    )
    assert proc.returncode == 0
    assert "Warning: sandbox unavailable, running without isolation" in proc.stderr


def test_project_config_cannot_turn_the_sandbox_off(ws: Path, tmp_path: Path) -> None:
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text('[sandbox]\nbackend = "none"\n')
    proc = _tether("sandbox", "--workspace", str(ws), "--", "true", env=_user_env(tmp_path))
    assert proc.returncode == 0
    assert "tether: sandbox backend: none" not in proc.stderr
    assert "without isolation" not in proc.stderr


def test_sandbox_without_argv_is_a_usage_error(ws: Path, tmp_path: Path) -> None:
    proc = _tether("sandbox", "--workspace", str(ws), env=_user_env(tmp_path))
    assert proc.returncode == 2
    assert "nothing to run" in proc.stderr


def test_doctor_reports_every_backend(tmp_path: Path) -> None:
    proc = _tether("doctor", "--json", env=_user_env(tmp_path))
    report = json.loads(proc.stdout)
    assert set(report["backends"]) == {"bubblewrap", "firejail", "landlock", "none"}
    for status in report["backends"].values():
        assert status["reason"]
    assert report["auto"] == auto_choice()
    assert proc.returncode == (0 if report["auto"] else 1)
    text = _tether("doctor", env=_user_env(tmp_path))
    assert "auto picks:" in text.stdout
    for name in ("bubblewrap", "firejail", "landlock"):
        assert name in text.stdout


def test_doctor_explains_a_missing_backend(tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    (tmp_path / "empty-bin").mkdir()
    env["PATH"] = str(tmp_path / "empty-bin")  # firejail cannot be found
    proc = _tether("doctor", "--json", env=env)
    report = json.loads(proc.stdout)
    assert report["backends"]["firejail"]["available"] is False
    assert "not installed" in report["backends"]["firejail"]["reason"]
