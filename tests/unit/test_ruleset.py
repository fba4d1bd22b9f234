"""Rules as data (docs/policy.md, "Rules as data"): matching, examples checked at load, the layers'
powers, and that no rule lets a command escape what the built-in checks deny."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.config import load_config
from tether.core.policy import PolicySettings, decide
from tether.core.policy.ruleset import (
    Rule,
    RuleError,
    RuleSource,
    command_argvs,
    example_failures,
    rule_for_segment,
    rule_from_table,
    strictest,
)
from tether.errors import ConfigError

USER = RuleSource("user", "/u/config.toml", 3)


def rule(pattern: list[object], decision: str = "allow", **extra: object) -> Rule:
    return rule_from_table({"pattern": pattern, "decision": decision, **extra}, USER)


def test_a_pattern_matches_leading_words_with_alternatives() -> None:
    npm = rule(["npm", "run", ["build", "test"]])
    assert npm.matches(["npm", "run", "build"])
    assert npm.matches(["npm", "run", "test", "--", "--watch=false"])
    assert not npm.matches(["npm", "run", "deploy"])
    assert not npm.matches(["npm", "run"])
    assert not npm.matches(["npx", "run", "build"])
    assert npm.pattern_text == "npm run {build|test}"


def test_the_strictest_matching_rule_wins_whatever_its_order() -> None:
    allow = rule(["git"])
    ask = rule(["git", "commit"], "ask")
    deny = rule(["git", "commit", "--amend"], "deny")
    for order in ([allow, ask, deny], [deny, ask, allow], [ask, allow, deny]):
        assert strictest(order, ["git", "commit", "--amend"]) is deny
        assert strictest(order, ["git", "commit", "-m", "x"]) is ask
        assert strictest(order, ["git", "status"]) is allow
    assert strictest([allow], ["make"]) is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"pattern": [], "decision": "allow"}, "non-empty list"),
        ({"pattern": ["make"], "decision": "maybe"}, "`decision` must be one of"),
        ({"pattern": ["make"], "decision": "allow", "when": "always"}, r"unknown key\(s\) when"),
        ({"pattern": [["make", "cmake"]], "decision": "allow"}, "must be one word"),
        ({"pattern": ["make", 3], "decision": "allow"}, "word 2"),
        ({"pattern": [" make"], "decision": "allow"}, "word 1"),
        ({"pattern": ["make"], "decision": "allow", "match": [""]}, "list of command lines"),
        ("make", "must be a table"),
    ],
)
def test_malformed_rules_are_errors_naming_the_file_and_line(table: object, message: str) -> None:
    with pytest.raises(RuleError, match=message) as caught:
        rule_from_table(table, USER)
    assert "/u/config.toml:3" in str(caught.value)


def test_examples_are_checked_with_the_policy_parser() -> None:
    good = rule(["make", "lint"], match=["make lint", "cd src && make lint --fast"], not_match=["make"])
    assert example_failures(good, command_argvs) == []
    bad = rule(["make", "lint"], match=["make test"], not_match=["make lint -j2"])
    failures = example_failures(bad, command_argvs)
    assert failures == [
        "`match` example `make test` does not match `make lint`",
        "`not_match` example `make lint -j2` matches `make lint`",
    ]
    # quoted words are words: the example is read the way a command is
    assert example_failures(rule(["git", "commit"], match=["git 'commit' \"-m\" x"]), command_argvs) == []


def test_examples_see_git_global_options_as_the_policy_does() -> None:
    """An example is matched the way a command is: the docs' own `git -C . commit` example must
    load, and an allow rule's `not_match` for `git -c … commit` must hold (it is not allowed)."""
    allow = rule(
        ["git", "commit"],
        match=["git -C . commit -m x", "git --no-pager commit"],
        not_match=["git -c core.fsmonitor=x commit", "git --git-dir .git commit"],
    )
    assert example_failures(allow, command_argvs) == []
    deny = rule(
        ["git", "push"],
        "deny",
        match=["git -C . push", "git -c a.b=c push", "git --git-dir x --work-tree y --namespace n push"],
    )
    assert example_failures(deny, command_argvs) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["git", "-c", "a.b=c", "push"],
        ["git", "--git-dir", "x", "push"],
        ["git", "--work-tree", "y", "--namespace", "n", "push"],
        ["git", "--super-prefix", "p/", "push"],
        ["git", "--config-env", "a.b=HOME", "push"],
    ],
)
def test_a_deny_or_ask_rule_sees_through_every_global_option(argv: list[str]) -> None:
    for decision in ("deny", "ask"):
        assert rule(["git", "push"], decision).applies_to(argv)
    assert not rule(["git", "push"]).applies_to(argv)  # allow: only -C and --no-pager are dropped


