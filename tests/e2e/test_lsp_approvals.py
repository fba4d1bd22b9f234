"""The approval loop through the real server: a real `git commit` asks the person in the editor.

Both request kinds (docs/lsp.md, "Approvals"): `tether/approve` for clients that declare it, and
`window/showMessageRequest` with exactly four actions for every other client. The command runs in
the real sandbox after "Allow once"; "Deny" and silence run nothing and tell the model why.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _lsp_support import Editor, capabilities, git, start_editor, stop_editor
from lsprotocol import types

pytestmark = pytest.mark.e2e

TITLES = ["Allow once", "Allow for this session", "Always allow", "Deny"]


def commits(editor: Editor) -> int:
    return int(git(editor.workspace, "rev-list", "--count", "HEAD").strip())


async def bash(editor: Editor, command: str) -> dict[str, Any]:
    answer = await editor.command("tether.runTool", {"name": "bash_command", "input": {"command": command}})
    result: dict[str, Any] = answer["result"]
    return result


class Person:
    """The person at the editor: answers each question with the next of `answers` (pygls registers
    one handler per method, so the answers are queued here)."""

    def __init__(self, editor: Editor, method: str) -> None:
        self.asked: list[Any] = []
        self.answers: list[Any] = []
        handler = self._answer if method == "tether/approve" else self._click

        def answer(params: Any) -> Any:  # pygls tags the function: a bound method cannot carry tags
            return handler(params)

        editor.client.feature(method)(answer)

    def will(self, *answers: Any) -> Person:
        self.asked.clear()
        self.answers = list(answers)
        return self

    def _answer(self, params: Any) -> Any:
        self.asked.append(params)
        return self.answers.pop(0)

    def _click(self, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        self.asked.append(params)
        title = self.answers.pop(0)
        return None if title is None else types.MessageActionItem(title=title)


async def test_tether_approve_allow_once_commits_and_the_question_says_everything(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("neovim"),
        "neovim",
        options={"permissions": "command", "approvals": True},
        user_config="# mine\n",
    )
    try:
        person = Person(editor, "tether/approve").will({"choice": "allow_once"})
        asked = person.asked
        before = commits(editor)
        result = await bash(editor, "ls && git commit --allow-empty -q -m approved")
        assert result["state"] == "executed", result
        assert commits(editor) == before + 1
        assert git(editor.workspace, "log", "-1", "--format=%s").strip() == "approved"
        # One question for the compound command, naming only the segment that needs it.
        assert len(asked) == 1
        question = asked[0]
        get = (lambda k: question[k]) if isinstance(question, dict) else (lambda k: getattr(question, k))
        assert get("tool") == "bash_command"
        assert "git commit" in get("command")
        assert get("rule") == "ask.git_state"
        segments = get("segments")
        assert len(segments) == 1
        argv = segments[0]["argv"] if isinstance(segments[0], dict) else segments[0].argv
        assert argv[:2] == ["git", "commit"]
        sandbox = get("sandbox")
        network = sandbox["network"] if isinstance(sandbox, dict) else sandbox.network
        assert network == "none"
        always = get("always")
        file = always["file"] if isinstance(always, dict) else always.file
        assert file.endswith("tether/config.toml")
        assert str(editor.workspace) not in file  # never the project
        # Allow once is once: the next commit asks again (and this time the answer is no).
        asked_again = person.will({"choice": "deny", "message": "squash them instead"}).asked
        denied = await bash(editor, "git commit --allow-empty -q -m second")
        assert denied["state"] == "denied"
        assert denied["isError"] is True
        assert "squash them instead" in denied["text"]
        assert commits(editor) == before + 1
        assert len(asked_again) == 1
        log = await editor.command("tether.toolLog", {"n": 10})
        tools = [e["tool"] for e in log["entries"]]
        assert tools.count("approval") == 2
    finally:
        await stop_editor(editor)


async def test_show_message_request_has_exactly_the_four_actions_and_deny_runs_nothing(
    tmp_path: Path,
) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("visual_studio_code"),
        "visual_studio_code",
        options={"permissions": "command"},
    )
    try:
        person = Person(editor, "window/showMessageRequest").will("Deny")
        asked = person.asked
        before = commits(editor)
        result = await bash(editor, "git commit --allow-empty -q -m nope")
        assert result["state"] == "denied"
        assert commits(editor) == before
        assert len(asked) == 1
        assert [a.title for a in asked[0].actions or []] == TITLES
        assert asked[0].type == types.MessageType.Warning
        assert "git commit" in asked[0].message
        # "Allow for this session" covers `git commit` until the server ends, and nothing else.
        person.will("Allow for this session")
        assert (await bash(editor, "git commit --allow-empty -q -m one"))["state"] == "executed"
        assert (await bash(editor, "git commit --allow-empty -q -m two"))["state"] == "executed"
        assert commits(editor) == before + 2
        assert len(asked) == 1
        person.will(None)  # dismissed: deny
        assert (await bash(editor, "git tag v1"))["state"] == "denied"
        assert len(asked) == 1
        assert git(editor.workspace, "tag").strip() == ""
    finally:
        await stop_editor(editor)


async def test_a_command_whose_every_segment_is_allowed_never_asks(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("visual_studio_code"),
        "visual_studio_code",
        options={"permissions": "command"},
    )
    try:
        person = Person(editor, "window/showMessageRequest").will("Allow once")
        result = await bash(editor, "ls && git status --short && echo done")
        assert result["state"] == "executed"
        assert person.asked == []
    finally:
        await stop_editor(editor)


async def test_no_answer_within_the_timeout_is_a_deny(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("neovim"),
        "neovim",
        options={"permissions": "command", "approvals": True},
        user_config="[approvals]\ntimeout_seconds = 1\n",
    )
    try:
        waiting = asyncio.Event()

        async def never(params: Any) -> dict[str, Any]:
            waiting.set()
            await asyncio.sleep(30)
            return {"choice": "allow_once"}

        editor.client.feature("tether/approve")(never)
        before = commits(editor)
        result = await bash(editor, "git commit --allow-empty -q -m late")
        assert waiting.is_set()
        assert result["state"] == "denied"
        assert "no answer within" in result["text"]
        assert commits(editor) == before
    finally:
        await stop_editor(editor)


async def test_tether_explain_answers_what_the_cli_answers(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path, capabilities("visual_studio_code"), "visual_studio_code", options={"permissions": "command"}
    )
    try:
        report = await editor.command("tether.explain", {"command": "ls && git push"})
        assert (report["verdict"], report["rule"], report["mode"]) == ("ask", "ask.git_state", "command")
        assert [s["verdict"] for s in report["segments"]] == ["allow", "ask"]
        assert report["granted"] is True
        assert report["checkpoint"] is True
        assert report["sandbox"]["network"] == "none"
        denied = await editor.command("tether.explain", {"command": "mkdir x", "mode": "command"})
        assert denied["verdict"] == "deny"
        assert denied["sandbox"] is None
        allowed = await editor.command("tether.explain", {"command": "mkdir x", "mode": "workspace"})
        assert (allowed["verdict"], allowed["granted"]) == ("allow", False)
        error = await editor.command_error("tether.explain", {"command": "ls", "mode": "root"})
        assert "`mode` must be" in error.message
    finally:
        await stop_editor(editor)
