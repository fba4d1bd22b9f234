"""Same command, same verdict: every face judges a command with the same assembled session.

`tether check`, `tether run --json`, `tether tool bash_command`, and the language server's
`tether.checkCommand` / `tether.runTool` must agree — allowed or denied, and by which rule — for
the policy corpus and for attacks on protected paths, in a workspace whose activated `.venv/bin` is
on PATH and in one without. Before one session assembled the configuration, `tether check` missed
the PATH-tool protection that `tether run` applied and answered *allowed* for
`echo x > .venv/bin/pytest`.

The run-side faces use permission `none`: every call goes through the gate's policy step and
becomes a dry run (or a denial) without executing, so hundreds of commands stay fast.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _lsp_support import capabilities, make_repo, start_editor, stop_editor

from tether.cli import main as tether_main

pytestmark = pytest.mark.e2e

PATH_TOOL_ATTACKS = (
    "echo x > .venv/bin/pytest",
    "echo x >> .venv/bin/python",
    "cp README.md .venv/bin/pytest",
    "mv README.md .venv/bin/ruff",
    "touch .venv/lib/python3.11/site-packages/evil.pth",
    "ln -s /bin/sh .venv/bin/git",
    "rm .venv/bin/pytest",
    "chmod +x .venv/bin/pytest",
    "sed -i s/a/b/ .venv/bin/pytest",
    "tee .venv/bin/pytest < README.md",
    "cat README.md > ./.venv/bin/../bin/pytest",
    "cp -r src .venv/",
)
OTHER_ATTACKS = (
    "echo x > .git/hooks/pre-commit",
    "cat /etc/passwd",
    "rm -rf /",
    "curl https://example.com",
    "echo $(id)",
    "cp README.md ../outside",
    "sudo ls",
)


def _corpus() -> tuple[str, ...]:
    path = Path(__file__).parents[1] / "unit" / "test_policy_corpus.py"
    spec = importlib.util.spec_from_file_location("_policy_corpus", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return (*module.BENIGN_READ, *module.BENIGN_COMMAND, *PATH_TOOL_ATTACKS, *OTHER_ATTACKS)


COMMANDS = _corpus()


def _workspace(tmp_path: Path) -> Path:
    ws = make_repo(
        tmp_path / "ws",
        {"README.md": "hello\n", "src/app.py": "print(1)\n", "tests/test_app.py": "def test(): pass\n"},
    )
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / ".venv" / "bin" / "pytest").write_text("#!/bin/sh\n")
    return ws


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = tether_main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)


def _expected(
    check_read: dict[str, Any], check_command: dict[str, Any], check_workspace: dict[str, Any]
) -> tuple[bool, str]:
    """What every run-side face must answer: the lowest mode that allows or asks (read, command,
    workspace, as bash_command climbs), else command mode's denial. Without permissions an allowed
    or asked call is a dry run (nobody is asked before the permission is there)."""
    for check in (check_read, check_command, check_workspace):
        if check["verdict"] != "deny":
            return True, check["rule"]
    return False, check_command["rule"]


def _verdict_of(result: dict[str, Any]) -> tuple[bool, str]:
    assert result["state"] in ("dry_run", "denied"), result
    return result["state"] == "dry_run", result["decision"]["rule"]


@pytest.mark.parametrize("venv_on_path", [True, False], ids=["venv-on-PATH", "plain-PATH"])
async def test_every_face_gives_the_same_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, venv_on_path: bool
) -> None:
    ws = _workspace(tmp_path)
    path = os.environ["PATH"]
    if venv_on_path:
        path = f"{ws / '.venv' / 'bin'}{os.pathsep}{path}"
    monkeypatch.setenv("PATH", path)
    for key in [k for k in os.environ if k.startswith("TETHER_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / "state"))

    cli: dict[str, tuple[bool, str]] = {}
    for command in COMMANDS:
        _, as_read = _cli(capsys, "check", "--json", "--mode", "read", "--workspace", str(ws), command)
        _, as_command = _cli(capsys, "check", "--json", "--mode", "command", "--workspace", str(ws), command)
        _, as_ws = _cli(capsys, "check", "--json", "--mode", "workspace", "--workspace", str(ws), command)
        expected = _expected(as_read, as_command, as_ws)
        _, ran = _cli(capsys, "run", "--json", "--permissions", "none", "--workspace", str(ws), command)
        tool_input = json.dumps({"command": command})
        _, tooled = _cli(capsys, "tool", "bash_command", "--input", tool_input, "--workspace", str(ws))
        assert _verdict_of(ran) == expected, f"tether run disagrees with tether check on {command!r}"
        assert _verdict_of(tooled) == expected, f"tether tool disagrees with tether check on {command!r}"
        cli[command] = expected

    editor = await start_editor(
        tmp_path, capabilities("visual_studio_code"), "visual_studio_code", reuse=True, env={"PATH": path}
    )
    try:
        for command in COMMANDS:
            as_read = await editor.command("tether.checkCommand", {"command": command, "mode": "read"})
            as_command = await editor.command("tether.checkCommand", {"command": command, "mode": "command"})
            as_ws = await editor.command("tether.checkCommand", {"command": command, "mode": "workspace"})
            assert _expected(as_read, as_command, as_ws) == cli[command], (
                f"tether.checkCommand differs on {command!r}"
            )
            ran = await editor.command(
                "tether.runTool", {"name": "bash_command", "input": {"command": command}}
            )
            assert _verdict_of(ran["result"]) == cli[command], f"tether.runTool differs on {command!r}"
    finally:
        await stop_editor(editor)

    attacks = {c: cli[c] for c in PATH_TOOL_ATTACKS}
    if venv_on_path:  # the differential is only meaningful if the protection really bit
        assert all(not allowed for allowed, _ in attacks.values()), attacks
        assert cli["echo x > .venv/bin/pytest"] == (False, "path.protected")
    else:
        assert cli["echo x > .venv/bin/pytest"][0] is True
