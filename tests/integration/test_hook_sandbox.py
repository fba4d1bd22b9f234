"""`tether hook claude-code --sandbox`: Claude Code's Bash commands run in Tether's sandbox.

The hook answers with `updatedInput`; here bash runs the rewritten command the way Claude Code's
shell does (tests/integration/test_hook_claude_code_real.py drives the real Claude Code). Real git,
the real sandbox backend, the real audit log and rollback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_support import init_repo, tether
from test_hook_claude_code import decision, event, hook, shell_env

from tether.cli import _grants

SECRET = "k3y-0123456789"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = init_repo(
        tmp_path / "ws", {"README.md": "hello\n", "src/app.py": "print(1)\n", ".gitignore": ".env\n"}
    )
    (repo / ".env").write_text(f"API_KEY={SECRET}\n")
    return repo


def bash(home: Path, ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Run `command` as Claude Code's shell would."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ws,
        env=shell_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def bash_event(ws: Path, command: str, cwd: Path | None = None, timeout: int = 60000) -> dict[str, Any]:
    tool_input = {"command": command, "description": "a step", "timeout": timeout}
    return event(ws, "PreToolUse", "Bash", tool_input, cwd=str(cwd or ws))


def rewritten(answer: Any) -> str:
    updated = answer["hookSpecificOutput"]["updatedInput"]
    assert updated["description"] == "a step"  # the rest of Claude Code's input is kept
    command: str = updated["command"]
    return command


def test_a_folder_search_runs_sandboxed_and_the_secret_stays_hidden(ws: Path, tmp_path: Path) -> None:
    """Without --sandbox, `grep -r` reads `.env` in Claude Code's own shell (docs/integrations.md)."""
    _, plain = hook(ws, tmp_path, bash_event(ws, "grep -r API_KEY ."))
    assert decision(plain)[0] == "allow"
    assert "updatedInput" not in plain["hookSpecificOutput"]
    assert SECRET in bash(tmp_path, ws, "grep -r API_KEY .").stdout  # the gap --sandbox closes

    _, answer = hook(ws, tmp_path, bash_event(ws, "grep -r API_KEY ."), "--sandbox")
    verdict, reason = decision(answer)
    assert verdict == "allow"
    assert "Tether's sandbox (read mode)" in reason
    command = rewritten(answer)
    assert command.endswith(" -- 'grep -r API_KEY .'")  # the question names what will run
    ran = bash(tmp_path, ws, command)
    assert SECRET not in ran.stdout + ran.stderr
    assert ran.returncode == 2, ran.stderr  # grep's own code: the hidden file cannot be read
    assert "secret files are hidden" in ran.stderr
    assert (ws / ".env").read_text() == f"API_KEY={SECRET}\n"


def test_workspace_mode_runs_contained_checkpointed_and_rolls_back(ws: Path, tmp_path: Path) -> None:
    command = "mkdir build && echo hi > build/out.txt"
    _, without = hook(ws, tmp_path, bash_event(ws, command), "--mode", "workspace")
    verdict, reason = decision(without)
    assert verdict == "deny"
    assert "--sandbox" in reason

    _, answer = hook(ws, tmp_path, bash_event(ws, command), "--sandbox", "--mode", "workspace")
    verdict, reason = decision(answer)
    assert verdict == "allow"
    assert "workspace mode" in reason
    assert not (ws / "build").exists()  # nothing ran in the hook
    ran = bash(tmp_path, ws, rewritten(answer))
    assert ran.returncode == 0, ran.stderr
    assert (ws / "build" / "out.txt").read_text() == "hi\n"
    log = [json.loads(line) for line in tether(ws, "log", "--json", home=tmp_path).stdout.splitlines()]
    ours = [e for e in log if e.get("source") == "claude-code"]
    assert [e["tool"] for e in ours] == ["bash_command"]
    assert ours[0]["state"] == "executed"
    assert ours[0]["git_commit"]
    assert tether(ws, "rollback", "1", "--yes", home=tmp_path).returncode == 0
    assert not (ws / "build").exists()


def test_an_ask_runs_once_after_claude_code_asked(ws: Path, tmp_path: Path) -> None:
    _, answer = hook(ws, tmp_path, bash_event(ws, "git commit -qam wip"), "--sandbox")
    verdict, reason = decision(answer)
    assert verdict == "ask"  # Claude Code shows you the rewritten command and asks
    assert "ask.git_state" in reason
    (ws / "README.md").write_text("changed\n")
    command = rewritten(answer)
    ran = bash(tmp_path, ws, command)
    assert ran.returncode == 0, ran.stderr
    assert bash(tmp_path, ws, "git log --format=%s -1").stdout == "wip\n"
    log = [json.loads(line) for line in tether(ws, "log", "--json", home=tmp_path).stdout.splitlines()]
    approval = next(e for e in log if e["tool"] == "approval")
    assert "Claude Code's prompt" in json.dumps(approval)

    again = bash(tmp_path, ws, command)  # one grant, one run
    assert again.returncode == 126
    assert "no such grant" in again.stderr
    assert bash(tmp_path, ws, "git log --format=%s -1").stdout == "wip\n"


