"""User hooks around tool calls, run for real: the gate, the sandbox, a hook script reading JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tether.core.config import EffectiveConfig, Hook, HookSettings
from tether.core.gate import Gate
from tether.core.hooks import hook_input, hooks_for
from tether.core.sandbox import auto_choice
from tether.core.session import FaceOverrides, open_session

# Refuses writes to paths containing "secret"; says why on stderr, as hook scripts do.
GUARD = """\
import json, sys
event = json.load(sys.stdin)
path = (event.get("tool_input") or {}).get("path", "")
if "secret" in path:
    print(f"{event['hook_event_name']}: no writing to {path}", file=sys.stderr)
    sys.exit(2)
"""
# Hands back what it was given, as its objection, so the test can read its stdin.
ECHO = "import sys; sys.stderr.write(sys.stdin.read()); sys.exit(1)\n"
SLOW = "import time; time.sleep(30)\n"
TRY_TO_WRITE = "open('written-by-hook.txt', 'w').write('x')\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    hooks = root / "hooks"
    hooks.mkdir()
    for name, source in {"guard": GUARD, "echo": ECHO, "slow": SLOW, "write": TRY_TO_WRITE}.items():
        (hooks / f"{name}.py").write_text(source)
    (root / "notes.txt").write_text("hello\n")
    return root.resolve()


def _gate(ws: Path, *, pre: tuple[Hook, ...] = (), post: tuple[Hook, ...] = ()) -> Gate:
    config = replace(EffectiveConfig(), hooks=HookSettings(pre_tool_use=pre, post_tool_use=post))
    return open_session(ws, FaceOverrides(permissions="all"), config=config).gate


def _hook(ws: Path, name: str, **options: object) -> Hook:
    return Hook(command=("python3", str(ws / "hooks" / f"{name}.py")), **options)  # type: ignore[arg-type]


def test_a_pre_hook_vetoes_a_call_and_its_reason_reaches_the_model(ws: Path) -> None:
    gate = _gate(ws, pre=(_hook(ws, "guard"),))
    denied = gate.call("write_file", {"path": "secret.txt", "content": "k"})
    assert not denied.ok
    assert "PreToolUse: no writing to secret.txt" in denied.text
    assert denied.decision is not None
    assert denied.decision["decidedBy"] == "hook"
    assert not (ws / "secret.txt").exists()
    allowed = gate.call("write_file", {"path": "plain.txt", "content": "k\n"})
    assert allowed.ok, allowed.text
    assert (ws / "plain.txt").read_text() == "k\n"
    log = gate.log()
    assert log[-2]["decision"]["rule"] == "hook.pre_tool_use"
    assert log[-1]["success"] is True


def test_the_hook_reads_the_claude_code_shaped_json(ws: Path) -> None:
    gate = _gate(ws, pre=(_hook(ws, "echo"),))
    result = gate.call("read_file", {"path": "notes.txt"})
    said = result.text.split("objected (exit 1): ", 1)[1]
    assert json.loads(said) == {
        "hook_event_name": "PreToolUse",
        "tool_name": "read_file",
        "cwd": str(ws),
        "tool_input": {"path": "notes.txt"},
    }


def test_a_post_hook_sees_the_result_and_its_objection_is_a_warning(ws: Path) -> None:
    gate = _gate(ws, post=(_hook(ws, "echo"),))
    result = gate.call("read_file", {"path": "notes.txt"})
    assert result.ok  # the call already happened: a post hook cannot undo it
    warning = next(w for w in result.warnings if w.startswith("post-tool hook"))
    sent = json.loads(warning.split("objected (exit 1): ", 1)[1])
    assert sent["hook_event_name"] == "PostToolUse"
    assert sent["tool_input"] == {"path": "notes.txt"}
    assert "hello" in json.dumps(sent["tool_response"])


def test_a_lone_surrogate_is_refused_before_anything_runs_and_still_audited(ws: Path) -> None:
    """JSON from the model may hold "\\udc80", which no pipe, file or log line can carry as UTF-8.
    It once crashed after the command had run (the post hook never saw the call); now the gate
    refuses it up front, and hook input still encodes it as a JSON escape should it get that far."""
    gate = _gate(ws, post=(_hook(ws, "echo"),))
    result = gate.call("bash_command", {"command": "echo hi > out.txt", "reason": "\udc80"})
    assert not result.ok
    assert "unpaired UTF-16 surrogate" in result.text
    assert not (ws / "out.txt").exists()
    assert gate.log()[-1]["input"]["reason"] == "\udc80"
    assert json.loads(hook_input("pre", "x", {"reason": "\udc80"}, ws))["tool_input"]["reason"] == "\udc80"


def test_a_hook_does_not_run_the_workspace_virtualenv(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the project's venv activated, `python3` in a hook was the venv's, whose site-packages any
    command may write: one `.pth` file there and every later hook agreed with everything."""
    venv = ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ['PATH']}")
    guard = ws / "hooks" / "no-forbidden.py"
    guard.write_text("import sys\nsys.exit(3 if 'forbidden' in sys.stdin.read() else 0)\n")
    gate = _gate(ws, pre=(Hook(command=("python3", str(guard)), tools=("bash_command",)),))
    # The policy now refuses writes into a PATH venv (see test_sandbox_bash_tool); the hook must not
    # depend on that: the file is planted from outside, as a malicious package install would.
    assert not gate.call("bash_command", {"command": f"echo x > {site.relative_to(ws)}/zz.pth"}).ok
    (site / "zz.pth").write_text("import os; os._exit(0)\n")
    assert "objected (exit 3)" in gate.call("bash_command", {"command": "echo forbidden"}).text


