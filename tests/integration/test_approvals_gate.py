"""The gate's approval loop: ask means a person decides; nobody to ask means deny; all audited.

A small real tool (it writes a marker file when it runs) stands in for a command the policy answers
with *ask*, so the gate's side is tested apart from which commands ask (tests/e2e/test_lsp_approvals.py
drives real commands through the language server).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tether.core.approvals import ApprovalAnswer, ApprovalNeed, ApprovalRequest, AskedSegment
from tether.core.config import EffectiveConfig
from tether.core.gitcmd import Git
from tether.core.session import FaceOverrides, Session, open_session
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.git_state import IndexWatch, repository_lock, repository_lock_file
from tether.core.tools.inputs import Prepared
from tether.errors import CheckpointError

SPEC = ToolSpec(
    "touch_marker",
    "test tool",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)


class MarkerTool:
    """Needs `command` permission and a person's approval for `git commit NAME`."""

    spec = SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        name = str(args["name"])
        argv = ("git", "commit", "-m", name)

        def run() -> ToolOutcome:
            (ctx.workspace / f"ran-{name}").write_text("x")
            return ToolOutcome(ok=True, result={"ok": True}, text=f"ran {name}")

        def preview() -> ToolOutcome:
            return ToolOutcome(ok=True, result={"ok": True}, text=f"dry run {name}")

        need = ApprovalNeed(
            command=" ".join(argv),
            mode="command",
            rule="ask.git_state",
            reason="changes your repository's history",
            segments=(AskedSegment(argv, "ask.git_state", "changes your repository's history"),),
        )
        decision = {"allowed": False, "verdict": "ask", "rule": "ask.git_state", "reason": need.reason}
        return Prepared("command", True, f"touch_marker({name})", run, preview, decision, need)


class Recorder:
    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        self.asked.append(request)
        return self.answers.pop(0)


def _session(tmp_path: Path, approver: Any = None, permissions: str = "command") -> Session:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return open_session(
        tmp_path,
        FaceOverrides(permissions=permissions),
        config=EffectiveConfig(),
        approver=approver,
        tools=[MarkerTool()],
    )


def test_without_an_approver_ask_is_deny_and_says_how_to_allow(tmp_path: Path) -> None:
    session = _session(tmp_path)
    result = session.gate.call("touch_marker", {"name": "a"})
    assert result.state == "denied"
    assert result.is_error
    assert "needs the user's approval" in result.text
    assert "rule in your user config" in result.text
    assert not (tmp_path / "ran-a").exists()
    assert [e["tool"] for e in session.gate.log()] == ["touch_marker"]


def test_allow_once_runs_it_and_asks_again_next_time(tmp_path: Path) -> None:
    approver = Recorder(ApprovalAnswer("allow_once"), ApprovalAnswer("deny", "not twice"))
    session = _session(tmp_path, approver)
    first = session.gate.call("touch_marker", {"name": "a"}, source="lsp")
    assert first.state == "executed"
    assert first.decision is not None
    assert first.decision["decidedBy"] == "user"
    assert (tmp_path / "ran-a").exists()
    second = session.gate.call("touch_marker", {"name": "b"}, source="lsp")
    assert second.state == "denied"
    assert "The user says: not twice" in second.text
    assert not (tmp_path / "ran-b").exists()
    assert len(approver.asked) == 2
    entries = session.gate.log()
    assert [(e["tool"], e["state"]) for e in entries] == [
        ("approval", "executed"),
        ("touch_marker", "executed"),
        ("approval", "denied"),
        ("touch_marker", "denied"),
    ]
    assert entries[0]["input"]["segments"][0]["argv"] == ["git", "commit", "-m", "a"]
    assert entries[0]["result"]["choice"] == "allow_once"
    assert entries[2]["result"]["message"] == "not twice"
    assert session.gate.verify_log().ok


def test_allow_for_the_session_covers_the_same_subcommand_only(tmp_path: Path) -> None:
    approver = Recorder(ApprovalAnswer("allow_session"))
    session = _session(tmp_path, approver)
    assert session.gate.call("touch_marker", {"name": "a"}).state == "executed"
    assert session.gate.call("touch_marker", {"name": "b"}).state == "executed"  # not asked again
    assert len(approver.asked) == 1
    assert approver.asked[0].patterns == (("git", "commit"),)
    assert session.gate.allowances.covers(["git", "commit", "-m", "c"])
    assert not session.gate.allowances.covers(["git", "push"])


def test_without_the_permission_it_is_a_dry_run_and_nobody_is_asked(tmp_path: Path) -> None:
    approver = Recorder()
    session = _session(tmp_path, approver, permissions="read")
    result = session.gate.call("touch_marker", {"name": "a"})
    assert result.state == "dry_run"
    assert approver.asked == []


