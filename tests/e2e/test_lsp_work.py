"""Long work off the event loop: progress, cancel, events, and `tether.ask` — the real server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _lsp_support import Editor, capabilities, fake_api_server, start_editor, stop_editor
from lsprotocol import types

pytestmark = pytest.mark.e2e

ALLOW_SLEEP = '[tool_safety]\ncommand_whitelist = ["sleep"]\n'
REQUEST_FAILED = -32803


async def until(predicate: object, what: str) -> None:
    """Poll a condition the server makes true asynchronously (bounded by pytest-timeout)."""
    while not predicate():  # type: ignore[operator]
        await asyncio.sleep(0.02)


async def test_a_running_command_does_not_block_and_can_be_cancelled(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("visual_studio_code"),
        "visual_studio_code",
        options={"permissions": "command"},
        user_config=ALLOW_SLEEP,
    )
    try:
        running = asyncio.create_task(
            editor.command("tether.runTool", {"name": "bash_command", "input": {"command": "sleep 60"}})
        )
        await until(lambda: any(editor.client.progress_reports.values()), "progress begin")
        [token] = list(editor.client.progress_reports)
        begin = editor.client.progress_reports[token][0]
        assert isinstance(begin, types.WorkDoneProgressBegin)
        assert begin.title == "Tether: bash_command"
        assert begin.cancellable is True

        # The event loop is free while the command runs: other requests are answered.
        status = await editor.command("tether.status", {})
        assert status["permissions"] == "command"
        assert not running.done()

        assert await editor.command("tether.cancel", {}) == {"cancelled": True}
        answer = await running
        result = answer["result"]
        assert result["ok"] is False
        assert result["result"]["error"] == "command cancelled"
        end = editor.client.progress_reports[token][-1]
        assert isinstance(end, types.WorkDoneProgressEnd)
        assert end.message == "cancelled"
        assert [(e.tool, e.state) for e in editor.events] == [("bash_command", "failed")]
        assert editor.events[0].checkpoint  # it ran (and was checkpointed) before it was cancelled
        assert await editor.command("tether.cancel", {}) == {"cancelled": False}
    finally:
        await stop_editor(editor)


async def test_the_clients_cancel_button_cancels_that_command(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("neovim"),
        "neovim",
        options={"permissions": "command"},
        user_config=ALLOW_SLEEP,
    )
    try:
        running = asyncio.create_task(
            editor.command("tether.runTool", {"name": "bash_command", "input": {"command": "sleep 60"}})
        )
        await until(lambda: any(editor.client.progress_reports.values()), "progress begin")
        [token] = list(editor.client.progress_reports)
        editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        answer = await running
        assert answer["result"]["result"]["error"] == "command cancelled"
    finally:
        await stop_editor(editor)


@pytest.mark.parametrize("client_kind", ["neovim"], indirect=True)
async def test_denials_are_results_with_events_not_errors(editor: Editor) -> None:
    await editor.command("tether.setPermissions", {"permissions": "all"})
    answer = await editor.command(
        "tether.runTool", {"name": "bash_command", "input": {"command": "curl example.com"}}
    )
    result = answer["result"]
    assert result["ok"] is False
    assert result["isError"] is True
    assert result["decision"]["allowed"] is False
    assert "curl" in result["result"]["error"]
    escape = await editor.command(
        "tether.runTool", {"name": "write_file", "input": {"path": "../x", "content": "x"}}
    )
    assert escape["result"]["ok"] is False
    assert not (editor.workspace.parent / "x").exists()
    unknown = await editor.command("tether.runTool", {"name": "rm_rf", "input": {}})
    assert "unknown tool" in unknown["result"]["result"]["error"]
    # The permission change is a call of its own: an event and an audit line, decided by the user.
    assert [e.state for e in editor.events] == ["executed", "denied", "denied", "failed"]
    assert editor.events[0].tool == "set_permissions"
    assert [e["tool"] for e in (await editor.command("tether.toolLog", {}))["entries"]] == [
        "set_permissions",
        "bash_command",
        "write_file",
        "rm_rf",
    ]


@pytest.mark.parametrize("client_kind", ["neovim"], indirect=True)
async def test_ask_without_a_model_says_how_to_set_one_up(editor: Editor) -> None:
    error = await editor.command_error("tether.ask", {"prompt": "hello"})
    assert error.code == REQUEST_FAILED
    assert "ANTHROPIC_API_KEY" in error.message
    assert (await editor.command("tether.status", {}))["apiKeyPresent"] is False


SCRIPT = {
    "name": "lsp-ask",
    "turns": [
        {
            "content": [
                {"text": "I will propose the change."},
                {
                    "tool_use": {
                        "id": "toolu_lsp_write",
                        "name": "write_file",
                        "input": {"path": "README.md", "content": "hello from the agent\n"},
                    }
                },
            ]
        },
        {
            "content": [{"text": "Proposed; please review."}],
            "expect": {"tool_results": [{"is_error": False}]},
        },
    ],
}


@pytest.fixture
async def fake_api(tmp_path: Path) -> AsyncIterator[str]:
    async with fake_api_server(tmp_path, SCRIPT) as url:
        yield url


async def test_ask_runs_an_agent_turn_through_the_gate(tmp_path: Path, fake_api: str) -> None:
    editor = await start_editor(
        tmp_path,
        capabilities("visual_studio_code"),
        "visual_studio_code",
        files={"README.md": "hello\n"},
        env={"ANTHROPIC_BASE_URL": fake_api},
    )
    try:
        uri = editor.open("README.md")
        answer = await editor.command("tether.ask", {"prompt": "change the readme"})
        assert answer["stopReason"] == "end_turn"
        assert "Proposed" in answer["text"]
        [call] = answer["toolCalls"]
        assert call["name"] == "write_file"
        [proposal] = (await editor.command("tether.proposals", {"pending": True}))["proposals"]
        assert proposal["path"] == "README.md"
        assert len(editor.diagnostics("README.md")) == 1  # the agent's proposal shows in the buffer
        assert (editor.workspace / "README.md").read_text() == "hello\n"
        tokens = [t for t, reports in editor.client.progress_reports.items() if reports]
        assert tokens
        begin = editor.client.progress_reports[tokens[0]][0]
        assert isinstance(begin, types.WorkDoneProgressBegin)
        assert begin.title == "Tether: agent turn"
        assert any(e.tool == "write_file" and e.state == "proposed" for e in editor.events)
        assert editor.buffers[uri] == "hello\n"
    finally:
        await stop_editor(editor)