def test_a_grant_is_for_its_own_command_only(ws: Path, tmp_path: Path) -> None:
    _, answer = hook(ws, tmp_path, bash_event(ws, "ls src"), "--sandbox")
    swapped = rewritten(answer).replace("'ls src'", "'touch pwned'")
    ran = bash(tmp_path, ws, swapped)
    assert ran.returncode == 126
    assert "another command" in ran.stderr
    assert not (ws / "pwned").exists()
    forged = bash(
        tmp_path, ws, rewritten(answer).replace(" run ", " run 0123456789abcdef0123456789abcdef ", 1)
    )
    assert forged.returncode in (2, 126)  # argparse refuses the extra word, or the grant is unknown
    assert not (ws / "pwned").exists()


def test_the_shell_outside_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    _, answer = hook(ws, tmp_path, bash_event(ws, "ls", cwd=tmp_path), "--sandbox")
    verdict, reason = decision(answer)
    assert verdict == "deny"
    assert "outside the workspace" in reason


def test_a_denied_command_is_not_rewritten(ws: Path, tmp_path: Path) -> None:
    _, answer = hook(ws, tmp_path, bash_event(ws, "cat .env"), "--sandbox", "--mode", "workspace")
    assert decision(answer)[0] == "deny"
    assert "updatedInput" not in answer["hookSpecificOutput"]


def test_grants_are_single_use_expire_and_refuse_bad_ids(tmp_path: Path) -> None:
    grant = _grants.Grant("ls", "/ws", ".", "read", "allow", time.time(), 120.0)
    grant_id = _grants.issue(grant, tmp_path)
    assert (tmp_path / f"{grant_id}.json").stat().st_mode & 0o777 == 0o600
    assert _grants.claim(grant_id, tmp_path) == grant
    with pytest.raises(_grants.GrantError, match="no such grant"):
        _grants.claim(grant_id, tmp_path)
    old = _grants.issue(grant, tmp_path)
    with pytest.raises(_grants.GrantError, match="expired"):
        _grants.claim(old, tmp_path, now=time.time() + _grants.GRANT_SECONDS + 1)
    for bad in ("../x", "ABC", "0" * 31, ""):
        with pytest.raises(_grants.GrantError, match="not a grant id"):
            _grants.claim(bad, tmp_path)
    stale = _grants.issue(grant, tmp_path)
    past = time.time() - _grants.GRANT_SECONDS - 10
    os.utime(tmp_path / f"{stale}.json", (past, past))
    _grants.issue(grant, tmp_path)  # a new grant sweeps the ones nobody ran
    assert not (tmp_path / f"{stale}.json").exists()


def test_claude_codes_timeout_is_the_commands_limit(ws: Path, tmp_path: Path) -> None:
    """Tether's default limit is 30 s; Claude Code's call said 1 s, and that is what applies."""
    _, answer = hook(
        ws, tmp_path, bash_event(ws, "sleep 20", timeout=1000), "--sandbox", "--mode", "workspace"
    )
    started = time.monotonic()
    ran = bash(tmp_path, ws, rewritten(answer))
    assert ran.returncode == 124, ran.stderr  # timed out, as timeout(1) reports it
    assert time.monotonic() - started < 15


