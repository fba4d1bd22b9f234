"""A conversation as a chat draws it (`Conversation.transcript`, `summary`): prompts, answers and
tool calls in order, results matched to their calls, whatever shapes the saved messages take."""

from __future__ import annotations

from pathlib import Path

from tether.agent.conversations import ConversationStore


def test_transcript_orders_prompts_answers_and_calls_and_matches_results(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    conversation = store.create("claude-test", "c-1")
    conversation.messages = [
        {"role": "user", "content": "first prompt\nsecond line"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "One."},
                {"type": "text", "text": "Two."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "bash_command", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "denied", "is_error": True},
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "A"}]},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "unknown", "content": "x"},
                {"type": "text", "text": "next prompt"},
            ],
        },
    ]
    entries = conversation.transcript()
    assert entries == [
        {"role": "user", "text": "first prompt\nsecond line"},
        {"role": "assistant", "text": "One.\n\nTwo."},
        {
            "role": "tool",
            "id": "t1",
            "name": "read_file",
            "input": {"path": "a"},
            "output": "A",
            "isError": False,
        },
        {
            "role": "tool",
            "id": "t2",
            "name": "bash_command",
            "input": {"command": "ls"},
            "output": "denied",
            "isError": True,
        },
        {"role": "user", "text": "next prompt"},
    ]
    summary = conversation.summary()
    assert summary["title"] == "first prompt"
    assert summary["id"] == "c-1"
    assert summary["turns"] == 0
    assert summary["model"] == "claude-test"


def test_a_long_first_line_is_shortened_and_an_empty_conversation_has_no_title(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    conversation = store.create("m", "c-2")
    assert conversation.summary()["title"] == ""
    conversation.messages = [{"role": "user", "content": [{"type": "text", "text": "x" * 200}]}]
    title = conversation.summary()["title"]
    assert len(title) == 80
    assert title.endswith("…")
