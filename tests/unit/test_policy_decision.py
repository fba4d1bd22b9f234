"""Decisions as values: JSON shapes, the seed-002 error payload, user allow/deny rules, config.

User rules are matched on parsed argv words, never on the raw string, so quoting cannot smuggle a
command past a deny rule or into an allow rule. Project config can only narrow (it cannot allow).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tether.core.config import config_from_mappings
from tether.core.policy import RULES, PolicySettings, decide

SETTINGS = PolicySettings()


def test_to_json_shape(tmp_path: Path) -> None:
    decision = decide("git log --oneline | head -3", "read", tmp_path, SETTINGS)
    assert decision.to_json() == {
        "allowed": True,
        "verdict": "allow",
        "rule": "allowed",
        "reason": decision.reason,
        "suggestion": None,
        "segments": [["git", "log", "--oneline"], ["head", "-3"]],
        "needs_shell": True,
    }


def test_error_payload_follows_seed_002(tmp_path: Path) -> None:
    payload = decide("curl https://example.com", "command", tmp_path, SETTINGS).error_payload()
    assert payload["ok"] is False
    assert payload["error"].startswith("Command 'curl' is not in the allowed list")
    assert "network" in payload["suggestion"]
    assert "git" in payload["allowed_commands"]
    assert "pytest" in payload["allowed_commands"]
    assert "curl" not in payload["allowed_commands"]


def test_error_payload_for_unknown_command_names_the_config_key(tmp_path: Path) -> None:
    payload = decide("make lint", "command", tmp_path, SETTINGS).error_payload()
    assert payload["error"].startswith("Command 'make' is not in the allowed list")
    assert "command_whitelist" in payload["suggestion"]
    payload = decide("frob --x", "command", tmp_path, SETTINGS).error_payload()
    assert payload["error"] == "Command 'frob' is not in the allowed list"
    assert "`frob --x`" in payload["suggestion"]


def test_error_payload_for_non_command_rules_uses_the_reason(tmp_path: Path) -> None:
    payload = decide("cat /etc/passwd", "read", tmp_path, SETTINGS).error_payload()
    assert "outside the workspace" in payload["error"]
    assert payload["rule"] == "path.outside_workspace"


def test_suggestions_point_to_the_right_tool(tmp_path: Path) -> None:
    assert "edit_file" in (decide("sed 's/a/b/' x", "command", tmp_path, SETTINGS).suggestion or "")
    assert "write_file" in (decide("echo x > f", "read", tmp_path, SETTINGS).suggestion or "")
    assert "read_file" in (decide("less README.md", "read", tmp_path, SETTINGS).suggestion or "")


def test_allowed_commands_depend_on_mode(tmp_path: Path) -> None:
    read = decide("curl x", "read", tmp_path, SETTINGS).allowed_commands
    command = decide(
        "curl x", "command", tmp_path, PolicySettings(extra_allowed=("make lint",))
    ).allowed_commands
    assert "ls" in read
    assert "make lint" not in read
    assert "make lint" in command


# --- user rules ------------------------------------------------------------------------------


def test_user_allow_rule_matches_argv_prefix_in_command_mode(tmp_path: Path) -> None:
    settings = PolicySettings(extra_allowed=("make lint", "rm"))
    assert decide("make lint", "command", tmp_path, settings).rule == "allowed.user_rule"
    assert decide("make 'lint' V=1", "command", tmp_path, settings).allowed  # quoting is removed first
    assert not decide("make install", "command", tmp_path, settings).allowed
    assert not decide("make", "command", tmp_path, settings).allowed
    assert not decide("make lint", "read", tmp_path, settings).allowed  # read mode stays read-only
    assert decide("rm build/out.o", "command", tmp_path, settings).allowed


def test_user_allow_rule_still_checks_paths_redirects_and_syntax(tmp_path: Path) -> None:
    settings = PolicySettings(extra_allowed=("rm",))
    assert decide("rm /etc/passwd", "command", tmp_path, settings).rule == "path.outside_workspace"
    assert decide("rm ../x", "command", tmp_path, settings).rule == "path.outside_workspace"
    assert decide("rm --files=/etc/x", "command", tmp_path, settings).rule == "path.outside_workspace"
    assert decide("rm x > .envrc", "command", tmp_path, settings).rule == "path.protected"
    assert decide("rm $(ls)", "command", tmp_path, settings).rule == "syntax.command_substitution"
    assert decide("rm x; curl y", "command", tmp_path, settings).rule == "command.blocked"


def test_user_allow_rule_is_not_a_string_prefix(tmp_path: Path) -> None:
    settings = PolicySettings(extra_allowed=("make lint",))
    assert not decide("make linter", "command", tmp_path, settings).allowed
    assert not decide("make lint; rm -rf x", "command", tmp_path, settings).allowed


@pytest.mark.parametrize(
    "command",
    ["git push", "git  push", "git 'push'", "git -C . push", "git --no-pager log -1", "'git' log"],
)
def test_deny_rules_always_win(command: str, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    settings = PolicySettings(extra_allowed=("git",), denied=("git push", "git log"))
    decision = decide(command, "command", tmp_path, settings)
    assert not decision.allowed
    assert decision.rule in ("user.denied", "syntax.quoted_command_name")


def test_deny_rule_applies_to_builtin_programs_too(tmp_path: Path) -> None:
    settings = PolicySettings(denied=("cat",))
    assert decide("cat README.md", "read", tmp_path, settings).rule == "user.denied"
    assert decide("ls | cat", "read", tmp_path, settings).rule == "user.denied"


def test_project_config_cannot_allow_commands(tmp_path: Path) -> None:
    config = config_from_mappings(
        {"tool_safety": {"command_whitelist": ["make lint"]}},
        {"tool_safety": {"command_whitelist": ["curl"]}, "policy": {"allow": ["rm"], "deny": ["make"]}},
    )
    policy = config.policy
    assert decide("curl x", "command", tmp_path, policy).rule == "command.blocked"
    assert decide("rm x", "command", tmp_path, policy).rule == "command.blocked"
    assert decide("make lint", "command", tmp_path, policy).rule == "user.denied"  # project deny narrows
    assert any("only the user config" in w for w in config.warnings)


# --- rule table ------------------------------------------------------------------------------


RULE_ID = (
    r'"((?:syntax|input|command|flag|path|redirect|mode|git|go|sed|date|args|user|internal|allowed)'
    r'\.[a-z_]+)"'
)


def test_every_rule_id_in_the_code_is_documented() -> None:
    root = Path(__file__).resolve().parents[2] / "server" / "tether"
    sources = [p.read_text() for p in (root / "core" / "policy").rglob("*.py")]
    sources.append((root / "cli" / "check.py").read_text())
    found = set()
    for text in sources:
        found |= set(
            re.findall(
                r'"((?:syntax|input|command|flag|path|redirect|mode|git|go|sed|date|args|user|'
                r'internal|allowed)\.[a-z_]+)"',
                text,
            )
        )
    assert found - set(RULES) == set()
    assert len(found) > 50


def test_every_documented_rule_is_in_the_user_docs() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text()
    missing = [rule for rule in RULES if f"`{rule}`" not in docs]
    assert missing == []
