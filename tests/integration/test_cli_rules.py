"""`tether rules list|test` and rules in force through `tether check`, as real processes."""

from __future__ import annotations

import json
from pathlib import Path

from _checkpoint_support import init_repo, tether

USER_RULES = """# my rules
[[rules]]
pattern = ["make", ["lint", "fmt"]]
decision = "allow"
justification = "our make targets only read and format"
match = ["make lint", "make fmt -j2"]
not_match = ["make deploy"]
"""


def configure(home: Path, user: str = "", managed: str = "") -> None:
    config = home / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(user, encoding="utf-8")
    (home / "managed.toml").write_text(managed, encoding="utf-8")


def test_rules_list_shows_each_rule_with_its_source_and_layer(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    configure(
        tmp_path,
        USER_RULES + '\n[tool_safety]\ncommand_whitelist = ["just build"]\n',
        '[[rules]]\npattern = ["make", "deploy"]\ndecision = "deny"\njustification = "CI deploys"\n',
    )
    done = tether(ws, "rules", "list", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    rules = json.loads(done.stdout)["rules"]
    user_config = tmp_path / "config" / "tether" / "config.toml"
    assert [(r["decision"], r["source"]) for r in rules] == [
        ("allow", f"{user_config}:2"),
        ("deny", f"{tmp_path / 'managed.toml'}:1"),
        ("allow", "command_whitelist / [policy] allow"),
    ]
    assert rules[0]["pattern"] == ["make", ["lint", "fmt"]]
    text = tether(ws, "rules", "list", home=tmp_path).stdout
    assert "allow  make {lint|fmt}" in text
    assert "our make targets only read and format" in text
    # the rules are the policy's: check agrees with the list
    assert '"allowed": true' in tether(ws, "check", "--json", "make fmt -j2", home=tmp_path).stdout
    denied = json.loads(tether(ws, "check", "--json", "make deploy", home=tmp_path).stdout)
    assert denied["allowed"] is False
    assert denied["rule"] == "rule.managed"
    assert "CI deploys" in denied["reason"]


def test_rules_test_reports_every_rule_and_fails_on_a_broken_one(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text('[[rules]]\npattern = ["curl"]\ndecision = "allow"\n')
    configure(tmp_path, USER_RULES)
    done = tether(ws, "rules", "test", home=tmp_path)
    assert done.returncode == 1  # the project's allow rule does not do what it says
    assert "ok    allow `make {lint|fmt}`" in done.stdout
    assert "ignored: the project may only add ask and deny rules" in done.stdout
    (ws / ".tether" / "config.toml").unlink()
    assert tether(ws, "rules", "test", home=tmp_path).returncode == 0
    broken = (
        USER_RULES.replace('"make deploy"', '"make lint"') + '\n[[rules]]\npattern = []\ndecision = "deny"\n'
    )
    configure(tmp_path, broken)
    done = tether(ws, "rules", "test", "--json", home=tmp_path)
    assert done.returncode == 1
    reports = json.loads(done.stdout)["rules"]
    assert [r["ok"] for r in reports] == [False, False]
    assert "`not_match` example `make lint` matches" in reports[0]["failures"][0]
    assert reports[1]["source"].endswith("config.toml:9")
    # a broken rule stops every command that opens a session, naming the file and line
    refused = tether(ws, "check", "ls", home=tmp_path)
    assert refused.returncode != 0
    assert "config.toml:2: rule `make {lint|fmt}`" in refused.stderr