@pytest.mark.parametrize("failure", ["raises", "garbage"])
def test_a_broken_approver_is_a_deny(tmp_path: Path, failure: str) -> None:
    def broken(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        if failure == "raises":
            raise RuntimeError("editor went away")
        return ApprovalAnswer("deny", None, "malformed")

    session = _session(tmp_path, broken)
    result = session.gate.call("touch_marker", {"name": "a"})
    assert result.state == "denied"
    assert not (tmp_path / "ran-a").exists()


def test_the_question_carries_the_sandbox_and_the_timeout(tmp_path: Path) -> None:
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = _session(tmp_path, approver)
    session.gate.call("touch_marker", {"name": "a"})
    request = approver.asked[0]
    assert request.sandbox["network"] == "none"
    assert request.sandbox["writable"] == [str(tmp_path.resolve())]
    assert request.timeout == EffectiveConfig().approvals.timeout


# --- "Always allow": a rule in the user config, with its comments kept -----------------------------


def _session_with_user_config(tmp_path: Path, approver: Any, user_config: Path) -> Session:
    workspace = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return open_session(
        workspace,
        FaceOverrides(permissions="command"),
        user_path=user_config,
        approver=approver,
        tools=[MarkerTool()],
    )


def test_always_allow_shows_the_rule_and_file_then_writes_it_keeping_the_users_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    user_config = tmp_path / "config.toml"
    original = '# my settings — keep this comment\n[agent]\nmodel = "claude-x"  # pinned\n'
    user_config.write_text(original, encoding="utf-8")
    approver = Recorder(ApprovalAnswer("allow_always"))
    session = _session_with_user_config(tmp_path, approver, user_config)
    result = session.gate.call("touch_marker", {"name": "a"})
    assert result.state == "executed"
    [asked] = approver.asked
    assert asked.always is not None
    assert asked.always.file == str(user_config)
    assert 'pattern = ["git", "commit"]' in asked.always.toml
    written = user_config.read_text(encoding="utf-8")
    assert written.startswith(original)  # the person's file, byte for byte, then the rule
    assert written[len(original) :].strip() == asked.always.toml.strip()
    approval = next(e for e in session.gate.log() if e["tool"] == "approval")
    assert approval["result"]["rulesWritten"] == ["git commit"]
    assert approval["result"]["rulesFile"] == str(user_config)
    # A new session loads the rule: its example holds, its source is the user config's line.
    again = _session_with_user_config(tmp_path, None, user_config)
    [rule] = again.config.policy.rules
    assert rule.decision == "allow"
    assert str(rule.source) == f"{user_config}:5"
    # Answering "Always allow" again for the same command writes nothing twice.
    _session_with_user_config(tmp_path, Recorder(ApprovalAnswer("allow_always")), user_config).gate.call(
        "touch_marker", {"name": "b"}
    )
    assert user_config.read_text(encoding="utf-8") == written


def test_always_allow_into_a_broken_config_changes_nothing_and_still_allows_this_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    user_config = tmp_path / "config.toml"
    session = _session_with_user_config(tmp_path, Recorder(ApprovalAnswer("allow_always")), user_config)
    broken = "rules = 3\n"
    user_config.write_text(broken, encoding="utf-8")  # broken after the session started
    result = session.gate.call("touch_marker", {"name": "a"})
    assert result.state == "executed"
    assert user_config.read_text(encoding="utf-8") == broken
    approval = next(e for e in session.gate.log() if e["tool"] == "approval")
    assert "not a list" in approval["result"]["rulesError"]


def test_sessions_without_a_user_config_offer_no_rule(tmp_path: Path) -> None:
    approver = Recorder(ApprovalAnswer("allow_always"))
    session = _session(tmp_path, approver)
    assert session.gate.call("touch_marker", {"name": "a"}).state == "executed"
    assert approver.asked[0].always is None
    assert session.gate.call("touch_marker", {"name": "b"}).state == "executed"  # for this session
    assert len(approver.asked) == 1


def test_a_git_commit_always_allowed_runs_like_one_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule "Always allow" writes must work as the approval did: `.git` writable for the commit
    (its hooks and config still read-only), not a commit that fails on a read-only index.lock."""
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    user_config = tmp_path / "config.toml"
    workspace = _repository(tmp_path)

    def run(approver: Any, name: str) -> Any:
        session = open_session(
            workspace, FaceOverrides(permissions="command"), user_path=user_config, approver=approver
        )
        command = f"git commit --allow-empty -q -m {name}"
        return session.gate.call("bash_command", {"command": command})

    approver = Recorder(ApprovalAnswer("allow_always"))
    first = run(approver, "approved")
    assert first.state == "executed", first.text
    assert len(approver.asked) == 1
    second = run(None, "by-the-rule")  # nobody to ask: only the written rule can allow it
    assert second.state == "executed", second.text
    assert second.verdict is not None
    assert second.verdict.rule == "allowed.user_rule"
    assert _head_commits(workspace) == 2


def test_a_user_rule_for_another_program_keeps_git_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git status && make lint` with a rule for `make lint`: git's own rules allow the status, so
    nothing here changes the repository with the person's leave, and `.git` stays read-only."""
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    user_config = tmp_path / "config.toml"
    user_config.write_text('[[rules]]\npattern = ["make", "lint"]\ndecision = "allow"\n', encoding="utf-8")
    workspace = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "Makefile").write_text("lint:\n\ttouch .git/planted\n", encoding="utf-8")
    session = open_session(workspace, FaceOverrides(permissions="command"), user_path=user_config)
    result = session.gate.call("bash_command", {"command": "git status && make lint"})
    assert result.verdict is not None
    assert result.verdict.rule == "allowed.user_rule", result.text
    assert not (workspace / ".git" / "planted").exists()


