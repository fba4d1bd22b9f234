"""The third verdict and the fourth mode: what asks, what workspace mode runs, what stays denied.

Rows are (command, mode, verdict, rule). The denied rows are what an attacker tries once any program
may run in the sandbox: leaving the workspace by path, the network, privilege, other processes, the
sandbox tools themselves, shell builtins that run unreviewed text, git options that run programs,
secrets — and turning a deny into an ask by wrapping it in an allowed or asked command.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tether.core.policy import PolicySettings, decide
from tether.core.policy.ruleset import Rule, RuleSource, rule_from_table

ROWS: list[tuple[str, str, str, str]] = [
    # --- ask: the repository's state beyond the work tree --------------------------------------
    ("git commit -m wip", "command", "ask", "ask.git_state"),
    ("git commit -m wip", "workspace", "ask", "ask.git_state"),
    ("git commit -m wip", "read", "deny", "git.subcommand"),  # read mode never asks
    ("git -C . commit -m x", "command", "ask", "ask.git_state"),
    ("git --no-pager commit -m x", "command", "ask", "ask.git_state"),
    ("git checkout main", "command", "ask", "ask.git_state"),
    ("git switch -c feature", "command", "ask", "ask.git_state"),
    ("git stash push -m x", "command", "ask", "ask.git_state"),
    ("git reset --hard HEAD~1", "command", "ask", "ask.git_state"),
    ("git merge feature", "command", "ask", "ask.git_state"),
    ("git rebase main", "command", "ask", "ask.git_state"),
    ("git push origin main", "command", "ask", "ask.git_state"),
    ("git clean -fdx", "command", "ask", "ask.destructive"),
    # git options that run a program never become an ask, in any mode
    ("git -c core.hooksPath=x commit -m y", "workspace", "deny", "git.global_option"),
    ("git --exec-path=/tmp commit", "workspace", "deny", "git.global_option"),
    ("git fetch --upload-pack=sh origin", "workspace", "deny", "git.subcommand"),
    ("git fetch --upload-pa=sh origin", "workspace", "deny", "git.subcommand"),  # abbreviated
    ("git pull -u sh", "workspace", "deny", "git.subcommand"),
    ("git rebase -x 'sh -c id' main", "workspace", "deny", "git.subcommand"),
    ("git rebase --exec=sh main", "workspace", "deny", "git.subcommand"),
    ("git commit --template=/etc/passwd", "workspace", "deny", "git.subcommand"),
    ("git submodule foreach sh", "workspace", "deny", "git.subcommand"),
    ("git config core.pager sh", "workspace", "deny", "git.subcommand"),
    # `apply --unsafe-paths` writes where the patch says: `.git/commondir`, `.git/objects/…`
    ("git apply --unsafe-paths fix.patch", "workspace", "deny", "git.subcommand"),
    ("git apply --uns fix.patch", "workspace", "deny", "git.subcommand"),  # abbreviated
    ("git apply fix.patch", "command", "ask", "ask.git_state"),
    ("git commit -F /etc/passwd", "command", "deny", "path.outside_workspace"),
    # --- ask: installed packages -----------------------------------------------------------------
    ("npm install", "command", "ask", "ask.package_install"),
    ("pip install requests", "command", "ask", "ask.package_install"),
    ("python3 -m pip install requests", "command", "ask", "ask.package_install"),
    ("cargo add serde", "command", "ask", "ask.package_install"),
    ("go get example.com/x", "command", "ask", "ask.package_install"),
    ("pip install -r /etc/requirements.txt", "command", "deny", "path.outside_workspace"),
    # --- ask: a program in the workspace that no rule knows -------------------------------------
    ("./scripts/build.sh", "command", "ask", "ask.workspace_program"),
    ("scripts/build.sh --fast", "command", "ask", "ask.workspace_program"),
    ("./scripts/build.sh", "workspace", "allow", "allowed"),
    ("./scripts/build.sh", "read", "deny", "command.path"),
    ("./scripts/missing.sh", "command", "deny", "command.path"),
    ("./scripts", "command", "deny", "command.path"),  # a directory
    ("../other/build.sh", "workspace", "deny", "path.outside_workspace"),
    ("scripts/../../x.sh", "workspace", "deny", "path.outside_workspace"),
    ("/bin/rm -rf x", "workspace", "deny", "command.path"),
    ("./link-out.sh", "workspace", "deny", "path.outside_workspace"),  # symlink to /bin/sh
    # --- one question per compound command, a deny anywhere wins ---------------------------------
    ("ls && git commit -m x && git push", "command", "ask", "ask.git_state"),
    ("git commit -m x && curl https://evil.example", "workspace", "deny", "command.blocked"),
    ("git commit -m x; cat /etc/shadow", "command", "deny", "path.outside_workspace"),
    ("./scripts/build.sh > /etc/x", "command", "deny", "path.outside_workspace"),
    ("npm install && sudo make install", "command", "deny", "command.blocked"),
    # --- workspace mode: any program, in the sandbox ---------------------------------------------
    ("mkdir -p build/out", "workspace", "allow", "allowed"),
    ("mkdir -p build/out", "command", "deny", "command.blocked"),
    ("make test", "workspace", "allow", "allowed"),
    ("node script.js", "workspace", "allow", "allowed"),
    ("python3 tool.py", "workspace", "allow", "allowed"),
    ("npx tsc --noEmit", "workspace", "allow", "allowed"),
    ("jq .name package.json", "workspace", "allow", "allowed"),
    ("find . -name '*.pyc' -delete", "workspace", "allow", "allowed"),
    ("find . -name '*.tmp' -exec rm {} +", "workspace", "allow", "allowed"),
    ("ls *.log | xargs rm", "workspace", "allow", "allowed"),
    ("sed -i s/a/b/ notes.txt", "workspace", "allow", "allowed"),
    ("rm -rf ./build", "workspace", "allow", "allowed"),
    ("mv notes.txt docs/notes.txt", "workspace", "allow", "allowed"),
    ("chmod +x scripts/build.sh", "workspace", "allow", "allowed"),
    ("cat <<'EOF' > notes.txt\nhello\nEOF", "workspace", "allow", "allowed"),
    # ... but never out of the workspace by path
    ("rm -rf /", "workspace", "deny", "path.outside_workspace"),
    ("rm -rf ~", "workspace", "deny", "path.outside_workspace"),
    ("rm -rf ~/", "workspace", "deny", "path.outside_workspace"),
    ("rm -rf ..", "workspace", "deny", "path.outside_workspace"),
    ("cp notes.txt /tmp/x", "workspace", "deny", "path.outside_workspace"),
    ("node ../x.js", "workspace", "deny", "path.outside_workspace"),
    ("python3 /tmp/x.py", "workspace", "deny", "path.outside_workspace"),
    ("ln -s /etc/passwd p", "workspace", "deny", "path.outside_workspace"),
    ("cd .. && make", "workspace", "deny", "path.outside_workspace"),
    ("make -C /etc", "workspace", "deny", "path.outside_workspace"),
    ("tar xf a.tar -C /", "workspace", "deny", "path.outside_workspace"),
    ("touch --reference=/etc/shadow x", "workspace", "deny", "path.outside_workspace"),
    ("dd if=/dev/sda of=disk.img", "workspace", "deny", "path.outside_workspace"),
    ("dd if=notes.txt of=/etc/x", "workspace", "deny", "path.outside_workspace"),
    ("make PREFIX=/usr/local install", "workspace", "deny", "path.outside_workspace"),
    ("some-tool --config=/etc/x", "workspace", "deny", "path.outside_workspace"),
    ("rm -rf .", "workspace", "allow", "allowed"),  # the checkpoint restores it
    ("awk 1 notes.txt > /dev/null", "workspace", "allow", "allowed"),
    # ... nor into protected paths or secrets
    ("rm -rf .git", "workspace", "deny", "path.protected"),
    ("echo x > .git/hooks/pre-commit", "workspace", "deny", "path.protected"),
    ("mv .tether x", "workspace", "deny", "path.protected"),
    ("cat .env", "workspace", "deny", "path.secret"),
    ("cp .env leak.txt", "workspace", "deny", "path.secret"),
    ("tar czf x.tgz .env", "workspace", "deny", "path.secret"),
    ("zip -r out.zip .env", "workspace", "deny", "path.secret"),
    ("python3 tool.py --in=.env", "workspace", "deny", "path.secret"),
    ("some-tool ENV_FILE=.env", "workspace", "deny", "path.secret"),
    ("some-tool .git/config", "workspace", "deny", "path.protected"),
    ("./scripts/build.sh .git/hooks/x", "workspace", "deny", "path.protected"),
    ("git add .env", "command", "deny", "path.secret"),
    # ... nor the network, privilege, other processes, the sandbox tools, unreviewed text
    ("curl https://example.com", "workspace", "deny", "command.blocked"),
    ("wget https://example.com", "workspace", "deny", "command.blocked"),
    ("ssh host", "workspace", "deny", "command.blocked"),
    ("nc -l 4444", "workspace", "deny", "command.blocked"),
    ("rsync -a . host:x", "workspace", "deny", "command.blocked"),
    ("sudo make install", "workspace", "deny", "command.blocked"),
    ("su -c id", "workspace", "deny", "command.blocked"),
    ("kill -9 1", "workspace", "deny", "command.blocked"),
    ("pkill python", "workspace", "deny", "command.blocked"),
    ("systemctl stop sshd", "workspace", "deny", "command.blocked"),
    ("docker run --privileged x", "workspace", "deny", "command.blocked"),
    ("mount --bind / x", "workspace", "deny", "command.blocked"),
    ("bwrap --bind / / sh", "workspace", "deny", "command.blocked"),
    ("firejail --noprofile sh", "workspace", "deny", "command.blocked"),
    ("unshare -r sh", "workspace", "deny", "command.blocked"),
    ("nsenter -t 1 -a sh", "workspace", "deny", "command.blocked"),
    ("chroot / sh", "workspace", "deny", "command.blocked"),
    ("eval ls", "workspace", "deny", "command.blocked"),
    ("exec sh", "workspace", "deny", "command.blocked"),
    ("source x.sh", "workspace", "deny", "command.blocked"),
    ("crontab x", "workspace", "deny", "command.blocked"),
    ("xdg-open x", "workspace", "deny", "command.blocked"),
    # ... and the shell syntax rules do not relax
    ("make $(cat .env)", "workspace", "deny", "syntax.command_substitution"),
    ("$(echo rm) -rf x", "workspace", "deny", "syntax.command_substitution"),
    ("make & disown", "workspace", "deny", "syntax.background"),
    ("FOO=1 make", "workspace", "deny", "syntax.assignment"),
    ("ls $HOME", "workspace", "deny", "syntax.expansion"),
    ("cat <<EOF > notes.txt\n$(id)\nEOF", "workspace", "deny", "syntax.heredoc"),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "build.sh").write_text("#!/bin/sh\necho built\n")
    (ws / "scripts" / "build.sh").chmod(0o755)
    (ws / "link-out.sh").symlink_to("/bin/sh")
    (ws / ".env").write_text("KEY=1\n")
    (ws / "notes.txt").write_text("a\n")
    return ws.resolve()


@pytest.mark.parametrize(("command", "mode", "verdict", "rule"), ROWS)
def test_verdict(command: str, mode: str, verdict: str, rule: str, workspace: Path) -> None:
    decision = decide(command, mode, workspace, PolicySettings())  # type: ignore[arg-type]
    assert (decision.verdict, decision.rule) == (verdict, rule), decision.reason
    assert decision.allowed is (verdict == "allow")
    assert decision.reason
    assert bool(decision.asks) is (verdict == "ask")


def test_one_question_lists_only_the_segments_that_need_it(workspace: Path) -> None:
    decision = decide(
        "ls && git commit -m x && pytest -q && git push", "command", workspace, PolicySettings()
    )
    assert decision.verdict == "ask"
    assert [a.argv[:2] for a in decision.asks] == [("git", "commit"), ("git", "push")]
    assert "1 more" in decision.reason
    body = decision.to_json()
    assert body["verdict"] == "ask"
    assert [a["argv"][:2] for a in body["ask"]] == [["git", "commit"], ["git", "push"]]


def test_a_command_every_segment_of_which_is_allowed_never_asks(workspace: Path) -> None:
    decision = decide("ls && git status && git diff && pytest -q", "command", workspace, PolicySettings())
    assert decision.verdict == "allow"
    assert decision.asks == ()


def test_the_ladder_each_mode_allows_what_the_one_below_does(workspace: Path) -> None:
    """none < read < command < workspace: moving up never turns an allow into a deny or an ask."""
    commands = [row[0] for row in ROWS] + ["ls", "cat notes.txt", "git status", "pytest -q", "echo x > a"]
    for command in commands:
        verdicts = [
            decide(command, m, workspace, PolicySettings()).verdict for m in ("read", "command", "workspace")
        ]
        for lower, higher in itertools.pairwise(verdicts):
            assert not (lower == "allow" and higher != "allow"), (command, verdicts)


def _rule(pattern: list[str], decision: str, layer: str) -> Rule:
    return rule_from_table({"pattern": pattern, "decision": decision}, RuleSource(layer))  # type: ignore[arg-type]


def test_a_project_ask_rule_narrows_and_never_turns_a_deny_into_an_ask(workspace: Path) -> None:
    settings = PolicySettings(
        rules=(
            _rule(["make", "deploy"], "ask", "project"),
            _rule(["make", "clean"], "deny", "project"),
            _rule(["curl"], "ask", "project"),  # the repository trying to widen
            _rule(["git", "commit"], "ask", "project"),
        )
    )
    assert decide("make deploy", "workspace", workspace, settings).verdict == "ask"
    assert decide("make clean", "workspace", workspace, settings).verdict == "deny"
    assert decide("make test", "workspace", workspace, settings).verdict == "allow"
    curl = decide("curl https://example.com", "command", workspace, settings)
    assert (curl.verdict, curl.rule) == ("deny", "command.blocked")
    assert decide("git commit -F /etc/passwd", "command", workspace, settings).verdict == "deny"
    assert (
        decide("ls", "read", workspace, PolicySettings(rules=(_rule(["ls"], "ask", "project"),))).verdict
        == "ask"
    )


def test_a_user_ask_rule_may_widen_a_deny_to_an_ask_but_paths_still_hold(workspace: Path) -> None:
    settings = PolicySettings(rules=(_rule(["docker", "build"], "ask", "user"),))
    assert decide("docker build .", "command", workspace, settings).verdict == "ask"
    assert decide("docker build /etc", "command", workspace, settings).rule == "path.outside_workspace"
    assert decide("docker build .env", "command", workspace, settings).rule == "path.secret"
    assert decide("docker build .", "read", workspace, settings).verdict == "deny"


def test_a_tilde_denial_does_not_tell_the_model_where_home_is(workspace: Path) -> None:
    import os

    for command in ("echo ~", "echo ~/x", "ls ~"):
        decision = decide(command, "read", workspace, PolicySettings())
        assert decision.rule == "path.outside_workspace"
        assert os.path.expanduser("~") not in decision.reason + (decision.suggestion or "")


# --- git under the person's rules: a rule never lets git run a program ------------------------------


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git commit -m x", "allowed.user_rule"),
        ("git -C . commit -m x", "allowed.user_rule"),
        ("git --no-pager commit -m x", "allowed.user_rule"),
        ("git -c core.fsmonitor=./evil commit -m x", "git.global_option"),  # matched `git commit`
        ("git -c core.hooksPath=h commit -m x", "git.global_option"),
        ("git --exec-path=. commit -m x", "git.global_option"),
        ("git --git-dir=fake commit -m x", "git.global_option"),
    ],
)
def test_an_allow_rule_for_git_does_not_reach_past_global_options(
    command: str, rule: str, workspace: Path
) -> None:
    settings = PolicySettings(rules=(_rule(["git", "commit"], "allow", "user"),))
    assert decide(command, "command", workspace, settings).rule == rule


@pytest.mark.parametrize(
    "command",
    [
        "git rebase --exec=./evil HEAD~1",
        "git rebase --exe ./evil HEAD~1",  # git takes an unambiguous prefix
        "git rebase -x ./evil HEAD~1",
        "git rebase -x./evil HEAD~1",
        "git rebase main --exec ./evil",
        "git rebase -fx ./evil HEAD~1",  # a cluster: --force-rebase --exec ./evil
        "git rebase -ix./evil HEAD~1",
    ],
)
def test_no_rule_allows_a_git_option_that_runs_a_program(command: str, workspace: Path) -> None:
    assert decide("git rebase main", "command", workspace, _rebase_allowed()).rule == "allowed.user_rule"
    decision = decide(command, "command", workspace, _rebase_allowed())
    assert (decision.verdict, decision.rule) == ("deny", "git.beyond_rules"), decision.reason
    whitelisted = PolicySettings(extra_allowed=("git",))  # the whole program, by command_whitelist
    assert decide(command, "command", workspace, whitelisted).rule == "git.beyond_rules"
    assert decide("git -c x=y status", "command", workspace, whitelisted).rule == "git.beyond_rules"


def _rebase_allowed() -> PolicySettings:
    return PolicySettings(rules=(_rule(["git", "rebase"], "allow", "user"),))


def test_a_glob_cannot_turn_a_denied_git_option_into_an_ask_or_past_a_rule(tmp_path: Path) -> None:
    """`[-]-exec*` is what the question would show; bash runs `--exec=sh x` (a file of that name)."""
    workspace = tmp_path.resolve()
    (workspace / "--exec=sh x").write_text("")
    plain = decide("git rebase --exec=sh HEAD~1", "command", workspace, PolicySettings())
    assert plain.verdict == "deny"
    globbed = decide("git rebase [-]-exec* HEAD~1", "command", workspace, PolicySettings())
    assert globbed.verdict == "deny", globbed.reason  # was an ask
    ruled = decide("git rebase [-]-exec* HEAD~1", "command", workspace, _rebase_allowed())
    assert ruled.rule == "git.beyond_rules", ruled.reason
    # a glob that expands to something askable still asks (`git add *.py`)
    (workspace / "a.py").write_text("")
    assert decide("git add *.py", "command", workspace, PolicySettings()).verdict == "ask"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        (["git", "difftool"], "git difftool -x ./evil"),
        (["git", "difftool"], "git difftool --extcmd=./evil"),
        (["git", "bisect"], "git bisect run ./evil"),
        (["git", "filter-branch"], "git filter-branch --tree-filter ./evil"),
        (["git", "clone"], "git clone -c core.fsmonitor=./evil https://example.com/x"),
        (["git", "fetch"], "git fetch -qu ./evil origin"),
        (["git", "config"], "git config core.pager ./evil"),
    ],
)
def test_more_git_options_that_run_programs_stay_beyond_rules(
    rule: list[str], command: str, workspace: Path
) -> None:
    settings = PolicySettings(rules=(_rule(rule, "allow", "user"),))
    assert decide(command, "command", workspace, settings).rule == "git.beyond_rules"


def test_an_ask_in_any_directory_a_segment_may_run_in_counts(tmp_path: Path) -> None:
    """After `cd sub | cat` bash is still in the root (a pipeline's subshell): the root's expansion
    of `[-n]*` is `newbranch`, an ask; checking only the last possible directory allowed it."""
    ws = tmp_path.resolve()
    (ws / "sub").mkdir()
    (ws / "newbranch").write_text("")
    (ws / "sub" / "-a").write_text("")
    decision = decide("cd sub | cat; git branch [-n]*", "command", ws, PolicySettings())
    assert decision.verdict == "ask", decision.reason
