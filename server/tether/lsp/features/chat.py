"""`tether/turn`: an agent turn streamed to a chat view while it runs, and the conversation list.

Why notifications and not the `tether.ask` result alone: a turn can take minutes. A chat view must
show the answer as it is written, each tool call with its verdict as it happens, and a proposal's
hunks to review before the turn ends. Clients that show a chat declare `initializationOptions.chat`;
the others keep the work-done progress and the final result of `tether.ask`.

Each notification is `{turnId, conversationId, seq, kind, …}`; `seq` counts from 0 per turn. The
kinds and their fields are documented in docs/lsp.md ("Chat").
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.agent import AgentEvent
    from tether.lsp.server import TetherServer

TURN = "tether/turn"
MAX_OUTPUT_CHARS = 8000
"""A tool's output in a card is a preview; the full text went to the model and the audit log."""

_turn_numbers = itertools.count(1)


def new_turn_id() -> str:
    return f"turn-{next(_turn_numbers)}"


class TurnStream:
    """Turns the agent's events into `tether/turn` notifications (one writer: the event loop)."""

    def __init__(self, server: TetherServer, turn_id: str, conversation_id: str | None) -> None:
        self._server = server
        self.turn_id = turn_id
        self.conversation_id = conversation_id
        self._seq = itertools.count()
        self._block = 0
        self._in_text = False
        self._cost = 0.0
        self._lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        with self._lock:
            payload = {
                "turnId": self.turn_id,
                "conversationId": self.conversation_id,
                "seq": next(self._seq),
                "kind": kind,
                **fields,
            }
        self._server.call_soon(self._server.protocol.notify, TURN, payload)

    def on_event(self, event: AgentEvent) -> None:
        """One agent event → at most one notification; kinds a chat has no use for are dropped."""
        data = event.data
        if event.kind == "started":
            self.conversation_id = str(data.get("conversation_id") or self.conversation_id or "")
            self.send("started", prompt=event.text)
        elif event.kind == "text":
            if not self._in_text:
                self._in_text = True
                self._block += 1
            self.send("text", delta=event.text, block=self._block)
        elif event.kind in ("tool_use_start", "request"):
            self._in_text = False  # the next text is a new block: the view separates them
        elif event.kind == "tool_start":
            self._in_text = False
            self.send(
                "tool",
                id=data.get("id"),
                name=data.get("name"),
                summary=event.text,
                input=data.get("input"),
                state="running",
            )
        elif event.kind == "tool_result":
            self.send("tool", **_tool_fields(event))
        elif event.kind == "response":
            self._cost += float(data.get("cost") or 0.0)
            self.send("usage", usage=_camel_keys(data.get("usage")), cost=round(self._cost, 6))
        elif event.kind in ("retry", "restart", "notice"):
            self.send("notice", text=event.text)
        elif event.kind == "stopped":
            self.send("stopped", stopReason=data.get("stop_reason"), message=event.text or None)


def _camel_keys(usage: Any) -> dict[str, Any]:
    """The model's `input_tokens`… as the protocol's `inputTokens`… (docs/lsp.md, "Chat")."""
    if not isinstance(usage, Mapping):
        return {}
    return {
        key.split("_")[0] + "".join(part.title() for part in key.split("_")[1:]): value
        for key, value in usage.items()
    }


def _tool_fields(event: AgentEvent) -> dict[str, Any]:
    record = event.data.get("record")
    if record is None:
        return {"summary": event.text, "state": "failed"}
    outcome = record.outcome
    output = outcome.content
    return {
        "id": record.id,
        "name": record.name,
        "summary": record.summary,
        "input": dict(record.input) if isinstance(record.input, Mapping) else None,
        "state": outcome.verdict,
        "isError": outcome.is_error,
        "rule": outcome.rule,
        "reason": outcome.reason,
        "proposalId": outcome.proposal_id,
        "checkpoint": outcome.checkpoint,
        "output": output if len(output) <= MAX_OUTPUT_CHARS else output[:MAX_OUTPUT_CHARS] + "\n…",
        "outputTruncated": len(output) > MAX_OUTPUT_CHARS,
    }