def test_an_approved_segment_becomes_its_program_and_subcommand() -> None:
    made = rule_for_segment(["git", "commit", "-m", "wip"], "approved in the editor")
    assert made.pattern == ("git", "commit")
    assert made.match == ("git commit -m wip",)
    assert example_failures(made, command_argvs) == []
    assert rule_for_segment(["./build.sh", "--fast"], "x").pattern == ("./build.sh",)


# --- loading: the layers and their powers ----------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = {
        "user": tmp_path / "user.toml",
        "managed": tmp_path / "managed.toml",
        "workspace": tmp_path / "ws",
    }
    paths["workspace"].mkdir()
    paths["project"] = paths["workspace"] / ".tether" / "config.toml"
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(paths["managed"]))
    return paths


def load(files: dict[str, Path]) -> PolicySettings:
    return load_config(files["workspace"], user_path=files["user"]).policy


def test_rules_from_each_layer_carry_their_file_and_line(files: dict[str, Path]) -> None:
    write(
        files["user"],
        '# my rules\n[agent]\nmodel = "m"\n\n[[rules]]\npattern = ["make", "lint"]\ndecision = "allow"\n'
        'match = ["make lint"]\n\n[[rules]]\npattern = ["git", "push"]\ndecision = "deny"\n',
    )
    write(files["managed"], '[[rules]]\npattern = ["npm", "publish"]\ndecision = "deny"\n')
    write(files["project"], '[[rules]]\npattern = ["make", "deploy"]\ndecision = "ask"\n')
    rules = load(files).rules
    assert [(str(r.source), r.source.layer, r.pattern_text) for r in rules] == [
        (f"{files['user']}:5", "user", "make lint"),
        (f"{files['user']}:10", "user", "git push"),
        (f"{files['managed']}:1", "managed", "npm publish"),
        (f"{files['project']}:1", "project", "make deploy"),
    ]


def test_a_failing_example_refuses_to_load_naming_file_and_line(files: dict[str, Path]) -> None:
    write(
        files["user"],
        '[[rules]]\npattern = ["make"]\ndecision = "allow"\n\n'
        '[[rules]]\npattern = ["make", "lint"]\ndecision = "allow"\nmatch = ["make test"]\n',
    )
    with pytest.raises(ConfigError, match=rf"{files['user']}:5: rule `make lint`: `match` example"):
        load(files)


def test_the_project_may_add_ask_and_deny_but_its_allow_is_ignored_with_a_warning(
    files: dict[str, Path], tmp_path: Path
) -> None:
    write(
        files["project"],
        '[[rules]]\npattern = ["curl"]\ndecision = "allow"\n\n'
        '[[rules]]\npattern = ["make"]\ndecision = "deny"\n',
    )
    config = load_config(files["workspace"], user_path=files["user"])
    assert [r.pattern_text for r in config.policy.rules] == ["make"]
    assert any(f"{files['project']}:1: the allow rule `curl` is ignored" in w for w in config.warnings)
    verdict = decide("curl -s https://example.com", "command", files["workspace"], config.policy)
    assert not verdict.allowed


def test_a_managed_deny_beats_a_user_allow(files: dict[str, Path]) -> None:
    write(files["user"], '[[rules]]\npattern = ["terraform"]\ndecision = "allow"\n')
    write(files["managed"], '[[rules]]\npattern = ["terraform", "apply"]\ndecision = "deny"\n')
    settings = load(files)
    plan = decide("terraform plan", "command", files["workspace"], settings)
    assert plan.allowed
    assert plan.rule == "allowed.user_rule"
    apply = decide("terraform apply -auto-approve", "command", files["workspace"], settings)
    assert not apply.allowed
    assert apply.rule == "rule.managed"
    assert f"{files['managed']}:1" in apply.reason


# --- no rule lets a command escape -------------------------------------------------------------------


def settings_with(*rules: Rule) -> PolicySettings:
    return PolicySettings(rules=rules)


def test_an_allow_rule_never_lets_a_path_outside_the_workspace_through(tmp_path: Path) -> None:
    settings = settings_with(rule(["cat"]), rule(["tool"]))
    assert decide("cat README.md", "command", tmp_path, settings).allowed
    for escape in (
        "cat /etc/passwd",
        "cat ../x",
        "tool --out=/etc/x",
        "tool > /tmp/x",
        "tool > .git/hooks/pre-commit",
    ):
        verdict = decide(escape, "command", tmp_path, settings)
        assert not verdict.allowed, escape


