"""`tether explain` and the workspace mode through the CLI, as real processes.

The JSON keys are relied on from outside (issue "Allow, ask or deny"): verdict, rule, reason,
segments, sandbox, hooks, checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _checkpoint_support import init_repo, tether


def explain(ws: Path, home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = tether(ws, "explain", "--json", *args, home=home)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_explain_json_names_each_segment_the_sandbox_and_the_checkpoint(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n", ".gitignore": ".env\n"})
    (ws / ".env").write_text("KEY=1\n")
    code, report = explain(ws, tmp_path, "ls && git commit -am wip")
    assert code == 1
    for key in ("verdict", "rule", "reason", "segments", "sandbox", "hooks", "checkpoint"):
        assert key in report
    assert report["verdict"] == "ask"
    assert report["rule"] == "ask.git_state"
    assert report["mode"] == "command"
    assert [(s["argv"][0], s["verdict"]) for s in report["segments"]] == [("ls", "allow"), ("git", "ask")]
    assert report["segments"][1]["source"] == "built-in"
    assert report["modes"] == {"read": "deny", "command": "ask", "workspace": "ask"}
    sandbox = report["sandbox"]
    assert sandbox["network"] == "none"
    assert sandbox["writable"] == [str(ws.resolve())]
    assert ".git" in sandbox["readOnly"]
    assert sandbox["hidden"] == [".env"]
    assert "node_modules/" in sandbox["notCheckpointed"]
    assert report["checkpoint"] is True
    assert report["hooks"] == []


def test_explain_a_deny_names_the_rule_file_and_line_and_nothing_would_run(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text(
        '# project rules\n\n[[rules]]\npattern = ["make", "release"]\ndecision = "deny"\n'
        'justification = "we release from CI"\n'
    )
    code, report = explain(ws, tmp_path, "--mode", "workspace", "make test && make release")
    assert code == 1
    assert (report["verdict"], report["rule"]) == ("deny", "rule.project")
    assert "we release from CI" in report["reason"]
    first, second = report["segments"]
    assert (first["verdict"], first["rule"]) == ("allow", "allowed")
    assert second["verdict"] == "deny"
    assert second["source"] == f"{ws.resolve() / '.tether' / 'config.toml'}:3"
    assert second["layer"] == "project"
    assert report["sandbox"] is None
    assert report["checkpoint"] is False


def test_explain_without_mode_climbs_like_the_bash_tool_and_says_what_permission_it_needs(
    tmp_path: Path,
) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    _, read = explain(ws, tmp_path, "cat README.md")
    assert (read["mode"], read["verdict"], read["checkpoint"]) == ("read", "allow", False)
    assert read["sandbox"]["writable"] == []
    _, work = explain(ws, tmp_path, "mkdir -p build && mv README.md build/")
    assert (work["mode"], work["verdict"], work["permissionNeeded"]) == ("workspace", "allow", "workspace")
    assert work["granted"] is False
    text = tether(ws, "explain", "mkdir -p build", home=tmp_path).stdout
    assert "allow in workspace mode" in text
    assert "lacks `workspace` permission" in text


def test_check_mode_workspace_judges_as_workspace_mode_runs(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    assert tether(ws, "check", "--mode", "command", "mkdir out", home=tmp_path).returncode == 1
    done = tether(ws, "check", "--mode", "workspace", "--json", "mkdir out", home=tmp_path)
    assert done.returncode == 0
    assert json.loads(done.stdout)["verdict"] == "allow"
    asked = tether(ws, "check", "--mode", "workspace", "git commit -m x", home=tmp_path)
    assert asked.returncode == 1
    assert asked.stdout.startswith("ask (ask.git_state)")
    bad = tether(ws, "explain", "--mode", "root", "ls", home=tmp_path)
    assert bad.returncode == 2


def test_workspace_mode_runs_any_program_in_the_sandbox_and_rollback_undoes_it(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n", "src/a.txt": "a\n", ".gitignore": "local.db\n"})
    (ws / "local.db").write_bytes(b"\x00data")
    for part in ("mkdir -p build && mv src/a.txt build/ && rm -f local.db && touch done",
                 "cat <<'EOF' > notes.txt\nhello $USER\nEOF"):  # fmt: skip
        done = tether(ws, "run", "--json", "--permissions", "workspace", part, home=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["state"] == "executed"
    assert (ws / "build" / "a.txt").read_text() == "a\n"
    assert (ws / "notes.txt").read_text() == "hello $USER\n"
    assert not (ws / "local.db").exists()
    assert tether(ws, "rollback", "2", "--yes", home=tmp_path).returncode == 0
    assert (ws / "src" / "a.txt").read_text() == "a\n"
    assert (ws / "local.db").read_bytes() == b"\x00data"  # an ignored file, restored byte for byte
    assert not (ws / "build").exists()
    assert not (ws / "notes.txt").exists()
    assert not (ws / "done").exists()


def test_command_mode_refuses_what_workspace_mode_runs_and_says_so(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    done = tether(ws, "run", "--json", "--permissions", "command", "mkdir out", home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] == "dry_run"
    assert "workspace" in result["text"]
    assert not (ws / "out").exists()


def test_doctor_lists_what_workspace_mode_may_write_what_it_may_not_and_the_secrets(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n", ".gitignore": ".env\n"})
    (ws / ".env").write_text("KEY=1\n")
    done = tether(ws, "doctor", "--json", home=tmp_path)
    session = json.loads(done.stdout)["session"]
    view = session["workspaceMode"]
    assert view["writable"] == [str(ws.resolve())]
    assert ".git" in view["readOnly"]
    assert view["hidden"] == [".env"]
    assert "node_modules/" in view["notCheckpointed"]
    assert ".env" in session["secretPatterns"]
    text = tether(ws, "doctor", home=tmp_path).stdout
    assert "in workspace mode (any program, in the sandbox):" in text
    assert "hidden (secret files here now): .env" in text