def test_install_with_sandbox_replaces_the_hook_it_finds(tmp_path: Path) -> None:
    """One Tether hook per event: two would give Claude Code two answers for each command."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home)}
    base = [sys.executable, "-m", "tether", "hook", "install", "claude-code", "--write"]
    subprocess.run(base, capture_output=True, text=True, env=env, check=True)
    done = subprocess.run([*base, "--sandbox"], capture_output=True, text=True, env=env, check=True)
    assert "command updated" in done.stdout
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    for event_name in ("PreToolUse", "PostToolUse"):
        commands = [h["command"] for group in hooks[event_name] for h in group["hooks"]]
        assert len(commands) == 1
        assert commands[0].endswith("hook claude-code --sandbox")
    # An older install naming `python -m tether` (which imports a project's `tether/` first) is
    # replaced by the current command, not joined by a second hook.
    settings = home / ".claude" / "settings.json"
    old = json.loads(settings.read_text())
    for group in old["hooks"]["PreToolUse"]:
        group["hooks"][0]["command"] = "/usr/bin/python3 -m tether hook claude-code"
    settings.write_text(json.dumps(old))
    subprocess.run([*base, "--sandbox"], capture_output=True, text=True, env=env, check=True)
    groups = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    commands = [h["command"] for group in groups for h in group["hooks"]]
    assert len(commands) == 1
    assert commands[0].endswith("hook claude-code --sandbox")
    # Without `tether` on PATH the hook is this Python, with -P: the project's folder is not imported.
    bare_path = {**env, "PATH": "/usr/bin:/bin"}
    printed = subprocess.run(base[:-1], capture_output=True, text=True, env=bare_path, check=True)
    command = json.loads(printed.stdout)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert " -P -m tether hook claude-code" in command
    refused = subprocess.run(
        [*base, "--mode", "workspace"], capture_output=True, text=True, env=env, check=False
    )
    assert refused.returncode == 2
    assert "needs `--sandbox`" in refused.stderr


def test_code_left_in_the_workspace_never_stands_in_for_tether(ws: Path, tmp_path: Path) -> None:
    """Claude Code's shell runs the rewrite in the workspace, outside any sandbox: Python must not
    import a module a command left there (found by the adversarial review: `echo … > argparse.py`,
    then `ls` printed the `.env`)."""
    planted = f"print(open({str(ws / '.env')!r}).read()); raise SystemExit(0)\n"
    for folder in (ws, ws / "src"):
        (folder / "argparse.py").write_text(planted)
        (folder / "shlex.py").write_text(planted)
        (folder / "tether").mkdir()
        (folder / "tether" / "__init__.py").write_text(planted)
        (folder / "tether" / "__main__.py").write_text(planted)
    for folder in (ws, ws / "src"):
        _, answer = hook(ws, tmp_path, bash_event(ws, "ls", cwd=folder), "--sandbox")
        ran = subprocess.run(
            ["bash", "-c", rewritten(answer)],
            cwd=folder,
            env=shell_env(tmp_path),
            capture_output=True,
            text=True,
            check=False,
        )
        assert SECRET not in ran.stdout + ran.stderr
        assert ran.returncode == 0, ran.stderr
        assert "argparse.py" in ran.stdout  # the real `ls`, in the sandbox


def test_a_state_folder_that_cannot_hold_grants_is_a_clear_refusal(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(_grants.GrantError, match="could not be taken"):
        _grants.claim("0" * 32, blocker)


def test_doctor_reports_the_hook_and_an_install_to_redo(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    old = {"type": "command", "command": "/usr/bin/python3 -m tether hook claude-code"}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [old]}]}}))
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_STATE_HOME": str(tmp_path / "s"),
        "XDG_CONFIG_HOME": str(tmp_path / "c"),
    }

    def doctor() -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "tether", "doctor", "--json", "--workspace", str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        return json.loads(done.stdout)["claudeCodeHook"]

    found = doctor()
    assert found["sandbox"] is False
    assert "without -P" in found["problem"]
    base = [sys.executable, "-m", "tether", "hook", "install", "claude-code", "--write", "--sandbox"]
    subprocess.run(base, capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"}, check=True)
    found = doctor()
    assert found["sandbox"] is True
    assert found["problem"] is None


def test_claude_codes_sigterm_ends_the_run_cleanly(ws: Path, tmp_path: Path) -> None:
    """Esc or Claude Code's own timeout send SIGTERM to the command's process group. Found by the
    review: the sandbox's placeholders stayed in the workspace (about sixty files) and no audit
    line was written. Now the signal cancels the run: torn down, logged, exit 143."""
    import signal

    before = sorted(p.name for p in ws.iterdir() if p.name != ".tether")
    _, answer = hook(ws, tmp_path, bash_event(ws, "sleep 30"), "--sandbox", "--mode", "workspace")
    proc = subprocess.Popen(
        ["bash", "-c", rewritten(answer)],
        cwd=ws,
        env=shell_env(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.name == "mise" for p in ws.iterdir()):
        time.sleep(0.05)  # the run has pinned its placeholders: the sandbox is up
    os.killpg(proc.pid, signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "cancelled" in stderr
    assert sorted(p.name for p in ws.iterdir() if p.name != ".tether") == before  # nothing left behind
    log = [json.loads(line) for line in tether(ws, "log", "--json", home=tmp_path).stdout.splitlines()]
    assert [e["input"]["command"] for e in log if e["tool"] == "bash_command"] == ["sleep 30"]


def test_a_grant_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    for field, value in (
        ("created", "x"),
        ("timeout", "60"),
        ("workspace", 5),
        ("mode", "root"),
        ("verdict", "yes"),
    ):
        data = {"command": "ls", "workspace": "/ws", "directory": ".", "mode": "read", "verdict": "allow"}
        data.update(created=time.time(), timeout=120.0)
        data[field] = value
        grant_id = "ab" * 16
        (tmp_path / f"{grant_id}.json").write_text(json.dumps(data))
        with pytest.raises(_grants.GrantError, match="malformed"):
            _grants.claim(grant_id, tmp_path)


def test_an_ask_rule_on_a_read_only_command_is_asked_where_it_will_run(ws: Path, tmp_path: Path) -> None:
    """Your rule asks about `git log`. The hook stopped at read mode's ask and granted read mode;
    the runner, which climbs as the bash tool does, needed command mode and ran nothing. Both
    now climb the one ladder (`policy.lowest_mode`)."""
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[rules]]\npattern = ["git", "log"]\ndecision = "ask"\njustification = "history"\n')
    _, answer = hook(ws, tmp_path, bash_event(ws, "git log --oneline -1"), "--sandbox")
    assert decision(answer)[0] == "ask"
    ran = bash(tmp_path, ws, rewritten(answer))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().endswith(" initial"), ran.stdout
