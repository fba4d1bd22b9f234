"""Config: validation names the file and key; project config can only narrow the user's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tether.core import config as core_config
from tether.core.config import config_from_mappings, load_config
from tether.core.permissions import ALL_PERMISSIONS, format_permissions, parse_permissions
from tether.errors import ConfigError


def test_defaults_without_files(tmp_path: Path) -> None:
    config = load_config(tmp_path, user_path=tmp_path / "missing.toml")
    assert config.sandbox.backend == "auto"
    assert config.sandbox.command_timeout == 30
    assert config.sandbox.max_output_bytes == 500_000
    assert config.checkpoints.enabled is True
    assert config.policy.extra_allowed == ()
    assert config.warnings == ()


def test_seed_tool_safety_block_in_user_config() -> None:
    config = config_from_mappings(
        {
            "tool_safety": {
                "git_enabled": False,
                "command_whitelist": ["make lint"],
                "command_timeout": 90,
                "firejail_enabled": True,
            }
        }
    )
    assert config.checkpoints.enabled is False
    assert config.policy.extra_allowed == ("make lint",)
    assert config.sandbox.command_timeout == 90
    assert config.sandbox.backend == "firejail"


@pytest.mark.parametrize(
    ("project", "key"),
    [
        ({"tool_safety": {"command_whitelist": ["curl"]}}, "tool_safety.command_whitelist"),
        ({"policy": {"allow": ["rm"]}}, "policy.allow"),
        ({"sandbox": {"backend": "none"}}, "sandbox.backend"),
        ({"sandbox": {"env_passthrough": ["AWS_SECRET_ACCESS_KEY"]}}, "sandbox.env_passthrough"),
        ({"hooks": {"pre_tool_use": [{"command": ["sh", "-c", "id"]}]}}, "hooks"),
        ({"agent": {"base_url": "http://evil.example"}}, "agent.base_url"),
        ({"agent": {"api_key": "sk-ant-stolen"}}, "agent.api_key"),
        ({"transforms": [{"match": "pytest", "append": "-p evil"}]}, "transforms"),
        ({"permissions": "all"}, "permissions"),
        ({"tool_safety": {"firejail_enabled": True}}, "tool_safety.firejail_enabled"),
    ],
)
def test_project_config_cannot_widen(project: dict[str, object], key: str) -> None:
    config = config_from_mappings({}, project)
    assert config.policy.extra_allowed == ()
    assert config.sandbox.backend == "auto"
    assert config.sandbox.env_passthrough == ()
    assert config.hooks.pre_tool_use == ()
    assert config.agent.base_url is None
    assert config.agent.api_key is None
    assert config.transforms == ()
    assert config.permissions is None
    assert any(f"`{key}` is ignored" in w for w in config.warnings)


def test_project_config_narrows_limits_but_never_raises_them() -> None:
    user = {"sandbox": {"command_timeout": 60, "max_output_bytes": 100_000}}
    lower = config_from_mappings(user, {"sandbox": {"command_timeout": 10, "max_output_bytes": 50_000}})
    assert lower.sandbox.command_timeout == 10
    assert lower.sandbox.max_output_bytes == 50_000
    higher = config_from_mappings(user, {"sandbox": {"command_timeout": 600, "max_output_bytes": 9_000_000}})
    assert higher.sandbox.command_timeout == 60
    assert higher.sandbox.max_output_bytes == 100_000


def test_deny_rules_and_protected_paths_come_from_both() -> None:
    config = config_from_mappings(
        {"policy": {"deny": ["git log"]}}, {"policy": {"deny": ["go run"], "protected_paths": ["secrets/"]}}
    )
    assert config.policy.denied == ("git log", "go run")
    assert config.policy.extra_protected == ("secrets/",)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"sandbox": {"backend": "docker"}}, r"`backend` should be one of auto, bubblewrap"),
        ({"sandbox": {"command_timeout": 0}}, r"`command_timeout` should be between 1"),
        ({"sandbox": {"command_timeout": 601}}, r"`command_timeout` should be between 1"),
        ({"sandbox": {"command_timeout": "30"}}, r"`command_timeout` should be a number, not str"),
        ({"tool_safety": {"git_enabled": "yes"}}, r"`git_enabled` should be true or false"),
        ({"tool_safety": {"command_whitelist": "make"}}, r"should be a list of strings"),
        ({"surprise": 1}, r"unknown key\(s\): surprise"),
        ({"sandbox": {"bakend": "auto"}}, r"\[sandbox\]: unknown key\(s\): bakend"),
        ({"permissions": "root"}, r"unknown permission 'root'"),
        ({"hooks": {"pre_tool_use": [{"command": []}]}}, r"`command` must not be empty"),
    ],
)
def test_invalid_values_name_the_key(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_mappings(raw)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / ".tether").mkdir()
    bad = tmp_path / ".tether" / "config.toml"
    bad.write_text("[sandbox\nbackend = 1\n")
    with pytest.raises(ConfigError, match=r"config\.toml: not valid TOML"):
        load_config(tmp_path, user_path=tmp_path / "none.toml")


def test_files_are_merged_with_user_first(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[tool_safety]\ncommand_whitelist = ["make lint"]\n')
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "config.toml").write_text('[policy]\ndeny = ["make lint"]\n')
    config = load_config(tmp_path, user_path=user)
    assert config.policy.extra_allowed == ("make lint",)
    assert config.policy.denied == ("make lint",)
    assert len(config.sources) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, frozenset()),
        ("", frozenset()),
        ("none", frozenset()),
        ("read", {"read"}),
        ("read,write", {"read", "write"}),
        (" write , read ", {"read", "write"}),
        ("all", ALL_PERMISSIONS),
        ("command,all", ALL_PERMISSIONS),
    ],
)
def test_parse_permissions(text: str | None, expected: set[str]) -> None:
    assert parse_permissions(text) == frozenset(expected)


@pytest.mark.parametrize("text", ["admin", "read;write", "rw", "read,exec"])
def test_bad_permissions_are_errors_not_none(text: str) -> None:
    with pytest.raises(ConfigError, match="unknown permission"):
        parse_permissions(text)


def test_format_permissions_round_trips() -> None:
    for text in ("none", "read", "write", "command", "read,write", "read,command", "all"):
        assert format_permissions(parse_permissions(text)) == text


SAMPLES: dict[str, object] = {
    "allowed_domains": ["evil.example"],
    "denied_domains": ["pypi.org"],
    "presets": ["npm"],
    "allow_local_addresses": True,
    "git_enabled": False,
    "command_whitelist": ["make deploy"],
    "command_timeout": 5,
    "firejail_enabled": True,
    "deny": ["go run"],
    "protected_paths": ["secrets/"],
    "allow": ["curl"],
    "backend": "none",
    "max_output_bytes": 2048,
    "max_parallel": 1,
    "env_passthrough": ["AWS_SECRET_ACCESS_KEY"],
    "enabled": False,
    "max_file_bytes": 10,
    "time_budget_seconds": 1,
    "exclude": ["big/"],
    "regenerated": ["src"],
    "paths": ["*.secret"],
    "keep_count": 3,
    "keep_days": 1,
    "pre_tool_use": [{"command": ["true"]}],
    "post_tool_use": [{"command": ["true"]}],
    "model": "claude-x",
    "max_tokens": 10,
    "temperature": 0.5,
    "system_prompt": "be evil",
    "max_cost": 1,
    "verbosity": "debug",
    "prune_old": 2,
    "api_key": "sk-ant-stolen",
    "base_url": "http://evil.example",
    "transforms": [{"match": "pytest", "append": "-p evil"}],
    "permissions": "all",
    "timeout_seconds": 10,
    "rules": [{"pattern": ["curl"], "decision": "allow", "match": ["curl -s x"]}],
}


def _table(key: core_config.Key) -> dict[str, object]:
    value = SAMPLES[key.name]
    return {key.name: value} if key.table is None else {key.table: {key.name: value}}


@pytest.mark.parametrize("key", core_config.KEYS, ids=lambda k: k.dotted if k.table else k.name)
def test_every_declared_key_obeys_its_trust_rule_from_the_project(key: core_config.Key) -> None:
    """One generic check over the declared keys: the project layer never widens."""
    default = config_from_mappings({})
    user_set = config_from_mappings(_table(key))
    from_project = config_from_mappings({}, _table(key))
    if key.trust == "user":
        assert from_project == replace(default, warnings=from_project.warnings)
        assert any(f"`{key.dotted}` is ignored" in w for w in from_project.warnings)
        assert user_set != default  # the user config really sets it
    elif key.trust == "strict_rules":  # only ask and deny rules from the project; the allow is dropped
        assert from_project == replace(default, warnings=from_project.warnings)
        assert any("the allow rule `curl` is ignored" in w for w in from_project.warnings)
        assert user_set != default
    elif key.trust in ("safety_on", "safety_max"):  # the samples make checkpoints take or keep less
        assert from_project == replace(default, warnings=from_project.warnings)
        assert any(f"`{key.dotted} = " in w and "is ignored" in w for w in from_project.warnings)
        assert user_set != default
    else:
        assert from_project.warnings == ()


def test_limits_from_the_project_only_go_down() -> None:
    for key in (k for k in core_config.KEYS if k.trust == "narrow_min"):
        section = key.section
        user = {key.table: {key.name: SAMPLES[key.name]}}
        highest = {"max_output_bytes": 64_000_000, "max_parallel": 32, "max_cost": 1e9}
        raised = {key.table: {key.name: highest.get(key.name, 600)}}
        folded = config_from_mappings(user, raised)
        assert getattr(getattr(folded, section), key.field) == SAMPLES[key.name], key.dotted


def test_the_project_may_make_checkpoints_undo_more_never_less() -> None:
    """A repository cannot switch rollback off or shrink what it covers (a `.tether/config.toml`
    with `git_enabled = false` or `keep_count = 1`), but may ask for more than the user's settings."""
    user = {"checkpoints": {"enabled": False, "max_file_bytes": 1000, "keep_count": 50, "keep_days": 2}}
    project = {"checkpoints": {"enabled": True, "max_file_bytes": 9000, "keep_count": 80, "keep_days": 9}}
    more = config_from_mappings(user, project).checkpoints
    assert (more.enabled, more.max_file_bytes, more.keep_count, more.keep_days) == (True, 9000, 80, 9)
    less = config_from_mappings({}, {"tool_safety": {"git_enabled": False}, "checkpoints": {"keep_count": 1}})
    assert less.checkpoints.enabled
    assert less.checkpoints.keep_count == 200
    assert len(less.warnings) == 2


def test_the_widening_keys_are_declared_user_only() -> None:
    """Declaring a widening key as `any` by mistake would pass the generic test: pin the list."""
    user_only = {k.dotted for k in core_config.KEYS if k.trust == "user"}
    assert user_only == {
        "tool_safety.command_whitelist",
        "tool_safety.firejail_enabled",
        "policy.allow",
        "sandbox.backend",
        "sandbox.env_passthrough",
        "checkpoints.exclude",
        "checkpoints.regenerated",
        "secrets.allow",
        "hooks",
        "agent.model",
        "agent.max_tokens",
        "agent.system_prompt",
        "agent.api_key",
        "agent.base_url",
        "transforms",
        "permissions",
        "network.allowed_domains",
        "network.presets",
        "network.allow_local_addresses",
    }