def _repository(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@t")):
        subprocess.run(["git", "-C", str(workspace), "config", key, value], check=True)
    (workspace / "Makefile").write_text("lint:\n\ttouch .git/planted\n", encoding="utf-8")
    return workspace


def _refused_before_asking(workspace: Path, command: str, rule: str) -> Session:
    """Run `command` with a person ready to allow it once: it must be refused by `rule` unasked."""
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": command})
    assert result.verdict is not None
    assert result.verdict.rule == rule, result.text
    assert approver.asked == []
    return session


def _head_commits(workspace: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(workspace), "rev-list", "--all", "--count"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip() or 0)


@pytest.mark.parametrize(
    "command",
    [
        "make lint && git commit --allow-empty -q -m x",
        "git commit --allow-empty -q -m x; make lint",
        "git commit --allow-empty -q -m x | make lint",
        # read-only in read mode, but they start the toolchain the work tree names
        "cargo --version && git commit --allow-empty -q -m x",
        "python3 --version && git commit --allow-empty -q -m x",
    ],
)
def test_an_asked_git_command_never_shares_a_writable_git_with_another_program(
    tmp_path: Path, command: str
) -> None:
    """Refused before anyone is asked: `make` would run with `.git` writable (objects, refs)."""
    workspace = _repository(tmp_path)
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": command})
    assert result.state == "denied", result.text
    assert result.verdict is not None
    assert result.verdict.rule == "git.state_with_programs"
    assert "separate command" in result.text
    assert approver.asked == []
    assert not (workspace / ".git" / "planted").exists()
    assert _head_commits(workspace) == 0
    # beside read-only commands and cd it runs, once approved
    ok = session.gate.call("bash_command", {"command": "ls && git commit --allow-empty -q -m y"})
    assert ok.state == "executed", ok.text
    assert _head_commits(workspace) == 1


def test_a_git_rule_never_shares_a_writable_git_with_another_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule "Always allow" writes for `git commit` is no way around it either."""
    monkeypatch.setenv("TETHER_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    user_config = tmp_path / "config.toml"
    user_config.write_text('[[rules]]\npattern = ["git", "commit"]\ndecision = "allow"\n', encoding="utf-8")
    workspace = _repository(tmp_path)
    session = open_session(workspace, FaceOverrides(permissions="command"), user_path=user_config)
    result = session.gate.call("bash_command", {"command": "git commit --allow-empty -q -m x; make lint"})
    assert result.state == "denied", result.text
    assert result.verdict is not None
    assert result.verdict.rule == "git.state_with_programs"
    assert not (workspace / ".git" / "planted").exists()
    hooks = session.gate.call(
        "bash_command", {"command": "git -c core.hooksPath=h commit --allow-empty -q -m x"}
    )
    assert hooks.state == "denied"
    assert _head_commits(workspace) == 0


def test_a_glob_beside_an_asked_git_command_is_refused(tmp_path: Path) -> None:
    """`find [-]delete` reads as a harmless pattern; with a file named `-delete` bash runs
    `find -delete`, which would empty `.git` while the commit has it writable."""
    workspace = _repository(tmp_path)
    (workspace / "-delete").write_text("")
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="workspace"), approver=approver)
    command = "find [-]delete; git commit --allow-empty -q -m x"
    result = session.gate.call("bash_command", {"command": command})
    assert result.verdict is not None
    assert result.verdict.rule == "git.state_with_programs", result.text
    assert approver.asked == []
    assert (workspace / ".git" / "HEAD").exists()


def test_git_with_a_writable_git_works_only_on_the_workspaces_repository(tmp_path: Path) -> None:
    """A nested repository (a `.git` file pointing at a gitdir whose config names a diff program)
    or a local path as remote would have git obey a config nobody checked, with `.git` writable."""
    workspace = _repository(tmp_path)
    gitdir = f"--separate-git-dir={workspace / 'gd'}"
    subprocess.run(["git", "init", "-q", gitdir, str(workspace / "sub")], check=True)
    with open(workspace / "gd" / "config", "a", encoding="utf-8") as config:
        config.write("[diff]\n\texternal = \"sh -c 'touch ../.git/planted' --\"\n")
    (workspace / "evil").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(workspace / "evil")], check=True)
    approver = Recorder(*[ApprovalAnswer("allow_once")] * 7)
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    for command, rule in [
        ("git commit --allow-empty -q -m x && git -C sub diff", "git.nested_repository"),
        ("cd sub && git commit --allow-empty -q -m x", "git.nested_repository"),
        ("git -C s* commit --allow-empty -q -m x", "git.nested_repository"),
        ("git push ./evil HEAD:refs/heads/main", "git.local_remote"),
        ("git push evil HEAD:refs/heads/main", "git.local_remote"),
        ("git remote add mine ./evil", "git.local_remote"),
        ("git remote add mine file:evil", "git.local_remote"),
    ]:
        result = session.gate.call("bash_command", {"command": command})
        assert result.verdict is not None
        assert result.verdict.rule == rule, (command, result.text)
    assert approver.asked == []
    assert not (workspace / ".git" / "planted").exists()
    assert _head_commits(workspace) == 0


_LINK_INTO_GIT = """diff --git a/notes.txt b/notes.txt
new file mode 120000
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1 @@
+.git/HEAD
\\ No newline at end of file
"""


@pytest.mark.parametrize(
    "command",
    [
        "git apply fix.patch && git status --short > notes.txt",  # HEAD emptied: no repository left
        "git apply fix.patch && echo ref: refs/heads/evil >> notes.txt",
        "git apply fix.patch &> notes.txt",
        "git checkout -q -b b && cd sub && git status",  # a directory it may have made a link
        "git apply fix.patch && git -C sub status",
    ],
)
def test_nothing_writes_through_a_link_a_git_command_just_made(tmp_path: Path, command: str) -> None:
    """The policy checks paths before the command runs; `git apply` of the agent's patch can turn
    `notes.txt` into a link to `.git/HEAD` (or `sub` into a link to another repository) meanwhile."""
    workspace = _repository(tmp_path)
    (workspace / "sub").mkdir()
    (workspace / "fix.patch").write_text(_LINK_INTO_GIT, encoding="utf-8")
    head = (workspace / ".git" / "HEAD").read_text()
    session = _refused_before_asking(workspace, command, "git.state_redirect")
    assert (workspace / ".git" / "HEAD").read_text() == head
    # output to /dev/null, 2>&1 and a pipe to a read-only command still run
    fine = session.gate.call("bash_command", {"command": "git apply fix.patch 2>&1 | head -3 > /dev/null"})
    assert fine.state == "executed", fine.text
    assert (workspace / "notes.txt").is_symlink()
    assert (workspace / ".git" / "HEAD").read_text() == head


def test_a_directory_named_like_a_branch_is_no_local_remote(tmp_path: Path) -> None:
    """`git push origin docs` with a `docs/` directory: a branch, not a repository on disk."""
    workspace = _repository(tmp_path)
    (workspace / "docs").mkdir()
    approver = Recorder(ApprovalAnswer("deny"), ApprovalAnswer("deny"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    for command in ("git push origin docs", "git fetch origin docs"):
        result = session.gate.call("bash_command", {"command": command})
        assert result.verdict is not None
        assert result.verdict.rule == "ask.git_state", result.text
    assert len(approver.asked) == 2


def _new_file_patch(name: str) -> str:
    header = f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
    return header + "@@ -0,0 +1 @@\n+x\n"


_OLD_IS_GIT = (
    "diff --git a/old b/old\nnew file mode 120000\n--- /dev/null\n+++ b/old\n"
    "@@ -0,0 +1 @@\n+.git\n\\ No newline at end of file\n"
)


@pytest.mark.parametrize(
    "command",
    [
        "git apply --cached track.patch && git apply swap.patch && git rm -r -f -q old",
        "git apply swap.patch && git worktree add -q --detach old/commondir",
        "git apply swap.patch && git clean -fdq old",
    ],
)
def test_no_git_command_follows_a_link_an_earlier_one_just_made(tmp_path: Path, command: str) -> None:
    """`git rm` unlinks the index's `old/HEAD` through `old -> .git` (made by the second patch);
    `git worktree add` creates `.git/commondir` as a directory. git's checkout checks for links on
    the way, these do not: after a work-tree writer they are refused."""
    workspace = _repository(tmp_path)
    (workspace / "track.patch").write_text(_new_file_patch("old/HEAD") + _new_file_patch("old/index"))
    (workspace / "swap.patch").write_text(_OLD_IS_GIT)
    _refused_before_asking(workspace, command, "git.state_redirect")
    assert (workspace / ".git" / "HEAD").is_file()
    assert not (workspace / ".git" / "commondir").exists()


def test_a_linked_worktree_is_refused_before_asking_not_after(tmp_path: Path) -> None:
    """Its `.git` is a file and its repository outside the workspace: the commit could only fail."""
    main = _repository(tmp_path / "main")
    subprocess.run(["git", "-C", str(main), "commit", "--allow-empty", "-q", "-m", "init"], check=True)
    worktree = tmp_path / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", "-b", "feat", str(worktree)], check=True)
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(worktree, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": "git commit --allow-empty -q -m x"})
    assert result.verdict is not None
    assert result.verdict.rule == "git.linked_worktree", result.text
    assert "in a terminal" in result.text
    assert approver.asked == []


@pytest.mark.parametrize("link", [".git", "/proc/self/cwd/.git", "/proc/thread-self/cwd/.git", "loop"])
@pytest.mark.parametrize("command", ["git rm -r -f -q .", "git commit --allow-empty -q -m x"])
def test_no_writable_git_while_a_link_stands_on_an_index_path(
    tmp_path: Path, command: str, link: str
) -> None:
    """Across calls: earlier ones left the index holding `old/HEAD` and the work tree `old -> .git`
    (each step plausible on its own); `git rm -rf .` would then unlink `.git/HEAD` through the link.
    `/proc/self/cwd` is the work tree's top for git (it changes there) whatever it is for Tether,
    whose working directory need not be the workspace."""
    workspace = _repository(tmp_path)
    (workspace / "track.patch").write_text(_new_file_patch("old/HEAD") + _new_file_patch("old/index"))
    subprocess.run(["git", "-C", str(workspace), "apply", "--cached", "track.patch"], check=True)
    (workspace / "old").symlink_to(link if link != "loop" else "old")
    _refused_before_asking(workspace, command, "git.link_in_index_path")
    assert (workspace / ".git" / "HEAD").is_file()
    (workspace / "old").unlink()  # the link gone, the same command asks again
    approver = Recorder(ApprovalAnswer("deny"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    session.gate.call("bash_command", {"command": command})
    assert len(approver.asked) == 1


def test_the_work_tree_is_checked_again_after_the_question(tmp_path: Path) -> None:
    """While the person reads the question another call (a script in workspace mode) turns `old`
    into a link to `.git`; the approved `git rm -rf old` would unlink `.git/HEAD` through it."""
    workspace = _repository(tmp_path)
    (workspace / "track.patch").write_text(_new_file_patch("old/HEAD") + _new_file_patch("old/index"))
    subprocess.run(["git", "-C", str(workspace), "apply", "--cached", "track.patch"], check=True)
    (workspace / "old").mkdir()

    def swap_then_allow(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        (workspace / "old").rmdir()
        (workspace / "old").symlink_to(".git")
        return ApprovalAnswer("allow_once")

    session = open_session(workspace, FaceOverrides(permissions="command"), approver=swap_then_allow)
    result = session.gate.call("bash_command", {"command": "git rm -r -f -q old"})
    assert not result.ok
    assert "changed since the question" in result.text
    assert (workspace / ".git" / "HEAD").is_file()


def test_a_tracked_directory_replaced_by_a_link_elsewhere_is_no_setup(tmp_path: Path) -> None:
    """`vendor/` tracked, then replaced by a link to `shared/` by the person: git still asks."""
    workspace = _repository(tmp_path)
    (workspace / "vendor").mkdir()
    (workspace / "vendor" / "x.txt").write_text("x\n")
    subprocess.run(["git", "-C", str(workspace), "add", "vendor"], check=True)
    (workspace / "vendor" / "x.txt").rename(workspace / "x.txt")
    (workspace / "vendor").rmdir()
    (workspace / "shared").mkdir()
    (workspace / "vendor").symlink_to("shared")
    approver = Recorder(ApprovalAnswer("deny"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": "git rm -r --cached -q vendor"})
    assert result.verdict is not None
    assert result.verdict.rule == "ask.git_state", result.text
    assert len(approver.asked) == 1


def _hold_run_lock(workspace: Path, how: int) -> int:
    """The repository's run lock, held as another Tether process would: its own open file."""
    fd = os.open(repository_lock_file(workspace / ".git"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, how)
    return fd


def _waits_for(lock: int, call: Callable[[], Any]) -> Any:
    """`call`, on a thread, is still waiting while `lock` is held and finishes once it is let go."""
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(call()))
    worker.start()
    worker.join(timeout=1.5)
    assert worker.is_alive()
    os.close(lock)
    worker.join(timeout=60)
    return results[0]


def test_a_writable_git_waits_for_commands_of_other_processes_and_subfolders(tmp_path: Path) -> None:
    """The lock is per repository, taken by every Tether process and by sessions on subfolders
    (ACP opens one per cwd): a second server's script cannot swap a checked directory for a link
    into `.git` while the approved command runs."""
    workspace = _repository(tmp_path)
    (workspace / "sub").mkdir()
    never = threading.Event()
    with repository_lock(workspace / "sub", alone=False, cancel=never) as held:  # another session
        assert held
        with pytest.raises(BlockingIOError):
            os.close(_hold_run_lock(workspace, fcntl.LOCK_EX | fcntl.LOCK_NB))
    assert not (workspace / ".git" / "tether").exists()  # nothing written into the repository
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    other = _hold_run_lock(workspace, fcntl.LOCK_SH)  # a command of another Tether process runs
    commit = lambda: session.gate.call("bash_command", {"command": "git commit --allow-empty -q -m x"})  # noqa: E731
    result = _waits_for(other, commit)  # asked and approved, but waiting for the other command
    assert result.state == "executed", result.text
    assert _head_commits(workspace) == 1


def test_a_git_planted_in_a_subfolder_does_not_move_its_session_off_the_lock(tmp_path: Path) -> None:
    """`sub/.git` made by a script: a session on `sub` still waits for the root's writable `.git`."""
    workspace = _repository(tmp_path)
    (workspace / "sub" / ".git").mkdir(parents=True)
    root_lock = _hold_run_lock(workspace, fcntl.LOCK_EX)  # an approved command with .git writable
    session = open_session(workspace / "sub", FaceOverrides(permissions="command"))
    result = _waits_for(root_lock, lambda: session.gate.call("bash_command", {"command": "ls"}))
    assert result.state == "executed", result.text


def test_a_rollback_waits_for_a_command_with_a_writable_git(tmp_path: Path) -> None:
    """A rollback may put a link back (a checkpointed `old -> .git`): not while such a command runs."""
    workspace = _repository(tmp_path)
    session = open_session(workspace, FaceOverrides(permissions="command,write"))
    assert session.gate.call("write_file", {"path": "a.txt", "content": "new\n"}).state == "executed"
    root_lock = _hold_run_lock(workspace, fcntl.LOCK_EX)
    result = _waits_for(root_lock, lambda: session.gate.rollback(steps=1))
    assert result.ok, result.text
    assert not (workspace / "a.txt").exists()


def test_git_operation_add_waits_for_a_command_with_a_writable_git(tmp_path: Path) -> None:
    """The structured git tool writes the index too: while an approved command has `.git` writable
    (and will put back the index it saved if it fails), an add would race it or be undone by it."""
    workspace = _repository(tmp_path)
    (workspace / "a.txt").write_text("a\n")
    session = open_session(workspace, FaceOverrides(permissions="command,write"))
    root_lock = _hold_run_lock(workspace, fcntl.LOCK_EX)  # another process's approved `git commit`
    add = lambda: session.gate.call("git_operation", {"operation": "add", "args": ["a.txt"]})  # noqa: E731
    result = _waits_for(root_lock, add)
    assert result.state == "executed", result.text
    staged = subprocess.run(
        ["git", "-C", str(workspace), "diff", "--cached", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert staged.stdout.split() == ["a.txt"]
    # reading never waits: status runs while the lock is held
    root_lock = _hold_run_lock(workspace, fcntl.LOCK_EX)
    try:
        status = session.gate.call("git_operation", {"operation": "status", "args": ["--short"]})
        assert status.state == "executed", status.text
    finally:
        os.close(root_lock)


def test_no_untracked_repository_can_become_a_submodule(tmp_path: Path) -> None:
    """An approved `git add .` records an agent-made repository as a submodule (git only warns);
    the user's `git status` then looks into it and runs the `core.fsmonitor` its config names —
    outside the sandbox. Refused before anyone is asked while such a repository lies untracked."""
    workspace = _repository(tmp_path)
    _planted_repository(workspace / "vendor" / "sub", workspace / ".git" / "planted")
    (workspace / "notes.txt").write_text("n\n")
    _refused_before_asking(workspace, "git add .", "git.untracked_repository")
    _refused_before_asking(workspace, "git add notes.txt && git commit -q -m x", "git.untracked_repository")
    index = subprocess.run(
        ["git", "-C", str(workspace), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    assert not _gitlinks(index.stdout), index.stdout
    # a commit records no new path: it still runs, with the person's leave
    approver = Recorder(ApprovalAnswer("allow_once"), ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    ok = session.gate.call("bash_command", {"command": "git commit --allow-empty -q -m y"})
    assert ok.state == "executed", ok.text
    # ignored, it is out of `git add .`'s reach, but not of `git add -f`
    (workspace / ".gitignore").write_text("vendor/\n")
    _refused_before_asking(workspace, "git add -f vendor/sub", "git.untracked_repository")
    added = session.gate.call("bash_command", {"command": "git add notes.txt .gitignore"})
    assert added.state == "executed", added.text
    assert not (workspace / ".git" / "planted").exists()


def test_git_operation_add_never_records_an_untracked_repository(tmp_path: Path) -> None:
    """The structured git tool runs git outside the sandbox: `add evil` (or `-A`) recorded an
    agent-made repository as a submodule, and the user's `git status` then ran its fsmonitor.
    Refused like the bash tool's git, while such a repository lies untracked; `add -u` adds no path."""
    workspace = _repository(tmp_path)
    marker = workspace / ".git" / "planted"
    _planted_repository(workspace / "evil", marker)
    (workspace / "notes.txt").write_text("n\n")
    session = open_session(workspace, FaceOverrides(permissions="command,write"))
    for args in (["evil"], ["-A"], ["notes.txt"]):
        result = session.gate.call("git_operation", {"operation": "add", "args": args})
        assert not result.ok, (args, result.text)
        assert "git.untracked_repository" in result.text, result.text
    index = subprocess.run(
        ["git", "-C", str(workspace), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    assert not _gitlinks(index.stdout), index.stdout
    assert session.gate.call("git_operation", {"operation": "add", "args": ["-u"]}).ok
    subprocess.run(["git", "-C", str(workspace), "status", "-s"], capture_output=True, check=True)
    assert not marker.exists()  # the user's own git never ran the planted program
    shutil.rmtree(workspace / "evil")
    added = session.gate.call("git_operation", {"operation": "add", "args": ["notes.txt"]})
    assert added.ok, added.text
    # `add -u` stages tracked paths only — but a tracked file replaced by a repository is recorded
    # as a submodule: taken out of the index again, and said
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "-m", "notes"], check=True)
    (workspace / "notes.txt").unlink()
    _planted_repository(workspace / "notes.txt", marker)
    update = session.gate.call("git_operation", {"operation": "add", "args": ["-u"]})
    assert not update.ok, update.text
    assert "git.untracked_repository" in update.text, update.text
    index = subprocess.run(
        ["git", "-C", str(workspace), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    assert not _gitlinks(index.stdout), index.stdout
    assert index.stdout.startswith("100644 "), index.stdout  # the file's entry is back, not deleted


def test_git_operation_add_in_a_linked_worktree_records_no_submodule(tmp_path: Path) -> None:
    """A linked worktree keeps its own index in the main repository's `.git/worktrees/`: the look
    for new submodule entries reads that one."""
    main = _repository(tmp_path)
    (main / "evil").write_text("e\n")
    subprocess.run(["git", "-C", str(main), "add", "evil"], check=True)
    subprocess.run(["git", "-C", str(main), "commit", "-q", "-m", "evil"], check=True)
    worktree = tmp_path / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(worktree)], check=True)
    (worktree / "evil").unlink()
    _planted_repository(worktree / "evil", tmp_path / "planted")
    session = open_session(worktree, FaceOverrides(permissions="command,write"))
    update = session.gate.call("git_operation", {"operation": "add", "args": ["-u"]})
    assert not update.ok, update.text
    index = subprocess.run(
        ["git", "-C", str(worktree), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    assert not _gitlinks(index.stdout), index.stdout
    shutil.rmtree(worktree / "evil")  # no repository left: a plain add works in a worktree too
    (worktree / "notes.txt").write_text("n\n")
    added = session.gate.call("git_operation", {"operation": "add", "args": ["notes.txt"]})
    assert added.ok, added.text


def test_the_repositories_to_protect_are_looked_for_after_the_question(tmp_path: Path) -> None:
    """While the person thinks, another command (or anything) may make a repository — or unhide
    one: the look that pins other repositories' `.git` runs again when the command starts."""
    workspace = _repository(tmp_path)
    (workspace / "plant.py").write_text(
        "try:\n"
        "    with open('late/x/y/.git/config', 'a') as f:\n"
        "        f.write('[core]\\n\\tfsmonitor = x\\n')\n"
        "    print('wrote')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    user_config = tmp_path / "user.toml"
    user_config.write_text('[[rules]]\npattern = ["python3", "plant.py"]\ndecision = "ask"\n')

    def approve_while_a_repository_appears(
        request: ApprovalRequest, cancel: threading.Event
    ) -> ApprovalAnswer:
        _planted_repository(workspace / "late" / "x" / "y", workspace / ".git" / "planted")
        return ApprovalAnswer("allow_once")

    session = open_session(
        workspace,
        FaceOverrides(permissions="command"),
        approver=approve_while_a_repository_appears,
        user_path=user_config,
    )
    result = session.gate.call("bash_command", {"command": "python3 plant.py"})
    assert result.state == "executed", result.text
    assert "refused" in result.result["stdout"], result.result["stdout"]


def test_git_operation_reads_the_paths_it_was_given_literally(tmp_path: Path) -> None:
    """The policy checks each path by name; git would read `*.env` as a pattern and stage the secret
    `.env` (the policy refuses `.env` itself), or `:(top)x` as a path from the repository's top."""
    workspace = _repository(tmp_path)
    (workspace / ".env").write_text("TOKEN=s\n")
    (workspace / "a.txt").write_text("a\n")
    session = open_session(workspace, FaceOverrides(permissions="write"))
    for args in (["*.env"], ["*.txt"], [":(top)a.txt"]):
        result = session.gate.call("git_operation", {"operation": "add", "args": args})
        assert not result.ok, (args, result.text)
    index = subprocess.run(
        ["git", "-C", str(workspace), "ls-files"], capture_output=True, text=True, check=True
    )
    assert index.stdout == ""
    assert session.gate.call("git_operation", {"operation": "add", "args": ["a.txt"]}).ok


def _gitlinks(ls_files_stage: str) -> list[str]:
    """The submodule entries (mode 160000) of `git ls-files --stage`, read by field, not by substring:
    a substring could turn up inside an object id."""
    return [line for line in ls_files_stage.splitlines() if line.split(" ", 1)[0] == "160000"]


def _planted_repository(path: Path, marker: Path) -> str:
    """An agent-made repository whose config runs a program from the user's `git status`; its HEAD."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "s",
        ],
        check=True,
    )
    with open(path / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return head.stdout.strip()


def _gitlinks_in_index(workspace: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(workspace), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    return [line.split("\t")[1] for line in listed.stdout.splitlines() if line.startswith("160000")]


def test_no_approved_git_command_leaves_a_new_submodule_in_the_index(tmp_path: Path) -> None:
    """Whatever way in — `apply --cached` of a "Subproject commit" patch for an ignored repository,
    re-adding everything after a repository appeared at a tracked directory — the entry is taken out
    of the index after the run, and the user's `git status` never looks into the repository."""
    workspace = _repository(tmp_path)
    marker = tmp_path / "ran"
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "mod.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(workspace), "add", ".gitignore", "pkg/mod.py"], check=True)
    head = _planted_repository(workspace / "build" / "evil", marker)
    (workspace / "sub.patch").write_text(
        f"diff --git a/build/evil b/build/evil\nnew file mode 160000\nindex 0000000..{head[:7]}\n"
        f"--- /dev/null\n+++ b/build/evil\n@@ -0,0 +1 @@\n+Subproject commit {head}\n"
    )
    _planted_repository(workspace / "pkg", marker)  # a repository where tracked files are
    approver = Recorder(*[ApprovalAnswer("allow_once")] * 2)
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    for command in ("git apply --cached sub.patch", "git rm -r -q --cached . && git add ."):
        result = session.gate.call("bash_command", {"command": command})
        assert result.state == "executed", (command, result.text)
        assert any("submodule entries" in w for w in result.warnings), (command, result.warnings)
        assert _gitlinks_in_index(workspace) == [], command
    subprocess.run(["git", "-C", str(workspace), "status", "--short"], capture_output=True, check=True)
    assert not marker.exists()


def test_forcing_git_add_counts_ignored_repositories_in_any_spelling(tmp_path: Path) -> None:
    workspace = _repository(tmp_path)
    (workspace / ".gitignore").write_text("build/\n")
    _planted_repository(workspace / "build" / "evil", tmp_path / "ran")
    for command in ("git add -Af", "git add -fA build", "git add --forc build/evil", "git add --force=1 ."):
        _refused_before_asking(workspace, command, "git.untracked_repository")


def test_placeholders_taken_by_git_add_force_leave_the_index(tmp_path: Path) -> None:
    """The sandbox's placeholders are ignored inside it, but `git add -f` takes ignored files."""
    workspace = _repository(tmp_path)
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": "git add -A -f"})
    assert result.state == "executed", result.text
    tracked = subprocess.run(
        ["git", "-C", str(workspace), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "Makefile" in tracked
    assert not {".envrc", ".vscode", "node_modules", ".gitmodules"} & set(tracked), tracked
    assert any("placeholders" in w for w in result.warnings), result.warnings


def _add_gitlink(workspace: Path, path: str) -> None:
    """What `git add` of a repository or `apply --cached` of a "Subproject commit" patch leaves."""
    entry = f"160000 {'a' * 40} 0\t{path}\0".encode()
    subprocess.run(
        ["git", "-C", str(workspace), "update-index", "-z", "--index-info"], input=entry, check=True
    )


def test_the_index_watch_clears_a_stale_lock_and_git_redirects(tmp_path: Path) -> None:
    """A git the timeout killed leaves `index.lock`; a command may leave `.git/commondir`."""
    workspace = _repository(tmp_path)
    watch = IndexWatch(workspace, ())
    _planted_repository(workspace / "build" / "evil", tmp_path / "ran")
    _add_gitlink(workspace, "build/evil")
    (workspace / ".git" / "index.lock").write_bytes(b"")
    (workspace / ".git" / "commondir").write_text("../evilcommon\n")
    notes = watch.undo()
    watch.discard()
    assert _gitlinks_in_index(workspace) == []
    assert not (workspace / ".git" / "index.lock").exists()
    assert not (workspace / ".git" / "commondir").exists()
    assert sum("Tether removed" in n for n in notes) == 2


def test_the_index_watch_puts_the_old_index_back_when_it_cannot_undo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = _repository(tmp_path)
    subprocess.run(["git", "-C", str(workspace), "add", "Makefile"], check=True)
    watch = IndexWatch(workspace, ())
    _planted_repository(workspace / "build" / "evil", tmp_path / "ran")
    _add_gitlink(workspace, "build/evil")
    run = Git.run

    def failing(git: Git, *args: str, **kwargs: Any) -> Any:
        if args[0] == "update-index":
            raise CheckpointError("git update-index failed (exit 128): simulated")
        return run(git, *args, **kwargs)

    monkeypatch.setattr(Git, "run", failing)
    notes = watch.undo()
    watch.discard()
    assert _gitlinks_in_index(workspace) == []
    assert "put back the index" in notes[-1]
    tracked = subprocess.run(
        ["git", "-C", str(workspace), "ls-files"], capture_output=True, text=True, check=True
    )
    assert tracked.stdout.split() == ["Makefile"]


def test_a_branch_holding_a_submodule_keeps_it_in_the_index(tmp_path: Path) -> None:
    """Checking out a branch that has a submodule leaves its directory empty: nothing of the
    agent's to obey, so the entry stays (and the sandbox keeps that directory read-only after)."""
    workspace = _repository(tmp_path)
    watch = IndexWatch(workspace, ())
    _add_gitlink(workspace, "lib")
    (workspace / "lib").mkdir()
    notes = watch.undo()
    watch.discard()
    assert _gitlinks_in_index(workspace) == ["lib"]
    assert notes == []


def test_a_commit_recording_a_planted_repository_is_moved_off_the_branch(tmp_path: Path) -> None:
    """`git apply --cached sub.patch && git commit` put the gitlink into HEAD before the index was
    cleaned: the user's `git restore --staged` (git's own hint) would bring it back, and their
    `git status` then runs the planted program. The branch goes back; the commit stays reachable."""
    workspace = _repository(tmp_path)
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    base = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    marker = tmp_path / "ran"
    (workspace / ".gitignore").write_text("build/\n")
    head = _planted_repository(workspace / "build" / "evil", marker)
    (workspace / "sub.patch").write_text(
        f"diff --git a/build/evil b/build/evil\nnew file mode 160000\nindex 0000000..{head[:7]}\n"
        f"--- /dev/null\n+++ b/build/evil\n@@ -0,0 +1 @@\n+Subproject commit {head}\n"
    )
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call(
        "bash_command", {"command": "git apply --cached sub.patch && git commit -q -m fix"}
    )
    assert result.state == "executed", result.text
    assert any("moved `refs/heads/" in w for w in result.warnings), result.warnings
    now = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    assert now.stdout.strip() == base
    for hint in (["restore", "--staged", "."], ["status", "--short"]):
        subprocess.run(["git", "-C", str(workspace), *hint], capture_output=True, check=False)
    assert not marker.exists()


@pytest.mark.parametrize(
    "command",
    [
        "git submodule update --init",
        "git submodule add https://example.com/lib.git lib",
        "git submodule sync",
        "git -C submodule submodule update",
    ],
)
def test_submodule_setup_is_refused_with_the_way_out(tmp_path: Path, command: str) -> None:
    """They write `.git/config` and `.git/modules`, read-only even for an approved git: asking would
    only end in a read-only-file error."""
    workspace = _repository(tmp_path)
    (workspace / "submodule").mkdir()
    _refused_before_asking(workspace, command, "git.submodule_setup")


def test_a_tracked_file_staged_as_a_submodule_comes_back_as_the_file(tmp_path: Path) -> None:
    """An approved `git add -u` after the agent replaced a tracked file by a repository: the entry
    goes back as the last commit has it — the file — not removed (a deletion staged in its place)."""
    workspace = _repository(tmp_path)
    (workspace / "evil").write_text("e\n")
    subprocess.run(["git", "-C", str(workspace), "add", "evil"], check=True)
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "-m", "evil"], check=True)
    (workspace / "evil").unlink()
    _planted_repository(workspace / "evil", workspace / ".git" / "planted")
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": "git add -u"})
    assert result.state == "executed", result.text
    assert any("took the new submodule" in w for w in result.warnings), result.warnings
    index = subprocess.run(
        ["git", "-C", str(workspace), "ls-files", "--stage"], capture_output=True, text=True, check=True
    )
    assert index.stdout.startswith("100644 "), index.stdout
    assert index.stdout.endswith("\tevil\n"), index.stdout


def _gitlink_patch(path: str, head: str, *, reverse: bool = False) -> str:
    mode, old, new, line = (
        ("deleted file mode", f"b/{path}", "/dev/null", "-")
        if reverse
        else ("new file mode", "/dev/null", f"b/{path}", "+")
    )
    return (
        f"diff --git a/{path} b/{path}\n{mode} 160000\nindex 0000000..{head[:7]}\n"
        f"--- {old}\n+++ {new}\n@@ -0,0 +1 @@\n{line}Subproject commit {head}\n"
    )


@pytest.mark.parametrize(
    ("planted", "command"),
    [
        # added in one commit, removed in the next: the tip shows nothing; `git reset HEAD~1` brings it back
        (
            True,
            "git apply --cached sub.patch && git commit -q -m fix && git apply --cached -R sub.patch "
            "&& git commit -q -m tidy",
        ),
        # no repository there yet: the next command could make one, and only the commit holds the path
        (False, "git apply --cached sub.patch && git commit -q -m fix && git apply --cached -R sub.patch"),
    ],
)
def test_every_commit_the_command_made_is_checked_for_a_new_submodule(
    tmp_path: Path, planted: bool, command: str
) -> None:
    workspace = _repository(tmp_path)
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    base = _rev(workspace, "HEAD")
    (workspace / ".gitignore").write_text("build/\n")
    head = "b" * 40
    if planted:
        head = _planted_repository(workspace / "build" / "evil", tmp_path / "ran")
    (workspace / "sub.patch").write_text(_gitlink_patch("build/evil", head))
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": command})
    assert result.state == "executed", result.text
    assert _rev(workspace, "HEAD") == base, result.warnings


def test_merging_a_branch_that_has_a_submodule_keeps_the_merge(tmp_path: Path) -> None:
    """The submodule came with the branch (it was in the repository before): not the command's."""
    workspace = _repository(tmp_path)
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    branch = _rev(workspace, "HEAD")
    subprocess.run(["git", "-C", str(workspace), "checkout", "-q", "-b", "feat"], check=True)
    _add_gitlink(workspace, "lib")
    subprocess.run(["git", "-C", str(workspace), "commit", "-q", "-m", "lib"], check=True)
    subprocess.run(["git", "-C", str(workspace), "checkout", "-q", branch], check=True)
    subprocess.run(["git", "-C", str(workspace), "checkout", "-q", "-b", "main2"], check=True)
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call("bash_command", {"command": "git merge -q --no-ff feat -m merged"})
    assert result.state == "executed", result.text
    assert _rev(workspace, "HEAD") != branch
    assert not any("moved" in w for w in result.warnings), result.warnings


def _rev(workspace: Path, rev: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", rev], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_a_commit_dated_in_the_past_is_checked_too(tmp_path: Path) -> None:
    """`git am --committer-date-is-author-date` takes the committer date from the agent's patch:
    what the command made is told by what no ref reached before, not by dates."""
    workspace = _repository(tmp_path)
    git = ["git", "-C", str(workspace)]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    base = _rev(workspace, "HEAD")
    (workspace / ".gitignore").write_text("build/\n")
    _planted_repository(workspace / "build" / "evil", tmp_path / "ran")
    old = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2001-01-01T00:00:00",
        "GIT_COMMITTER_DATE": "2001-01-01T00:00:00",
    }
    subprocess.run([*git, "checkout", "-q", "-b", "side"], check=True)
    _add_gitlink(workspace, "build/evil")
    subprocess.run([*git, "commit", "-q", "-m", "old"], check=True, env=old)
    mbox = subprocess.run([*git, "format-patch", "-1", "--stdout"], capture_output=True, check=True).stdout
    (workspace / "evil.mbox").write_bytes(mbox)
    subprocess.run([*git, "checkout", "-q", "-"], check=True)
    subprocess.run([*git, "branch", "-q", "-D", "side"], check=True)
    subprocess.run([*git, "rm", "-q", "--cached", "build/evil"], check=False)
    approver = Recorder(ApprovalAnswer("allow_once"))
    session = open_session(workspace, FaceOverrides(permissions="command"), approver=approver)
    result = session.gate.call(
        "bash_command", {"command": "git am -q --committer-date-is-author-date evil.mbox"}
    )
    assert result.state == "executed", result.text
    assert _rev(workspace, "HEAD") == base, result.warnings