def test_hooks_apply_only_to_their_tools(ws: Path) -> None:
    gate = _gate(ws, pre=(_hook(ws, "echo", tools=("bash_command",)),))
    assert gate.call("read_file", {"path": "notes.txt"}).ok
    assert not gate.call("bash_command", {"command": "ls"}).ok


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (Hook(command=("python3", "/nonexistent/hook.py")), "objected (exit 2)"),
        (Hook(command=("no-such-hook-program",)), "hook `no-such-hook-program`"),
    ],
)
def test_a_hook_that_cannot_run_refuses_the_call(ws: Path, hook: Hook, expected: str) -> None:
    result = _gate(ws, pre=(hook,)).call("write_file", {"path": "a.txt", "content": "x"})
    assert not result.ok
    assert expected in result.text
    assert not (ws / "a.txt").exists()


def test_a_hook_that_does_not_answer_in_time_refuses_the_call(ws: Path) -> None:
    gate = _gate(ws, pre=(_hook(ws, "slow", timeout=0.5),))
    result = gate.call("write_file", {"path": "a.txt", "content": "x"})
    assert not result.ok
    assert "did not answer within 0.5 s" in result.text
    assert not (ws / "a.txt").exists()


def test_a_hook_cannot_change_the_workspace(ws: Path) -> None:
    result = _gate(ws, pre=(_hook(ws, "write"),)).call("read_file", {"path": "notes.txt"})
    assert not result.ok  # the write failed, so the hook crashed: that is a refusal too
    assert "Read-only file system" in result.text or "Permission denied" in result.text
    assert not (ws / "written-by-hook.txt").exists()


def test_selection_and_input_are_pure() -> None:
    every, bash_only = Hook(command=("a",)), Hook(command=("b",), tools=("bash_command",))
    assert hooks_for([every, bash_only], "read_file") == [every]
    assert hooks_for([every, bash_only], "bash_command") == [every, bash_only]
    sent = json.loads(hook_input("post", "x", {"input": {"a": 1}, "result": {"ok": True}}, Path("/w")))
    assert sent == {
        "hook_event_name": "PostToolUse",
        "tool_name": "x",
        "cwd": "/w",
        "tool_input": {"a": 1},
        "tool_response": {"ok": True},
    }
