"""The question and the answer of an approval: the four choices exactly, anything else is deny."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tether.cli._approver import ask_on, terminal_approver
from tether.core.approvals import (
    TITLES,
    AlwaysRule,
    ApprovalRequest,
    AskedSegment,
    SessionAllowances,
    choice_for_title,
    parse_answer,
    session_pattern,
)


def _request(**extra: Any) -> ApprovalRequest:
    fields: dict[str, Any] = {
        "id": "ap-1",
        "tool": "bash_command",
        "command": "make lint && git commit -m wip",
        "mode": "command",
        "rule": "ask.git_state",
        "reason": "changes your repository's history",
        "segments": (AskedSegment(("git", "commit", "-m", "wip"), "ask.git_state", "changes history"),),
        "sandbox": {"backend": "bubblewrap", "network": "none"},
        "patterns": (("git", "commit"),),
    }
    fields.update(extra)
    return ApprovalRequest(**fields)


def test_the_action_titles_are_exactly_the_documented_four() -> None:
    assert list(TITLES.values()) == ["Allow once", "Allow for this session", "Always allow", "Deny"]


@pytest.mark.parametrize(
    ("raw", "choice"),
    [
        ({"choice": "allow_once"}, "allow_once"),
        ({"choice": "allow_session", "message": "ok"}, "allow_session"),
        ({"choice": "allow_always"}, "allow_always"),
        ({"choice": "deny", "message": "  use make test instead  "}, "deny"),
        ({"choice": "ALLOW_ONCE"}, "deny"),
        ({"choice": "allow"}, "deny"),
        ({"choice": None}, "deny"),
        ({}, "deny"),
        (None, "deny"),
        ("allow_once", "deny"),
        (["allow_once"], "deny"),
        ({"choice": "allow_once\u0000"}, "deny"),
    ],
)
def test_anything_but_one_of_the_four_choices_is_deny(raw: Any, choice: str) -> None:
    assert parse_answer(raw).choice == choice


def test_a_deny_message_is_kept_trimmed_and_bounded() -> None:
    assert parse_answer({"choice": "deny", "message": "  use make test  "}).message == "use make test"
    assert parse_answer({"choice": "deny", "message": 42}).message is None
    assert len(parse_answer({"choice": "deny", "message": "x" * 10_000}).message or "") == 4000


@pytest.mark.parametrize(
    ("title", "choice"),
    [("Allow once", "allow_once"), ("Always allow", "allow_always"), ("allow once", "deny"), (None, "deny")],
)
def test_message_request_titles_map_back_exactly(title: Any, choice: str) -> None:
    assert choice_for_title(title).choice == choice


def test_session_allowances_match_argument_prefixes_only() -> None:
    allowances = SessionAllowances()
    allowances.add([("git", "commit")])
    assert allowances.covers(["git", "commit", "-m", "x"])
    assert not allowances.covers(["git", "commitx"])
    assert not allowances.covers(["git"])
    assert not allowances.covers(["git", "push"])
    allowances.add([()])  # an empty pattern would allow everything: ignored
    assert not allowances.covers(["rm", "-rf", "x"])


def test_the_request_says_what_needs_approval_and_what_always_writes() -> None:
    request = _request(
        always=AlwaysRule("/home/u/.config/tether/config.toml", "[[rules]]\n", (("git", "commit"),))
    )
    text = request.text()
    assert "git commit -m wip" in text
    assert "ask.git_state" in text
    assert "bubblewrap" in text
    assert "/home/u/.config/tether/config.toml" in text
    params = request.to_json()
    assert params["segments"] == [
        {"argv": ["git", "commit", "-m", "wip"], "rule": "ask.git_state", "reason": "changes history"}
    ]
    assert params["always"] == {"file": "/home/u/.config/tether/config.toml", "toml": "[[rules]]\n"}


@pytest.mark.parametrize(
    ("typed", "choice", "message"),
    [
        ("o\n", "allow_once", None),
        ("session\n", "allow_session", None),
        ("a\n", "allow_always", None),
        ("d\nplease run make test\n", "deny", "please run make test"),
        ("\n", "deny", None),
        ("yes\n", "deny", None),
        ("", "deny", None),
    ],
)
def test_the_terminal_prompt(typed: str, choice: str, message: str | None) -> None:
    out = io.StringIO()
    answer = ask_on(io.StringIO(typed), out, _request())
    assert (answer.choice, answer.message) == (choice, message)
    assert "Allow once" in out.getvalue()


def test_no_terminal_means_no_approver() -> None:
    assert terminal_approver(io.StringIO("o\n"), io.StringIO()) is None


def test_await_answer_fails_closed_and_says_why() -> None:
    """The one wait every face uses (LSP, ACP): answer, cancel, timeout, error."""
    import concurrent.futures

    from tether.core.approvals import ApprovalAnswer, await_answer

    withdrawn: list[str] = []

    def wait(future: concurrent.futures.Future[object], *, cancelled: bool = False, timeout: float = 5):
        return await_answer(
            future,
            timeout=timeout,
            cancelled=lambda: cancelled,
            parse=lambda raw: ApprovalAnswer("allow_once") if raw == "yes" else ApprovalAnswer("deny"),
            withdraw=lambda: withdrawn.append("x"),
            who="the editor",
        )

    answered: concurrent.futures.Future[object] = concurrent.futures.Future()
    answered.set_result("yes")
    assert wait(answered).choice == "allow_once"
    assert withdrawn == []

    pending: concurrent.futures.Future[object] = concurrent.futures.Future()
    late = wait(pending, timeout=0.2)
    assert late.choice == "deny"
    assert "no answer within 0.2 s" in late.reason
    assert wait(pending, cancelled=True).reason.startswith("the call was cancelled")
    assert withdrawn == ["x", "x"]

    broken: concurrent.futures.Future[object] = concurrent.futures.Future()
    broken.set_exception(RuntimeError("boom"))
    failed = wait(broken)
    assert failed.choice == "deny"
    assert "the editor answered with an error (boom)" in failed.reason


@pytest.mark.parametrize(
    "argv",
    [
        ("git", "-C", "sub", "commit", "-m", "x"),
        ("git", "--no-pager", "commit"),
        ("git", "commit", "-m", "x"),
    ],
)
def test_one_approved_git_command_stands_for_its_subcommand_not_for_git(argv: tuple[str, ...]) -> None:
    """`git -C sub commit` allowed "always" wrote the rule `git` (every git command) before."""
    from tether.core.policy.ruleset import command_argvs, example_failures, rule_for_segment

    assert session_pattern(argv) == ("git", "commit")
    rule = rule_for_segment(argv, "approved")
    assert rule.pattern == ("git", "commit")
    assert example_failures(rule, command_argvs) == []  # the rule loads again
    allowances = SessionAllowances()
    allowances.add([session_pattern(argv)])
    assert allowances.covers(("git", "-C", "other", "commit", "-m", "y"))
    assert allowances.covers(("git", "commit"))
    assert not allowances.covers(("git", "-C", "sub", "push"))
    assert not allowances.covers(("git", "-c", "core.hooksPath=h", "commit"))


def test_an_approved_module_install_stands_for_the_install_not_for_python() -> None:
    """ "Always allow" on `python3 -m pip install requests` wrote the rule `python3` before."""
    from tether.core.policy.ruleset import command_argvs, example_failures, rule_for_segment

    argv = ("python3", "-m", "pip", "install", "requests")
    assert session_pattern(argv) == ("python3", "-m", "pip", "install")
    rule = rule_for_segment(argv, "approved")
    assert example_failures(rule, command_argvs) == []
    assert not rule.matches(("python3", "-c", "print(1)"))
    assert session_pattern(("python3", "-m", "pytest")) == ("python3", "-m", "pytest")