@pytest.mark.parametrize(
    ("approved", "command"),
    [
        (["git", "stash"], "git stash show --name-only --output=.git/config"),
        (["git", "stash"], "git stash show -p --output=.envrc"),
        (["git", "stash"], "git stash show -p --output=sub/.vscode/settings.json"),
        (["git", "checkout"], "git checkout t -- .envrc"),
        (["tool"], "tool sub/.git/hooks/pre-commit"),
    ],
)
def test_an_allow_rule_never_lets_a_protected_file_be_written(
    tmp_path: Path, approved: list[object], command: str
) -> None:
    """What "Always allow" writes (`git stash`, `git checkout`) lets through options no schema
    checked: any file a command names may be one it writes, so protected ones stay refused."""
    settings = settings_with(rule(approved))
    assert decide(" ".join(map(str, approved)) + " list", "command", tmp_path, settings).allowed
    verdict = decide(command, "command", tmp_path, settings)
    assert verdict.rule == "path.protected", (verdict.rule, verdict.reason)


def test_an_allow_rule_does_not_apply_in_read_mode(tmp_path: Path) -> None:
    assert not decide("tool x", "read", tmp_path, settings_with(rule(["tool"]))).allowed


@pytest.mark.parametrize(
    "dodge",
    [
        "make deploy",
        "'make' deploy",
        'm"ake" deploy',
        "make  deploy --force",
        "true && make deploy",
        "make lint; make deploy",
        "make lint | make deploy",
        "env X=1 make deploy",
        "command make deploy",
        "builtin make deploy",
        "nice make deploy",
        "timeout 5 make deploy",
        "xargs make deploy",
    ],
)
def test_a_deny_rule_cannot_be_dodged(tmp_path: Path, dodge: str) -> None:
    settings = settings_with(rule(["make"]), rule(["make", "deploy"], "deny"))
    assert decide("make lint", "command", tmp_path, settings).allowed
    verdict = decide(dodge, "command", tmp_path, settings)
    assert not verdict.allowed, dodge


@pytest.mark.parametrize(
    "command",
    [
        "git --work-tree . push",
        "git --namespace n push",
        "git --super-prefix p/ push",
        "git --config-env core.fsmonitor=HOME push",
        "git --config-env=core.fsmonitor=HOME push",
        "git -c core.fsmonitor=x push",
    ],
)
def test_an_ask_rule_never_widens_a_git_command_no_rule_may_allow(tmp_path: Path, command: str) -> None:
    """Your ask rule may turn a built-in deny into a question, but not for git with a global
    option git runs programs through: the built-in deny stands, never a question."""
    settings = settings_with(rule(["git", "push"], "ask"))
    assert decide("git push", "command", tmp_path, settings).asks  # the rule itself still asks
    verdict = decide(command, "command", tmp_path, settings)
    assert not verdict.allowed
    assert not verdict.asks, (command, verdict.rule)


def test_git_global_options_do_not_dodge_a_rule(tmp_path: Path) -> None:
    settings = settings_with(rule(["git", "push"], "deny"))
    for dodge in ("git push", "git -C . push", "git --no-pager push origin"):
        verdict = decide(dodge, "command", tmp_path, settings)
        assert not verdict.allowed, dodge
        assert verdict.rule in ("rule.user", "git.subcommand", "flag.denied", "command.unknown"), dodge
    assert decide("git -C . push", "command", tmp_path, settings).rule == "rule.user"


def test_the_writer_appends_to_existing_rules_keeping_everything_else(tmp_path: Path) -> None:
    from tether.core.rules_file import add_user_rule

    path = tmp_path / "config.toml"
    original = (
        '# rules I trust\n[[rules]]  # the linter\npattern = ["make", "lint"]\ndecision = "allow"\n'
        "\n[sandbox]\ncommand_timeout = 60  # slow machine\n"
    )
    path.write_text(original, encoding="utf-8")
    made = rule_for_segment(["npm", "run", "build"], "approved")
    _, toml, written = add_user_rule(made, path)
    assert written
    text = path.read_text(encoding="utf-8")
    assert "# rules I trust" in text
    assert "[[rules]]  # the linter" in text
    assert "command_timeout = 60  # slow machine" in text
    assert 'pattern = ["npm", "run"]' in toml
    settings = load_config(tmp_path, user_path=path).policy
    assert [r.pattern_text for r in settings.rules] == ["make lint", "npm run"]
    assert add_user_rule(made, path)[2] is False
    assert path.read_text(encoding="utf-8") == text
