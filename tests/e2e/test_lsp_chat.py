"""A chat view's protocol against the real server: `tether/turn` while a turn runs, per-hunk review
of the turn's proposal, cancel of one turn, and the conversation list (docs/lsp.md, "Chat").

The model is the project's offline Messages API (`tether fake-api`) spoken to by the real SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _lsp_support import Editor, capabilities, fake_api_server, start_editor, stop_editor

pytestmark = pytest.mark.e2e

README = "".join(f"line {n}\n" for n in range(1, 31))
EDITED = README.replace("line 2\n", "line two\n").replace("line 28\n", "line twenty-eight\n")

REVIEW_SCRIPT = {
    "name": "chat-review",
    "turns": [
        {
            "content": [
                {"text": "I will make an empty average a float."},
                {"text": "I proposed the edit for your review."},
                {
                    "tool_use": {
                        "id": "toolu_chat_write",
                        "name": "write_file",
                        "input": {"path": "README.md", "content": EDITED},
                    }
                },
            ],
            "chunk_delay": 0.01,
        },
        {"content": [{"text": "Waiting for your review."}]},
    ],
}

HANGING_SCRIPT = {
    "name": "chat-cancel",
    "turns": [{"content": [{"text": "Thinking about a long answer that never ends"}], "hang_after": 4}],
}


def field(update: Any, name: str) -> Any:
    """pygls hands notifications over as objects; the view reads them as JSON."""
    return getattr(update, name, None)


async def until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def chat_editor(tmp_path: Path, script: dict[str, Any], *, chat: bool = True) -> AsyncIterator[Editor]:
    """A chat client (`chat: true`) on a workspace whose model plays `script`."""
    async with fake_api_server(tmp_path, script) as url:
        editor = await start_editor(
            tmp_path,
            capabilities("visual_studio_code"),
            "visual_studio_code",
            files={"README.md": README},
            options={"permissions": "none", "chat": chat},
            env={"ANTHROPIC_BASE_URL": url},
        )
        try:
            yield editor
        finally:
            await stop_editor(editor)


async def test_a_turn_streams_its_text_and_tool_cards_then_the_proposal_is_reviewed_per_hunk(
    tmp_path: Path,
) -> None:
    async with chat_editor(tmp_path, REVIEW_SCRIPT) as editor:
        answer = await editor.command("tether.ask", {"prompt": "fix the average", "turnId": "t-1"})
        updates = editor.turn_updates
        kinds = [field(u, "kind") for u in updates]
        assert kinds[0] == "started"
        assert kinds[-1] == "stopped"
        assert {field(u, "turnId") for u in updates} == {"t-1"}
        assert [field(u, "seq") for u in updates] == list(range(len(updates)))
        assert {field(u, "conversationId") for u in updates[1:]} == {answer["conversationId"]}
        # The answer arrives in pieces, before the tool call; the second response is a new block.
        texts = [u for u in updates if field(u, "kind") == "text"]
        assert len(texts) > 2
        first_tool = kinds.index("tool")
        assert kinds.index("text") < first_tool
        streamed = "".join(field(u, "delta") for u in texts if field(u, "block") == 1)
        assert "float." in streamed
        assert "I proposed" in streamed
        assert {field(u, "block") for u in texts[first_tool:]} <= {2}
        # Two text blocks of one response are two paragraphs, not "…a float.I proposed…".
        assert "a float.\n\nI proposed" in answer["text"]
        assert "float.I" not in answer["text"]
        # One card per call: running, then its final state with the proposal to review.
        running, done = [u for u in updates if field(u, "kind") == "tool"]
        assert field(running, "state") == "running"
        assert field(running, "name") == "write_file"
        assert field(done, "id") == field(running, "id") == "toolu_chat_write"
        assert field(done, "state") == "proposed"
        proposal_id = field(done, "proposalId")
        assert proposal_id
        usage = [u for u in updates if field(u, "kind") == "usage"]
        assert len(usage) == 2
        assert field(usage[-1], "cost") == answer["cost"]
        tokens = field(usage[0], "usage")
        assert field(tokens, "inputTokens") > 0  # the protocol's spelling, not the model's input_tokens
        assert field(tokens, "outputTokens") > 0
        assert field(updates[-1], "stopReason") == "end_turn"
        assert answer["turnId"] == "t-1"

        # The card's review: accept the first hunk only, reject the second.
        proposal = (await editor.command("tether.proposal", {"id": proposal_id}))["proposal"]
        assert len(proposal["hunks"]) == 2
        await editor.command("tether.accept", {"id": proposal_id, "hunks": [1]})
        await editor.command("tether.reject", {"id": proposal_id, "hunks": [2]})
        text = (editor.workspace / "README.md").read_text(encoding="utf-8")
        assert "line two\n" in text
        assert "line 28\n" in text
        assert "twenty-eight" not in text


async def test_the_conversation_is_listed_and_its_history_can_be_drawn(tmp_path: Path) -> None:
    async with chat_editor(tmp_path, REVIEW_SCRIPT) as editor:
        answer = await editor.command("tether.ask", {"prompt": "fix the average\nplease"})
        listed = await editor.command("tether.conversations", {})
        [entry] = listed["conversations"]
        assert entry["id"] == listed["latest"] == answer["conversationId"]
        assert entry["title"] == "fix the average"
        assert entry["turns"] == 1
        assert entry["cost"] == pytest.approx(answer["cost"])
        history = await editor.command("tether.conversation", {"id": answer["conversationId"]})
        roles = [e["role"] for e in history["entries"]]
        assert roles == ["user", "assistant", "tool", "assistant"]
        tool = history["entries"][2]
        assert tool["name"] == "write_file"
        assert "proposal" in tool["output"]
        assert not tool["isError"]
        assert "a float.\n\nI proposed" in history["entries"][1]["text"]
        missing = await editor.command_error("tether.conversation", {"id": "c-nope"})
        assert "no conversation" in str(missing)


async def test_text_is_visible_before_the_turn_ends_and_stop_cancels_that_turn(tmp_path: Path) -> None:
    async with chat_editor(tmp_path, HANGING_SCRIPT) as editor:
        turn = asyncio.ensure_future(editor.command("tether.ask", {"prompt": "go", "turnId": "long"}))
        await until(lambda: any(field(u, "kind") == "text" for u in editor.turn_updates))
        assert not turn.done()  # streamed while the turn is still running
        assert (await editor.command("tether.cancel", {"turnId": "other"})) == {"cancelled": False}
        assert not turn.done()
        assert (await editor.command("tether.cancel", {"turnId": "long"})) == {"cancelled": True}
        answer = await turn
        assert answer["stopReason"] == "cancelled"
        last = editor.turn_updates[-1]
        assert field(last, "kind") == "stopped"
        assert field(last, "stopReason") == "cancelled"


async def test_clients_without_a_chat_view_get_no_turn_notifications(tmp_path: Path) -> None:
    async with chat_editor(tmp_path, REVIEW_SCRIPT, chat=False) as editor:
        answer = await editor.command("tether.ask", {"prompt": "fix the average"})
        assert answer["stopReason"] == "end_turn"
        assert answer["turnId"]
        assert editor.turn_updates == []


async def test_a_turn_id_in_use_is_refused(tmp_path: Path) -> None:
    async with chat_editor(tmp_path, HANGING_SCRIPT) as editor:
        turn = asyncio.ensure_future(editor.command("tether.ask", {"prompt": "go", "turnId": "same"}))
        await until(lambda: bool(editor.turn_updates))
        error = await editor.command_error("tether.ask", {"prompt": "again", "turnId": "same"})
        assert "already running" in str(error)
        await editor.command("tether.cancel", {"turnId": "same"})
        await turn
