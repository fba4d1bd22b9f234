"""`tether check` as scripts and the evaluation use it: a real subprocess, exit codes, JSON lines.

The CLI runs in a child process with an isolated user config (TETHER_CONFIG), so the developer's
own config cannot change verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "user-config.toml"
    config.write_text('[tool_safety]\ncommand_whitelist = ["make lint"]\n')
    return {**os.environ, "TETHER_CONFIG": str(config)}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hi\n")
    return workspace


def run(
    args: list[str], env: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tether", "check", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_allowed_exits_0(ws: Path, env: dict[str, str]) -> None:
    result = run(["--workspace", str(ws), "ls -la"], env)
    assert result.returncode == 0
    assert result.stdout.decode().startswith("allowed")


def test_denied_exits_1_with_rule_reason_and_suggestion(ws: Path, env: dict[str, str]) -> None:
    result = run(["--mode", "read", "--workspace", str(ws), "rm -rf /"], env)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "denied (command.blocked)" in out
    assert "suggestion:" in out


def test_default_mode_is_command(ws: Path, env: dict[str, str]) -> None:
    assert run(["-w", str(ws), "echo hi > out.txt"], env).returncode == 0
    assert run(["--mode", "read", "-w", str(ws), "echo hi > out.txt"], env).returncode == 1


def test_workspace_defaults_to_cwd(ws: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tether", "check", "--json", "cat ../x"],
        capture_output=True,
        env=env,
        cwd=ws,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["rule"] == "path.outside_workspace"


def test_json_output(ws: Path, env: dict[str, str]) -> None:
    result = run(["--json", "--mode", "read", "-w", str(ws), "git log | head -3"], env)
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["allowed"] is True
    assert data["segments"] == [["git", "log"], ["head", "-3"]]
    assert data["needs_shell"] is True


def test_user_config_is_loaded(ws: Path, env: dict[str, str]) -> None:
    result = run(["--json", "-w", str(ws), "make lint"], env)
    assert (result.returncode, json.loads(result.stdout)["rule"]) == (0, "allowed.user_rule")


def test_project_config_cannot_widen(ws: Path, env: dict[str, str]) -> None:
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text('[policy]\nallow = ["curl"]\n')
    result = run(["-w", str(ws), "curl http://example.com"], env)
    assert result.returncode == 1
    assert "only the user config" in result.stderr.decode()


@pytest.mark.parametrize(
    "args",
    [
        [],  # no command
        ["--mode", "write", "ls"],
        ["--jsonl", "ls"],  # both
        ["--json", "--jsonl"],
        ["--workspace", "/nonexistent/dir", "ls"],
        ["ls", "extra"],
    ],
)
def test_usage_errors_exit_2(args: list[str], env: dict[str, str]) -> None:
    assert run(args, env).returncode == 2


def test_invalid_config_is_a_usage_error(ws: Path, env: dict[str, str]) -> None:
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text("[policy\n")
    result = run(["-w", str(ws), "ls"], env)
    assert result.returncode == 2
    assert "config.toml" in result.stderr.decode()


def test_jsonl_survives_any_input_in_order(ws: Path, env: dict[str, str]) -> None:
    lines = [
        json.dumps({"id": 1, "cmd": "ls -la"}).encode(),
        json.dumps({"id": "two", "cmd": "rm -rf /"}).encode(),
        b"not json at all",
        json.dumps({"id": 3, "cmd": "echo a\nrm b"}).encode(),
        json.dumps({"id": 4, "cmd": "ls\u0000; rm x"}).encode(),
        json.dumps({"id": 5, "cmd": "ls \u001b[31m \r x"}).encode(),
        json.dumps({"id": 6, "cmd": "ls " + "a" * 3_000_000}).encode(),
        b"\xff\xfe\x00garbage",
        json.dumps({"id": 7}).encode(),
        json.dumps([1, 2]).encode(),
        json.dumps({"id": {"nested": [1]}, "cmd": 42}).encode(),
        b'{"id": 8, "cmd": "\\ud800 lone surrogate"}',
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"id": 9, "cmd": "git status"}).encode() + b"\r",
        b"",  # blank lines are skipped, not answered
        json.dumps({"id": 10, "cmd": "cat /etc/passwd"}).encode(),
    ]
    result = run(["--mode", "read", "--workspace", str(ws), "--jsonl"], env, b"\n".join(lines) + b"\n")
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(out) == len(lines) - 1
    assert [o["id"] for o in out] == [
        1,
        "two",
        None,
        3,
        4,
        5,
        6,
        None,
        7,
        None,
        {"nested": [1]},
        8,
        None,
        9,
        10,
    ]
    by_id = {json.dumps(o["id"]): o for o in out}
    assert by_id["1"]["allowed"] is True
    assert by_id['"two"']["rule"] == "command.blocked"
    assert out[2]["rule"] == "input.invalid_json"
    assert by_id["3"]["allowed"] is False
    assert by_id["4"]["rule"] == "input.control_char"
    assert by_id["5"]["rule"] == "input.control_char"
    assert by_id["6"]["rule"] == "input.too_long"
    assert out[7]["rule"] == "input.invalid_json"
    assert by_id["7"]["rule"] == "input.invalid_request"
    assert by_id['{"nested": [1]}']["rule"] == "input.invalid_request"
    assert by_id["8"]["rule"] == "input.invalid_unicode"
    assert by_id["9"]["allowed"] is True
    assert by_id["10"]["rule"] == "path.outside_workspace"
    assert all(set(o) == {"id", "allowed", "rule", "reason"} for o in out)


def test_jsonl_empty_input(ws: Path, env: dict[str, str]) -> None:
    result = run(["--mode", "command", "--workspace", str(ws), "--jsonl"], env, b"")
    assert (result.returncode, result.stdout) == (0, b"")
