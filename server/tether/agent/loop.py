"""The tool-use loop: prompt → model → tool calls through the executor → results → model … → answer.

Why it is shaped like this:
  * It takes a `ModelClient` and a `ToolExecutor`, never the SDK or the gate, so one loop serves the
    terminal, the editor and tests, and it is the gate alone that decides what runs.
  * Every `tool_use` gets exactly one `tool_result` (with `is_error` when failed or denied) before the
    next request — even when the user cancels, which answers the remaining calls "cancelled" — so a
    conversation on disk can always be continued.
  * `max_cost` is enforced *before* each request: the input is estimated from the request's size
    (calibrated by the previous response's real token count) and `max_tokens` is lowered to what the
    remaining budget can pay for; when that is under `MIN_OUTPUT_TOKENS` the loop stops instead.
  * Proposals the model made are remembered in the conversation; when the next turn starts, their
    outcome (hunks applied, rejected, edited by the user, stale) is told to the model first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.agent.conversations import Conversation, ConversationStore, Stats, iso_now
from tether.agent.executor import ToolExecutor, ToolReport, summarize_call
from tether.agent.model import ModelClient, ModelRequest, ModelResponse, StreamEvent, Usage
from tether.agent.pricing import Price, price_for
from tether.core.config import AgentSettings
from tether.errors import AgentError

MAX_TOOL_ROUNDS = 50
MIN_OUTPUT_TOKENS = 256
MIN_CHARS_PER_TOKEN = 3.0  # conservative: English and code run 3.5–4 characters per token
CANCEL_POLL_SECONDS = 0.05

DEFAULT_SYSTEM_PROMPT = """\
You are a careful coding agent working in the repository at {workspace}.
You act only through the tools provided. Every call passes through Tether, a safety layer:
- commands outside the allowed list, and paths outside the workspace or protected, are refused with a
  reason and a suggestion; adapt your approach instead of repeating a refused call;
- file edits may come back as proposals that the user reviews hunk by hunk; you are told the outcome
  at the start of the next turn — do not work around a pending proposal;
- in a dry-run session nothing is executed; say what you would do instead.
Keep changes small, run the tests when you change code, and finish with a short summary."""


@dataclass(frozen=True)
class AgentEvent:
    """What the faces show while a turn runs (terminal renderer, LSP progress)."""

    kind: str  # started text thinking request response tool_start tool_result retry restart notice stopped
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[AgentEvent], None]


@dataclass
class ToolCallRecord:
    id: str
    name: str
    input: Mapping[str, Any]
    summary: str
    outcome: ToolReport

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "input": dict(self.input),
            "summary": self.summary,
            **self.outcome.to_json(),
        }


@dataclass
class TurnResult:
    conversation_id: str
    text: str
    stop_reason: str
    tool_calls: list[ToolCallRecord]
    usage: Usage
    cost: float
    requests: int
    message: str | None = None
    conversation_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ended_normally(self) -> bool:
        return self.stop_reason in ("end_turn", "stop_sequence")

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "conversationId": self.conversation_id,
            "stopReason": self.stop_reason,
            "message": self.message,
            "toolCalls": [call.to_json() for call in self.tool_calls],
            "usage": self.usage.to_json(),
            "cost": round(self.cost, 6),
            "requests": self.requests,
            "conversationStats": self.conversation_stats,
        }


@dataclass
class ReplayResult:
    conversation_id: str
    stamp: str
    tool_calls: list[ToolCallRecord]


class _Cancelled(Exception):
    pass


def make_redactor(secrets: Sequence[str]) -> Callable[[str], str]:
    """Replace each secret (8+ characters) wherever it appears: tool output, saved files, the screen."""
    hidden = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)

    def redact(text: str) -> str:
        for secret in hidden:
            if secret in text:
                text = text.replace(secret, "[REDACTED]")
        return text

    return redact


class Agent:
    """One workspace's agent: runs turns and replays, saving everything under `.tether/`."""

    def __init__(
        self,
        executor: ToolExecutor,
        settings: AgentSettings,
        store: ConversationStore,
        client: ModelClient | None = None,
        *,
        workspace: Path | None = None,
        on_event: EventSink | None = None,
        secrets: Sequence[str] = (),
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.executor = executor
        self.settings = settings
        self.store = store
        self.client = client
        self.workspace = workspace or store.workspace
        self.on_event = on_event
        self.max_tool_rounds = max_tool_rounds
        self.redact = make_redactor(secrets)
        store.redact = self.redact
        self._tokens_per_char = 1 / MIN_CHARS_PER_TOKEN

    # --- events --------------------------------------------------------------------------------

    def _emit(self, kind: str, text: str = "", **data: Any) -> None:
        if self.on_event is None:
            return
        with contextlib.suppress(Exception):  # a broken display must not break the turn
            self.on_event(AgentEvent(kind, self.redact(text), data))

    # --- a turn --------------------------------------------------------------------------------

    async def ask(
        self, prompt: str, *, conversation_id: str | None = None, cancel: threading.Event | None = None
    ) -> TurnResult:
        """Run one turn to its end (answer, max_cost, cancel, round limit); AgentError on API failure."""
        if self.client is None:
            raise AgentError("no model client is configured for this agent")
        if not prompt.strip():
            raise AgentError("the prompt is empty")
        cancel = cancel if cancel is not None else threading.Event()
        conversation = self.store.open_or_create(conversation_id, self.settings.model)
        with self.store.busy(conversation):
            # re-read under the lock: another process may have just finished a turn on it
            conversation = self.store.open(conversation.id)
            return await self._ask(conversation, prompt, cancel)

    async def _ask(self, conversation: Conversation, prompt: str, cancel: threading.Event) -> TurnResult:
        price = price_for(self.settings.model)
        if not price.known:
            self._emit(
                "notice",
                f"no price is known for {self.settings.model}: costs are estimated at the highest known rate",
            )
        turn = _Turn(conversation)
        conversation.meta.setdefault("turns", []).append({"started": iso_now()})
        self._emit("started", prompt, conversation_id=conversation.id)
        await self._open_turn(conversation, prompt)
        try:
            await self._run(turn, price, cancel)
        except asyncio.CancelledError:
            cancel.set()
            turn.stop("cancelled", "cancelled by the client")
            self._close(turn)
            raise
        except AgentError as exc:
            turn.stop("error", str(exc))
            self._close(turn)
            raise
        self._close(turn)
        return TurnResult(
            conversation_id=conversation.id,
            text="\n\n".join(t for t in turn.texts if t.strip()),
            stop_reason=turn.stop_reason or "end_turn",
            tool_calls=turn.calls,
            usage=turn.usage,
            cost=turn.cost,
            requests=turn.requests,
            message=turn.message,
            conversation_stats=conversation.stats.to_json(),
        )

    async def _open_turn(self, conversation: Conversation, prompt: str) -> None:
        blocks: list[dict[str, Any]] = []
        if conversation.pending_proposals:
            messages, still = await asyncio.to_thread(
                self.executor.review_outcomes, conversation.pending_proposals
            )
            conversation.pending_proposals = still
            if messages:
                text = "Outcome of your earlier proposed edits:\n" + "\n".join(f"- {m}" for m in messages)
                blocks.append({"type": "text", "text": text})
                self._emit("notice", text)
        blocks.append({"type": "text", "text": prompt})
        _append_user(conversation.messages, blocks)
        conversation.save()

    async def _run(self, turn: _Turn, price: Price, cancel: threading.Event) -> None:
        conversation = turn.conversation
        tools = self.executor.definitions()
        system = self.settings.system_prompt or DEFAULT_SYSTEM_PROMPT.format(workspace=self.workspace)
        for _round in range(self.max_tool_rounds):
            if cancel.is_set():
                turn.stop("cancelled", "cancelled before the next request")
                return
            max_tokens, estimate = self._budget(system, tools, conversation.messages, turn.cost, price)
            if max_tokens is None:
                turn.stop(
                    "max_cost",
                    f"stopped before the next request: it could cost about ${estimate:.4f} more, and this "
                    f"turn has spent ${turn.cost:.4f} of max_cost ${self.settings.max_cost:.4f}",
                )
                return
            request = ModelRequest(
                model=self.settings.model,
                max_tokens=max_tokens,
                messages=conversation.messages,
                tools=tools,
                system=system,
                temperature=self.settings.temperature,
            )
            stamp = conversation.save_exchange(request.to_json(), None)
            self._emit("request", "", stamp=stamp, max_tokens=max_tokens, estimated_cost=estimate)
            partial: list[str] = []
            try:
                response = await self._stream(request, cancel, partial)
            except _Cancelled:
                conversation.save_response(
                    stamp,
                    {"stop_reason": "cancelled", "content": [{"type": "text", "text": "".join(partial)}]},
                )
                turn.texts.append("".join(partial))
                turn.stop("cancelled", "cancelled while the model was answering")
                return
            self._account(turn, response, price, stamp, request)
            if response.stop_reason != "tool_use" or not response.tool_uses:
                if response.tool_uses:  # cut off (max_tokens…) mid-call: answer, never run a partial call
                    self._refuse_unfinished(conversation, response)
                turn.stop(response.stop_reason or "end_turn", _stop_message(response.stop_reason))
                return
            await self._run_tools(turn, response, cancel)
            if cancel.is_set():
                turn.stop("cancelled", "cancelled while running tools")
                return
        turn.stop("max_tool_rounds", f"stopped after {self.max_tool_rounds} rounds of tool calls")

    def _budget(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        spent: float,
        price: Price,
    ) -> tuple[int | None, float]:
        chars = len(json.dumps({"system": system, "tools": tools, "messages": messages}, ensure_ascii=False))
        est_input = int(chars * max(self._tokens_per_char, 1 / MIN_CHARS_PER_TOKEN)) + 1
        input_cost = price.input_cost(est_input)
        if self.settings.max_cost is None:
            return self.settings.max_tokens, input_cost + price.cost(
                Usage(output_tokens=self.settings.max_tokens)
            )
        affordable = price.output_tokens_for(self.settings.max_cost - spent - input_cost)
        max_tokens = min(self.settings.max_tokens, affordable)
        floor = min(MIN_OUTPUT_TOKENS, self.settings.max_tokens)
        estimate = input_cost + price.cost(Usage(output_tokens=floor))
        if max_tokens < floor:
            return None, estimate
        return max_tokens, estimate

    async def _stream(
        self, request: ModelRequest, cancel: threading.Event, partial: list[str]
    ) -> ModelResponse:
        assert self.client is not None

        def sink(event: StreamEvent) -> None:
            if event.kind == "text":
                partial.append(event.text)
            elif event.kind == "restart":
                partial.clear()
            self._emit(event.kind, event.text, **event.data)

        streaming = asyncio.ensure_future(self.client.stream(request, sink))
        watcher = asyncio.ensure_future(_wait_for(cancel))
        try:
            done, _ = await asyncio.wait({streaming, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, watcher):
                if not task.done():
                    task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        if streaming in done:
            return streaming.result()
        with contextlib.suppress(asyncio.CancelledError, AgentError):
            await streaming  # the SDK closes the connection as the task unwinds
        raise _Cancelled()

    def _account(
        self, turn: _Turn, response: ModelResponse, price: Price, stamp: str, request: ModelRequest
    ) -> None:
        conversation = turn.conversation
        cost = price.cost(response.usage)
        turn.usage += response.usage
        turn.cost += cost
        turn.requests += 1
        turn.texts.append(response.text)
        sent = response.usage.input_tokens + response.usage.cache_creation_input_tokens
        sent += response.usage.cache_read_input_tokens
        chars = len(
            json.dumps(
                {"system": request.system, "tools": request.tools, "messages": request.messages},
                ensure_ascii=False,
            )
        )
        if chars and sent:
            self._tokens_per_char = sent / chars
        conversation.save_response(stamp, {**response.to_json(), "cost": round(cost, 6)})
        conversation.messages.append({"role": "assistant", "content": response.content})
        stats = conversation.stats
        stats.input_tokens += response.usage.input_tokens
        stats.output_tokens += response.usage.output_tokens
        stats.cost += cost
        stats.requests += 1
        conversation.stats = stats
        conversation.save()
        self._emit(
            "response",
            "",
            stamp=stamp,
            usage=response.usage.to_json(),
            cost=cost,
            stop_reason=response.stop_reason,
        )

    def _refuse_unfinished(self, conversation: Conversation, response: ModelResponse) -> None:
        text = (
            f"Not run: your response stopped ({response.stop_reason}) before this call was complete. "
            "Send the call again if it is still needed."
        )
        results = [
            {"type": "tool_result", "tool_use_id": str(b.get("id")), "content": text, "is_error": True}
            for b in response.tool_uses
        ]
        conversation.messages.append({"role": "user", "content": results})
        conversation.save()

    async def _run_tools(self, turn: _Turn, response: ModelResponse, cancel: threading.Event) -> None:
        conversation = turn.conversation
        results: list[dict[str, Any]] = []
        try:
            for block in response.tool_uses:
                tool_id, name = str(block.get("id")), str(block.get("name"))
                tool_input = block.get("input") if isinstance(block.get("input"), Mapping) else {}
                assert isinstance(tool_input, Mapping)
                summary = summarize_call(name, tool_input)
                if cancel.is_set():
                    outcome = ToolReport("Cancelled by the user before this call ran.", True, "cancelled")
                else:
                    self._emit("tool_start", summary, id=tool_id, name=name, input=dict(tool_input))
                    outcome = await self._call_tool(name, tool_input, conversation.id, cancel)
                    outcome.content = self.redact(outcome.content)
                record = ToolCallRecord(tool_id, name, tool_input, summary, outcome)
                turn.calls.append(record)
                if outcome.verdict == "proposed" and outcome.proposal_id:
                    conversation.pending_proposals = [*conversation.pending_proposals, outcome.proposal_id]
                self._emit("tool_result", summary, record=record)
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": tool_id,
                    "content": outcome.content,
                }
                if outcome.is_error:
                    result["is_error"] = True
                results.append(result)
        finally:
            answered = {r["tool_use_id"] for r in results}
            for block in response.tool_uses:  # every tool_use gets its result, whatever happened
                if str(block.get("id")) not in answered:
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": str(block.get("id")),
                            "content": "Cancelled by the user before this call ran.",
                            "is_error": True,
                        }
                    )
            conversation.messages.append({"role": "user", "content": results})
            stats = conversation.stats
            stats.tool_calls += len(turn.calls) - turn.counted_calls
            turn.counted_calls = len(turn.calls)
            conversation.stats = stats
            conversation.save()

    async def _call_tool(
        self,
        name: str,
        tool_input: Mapping[str, Any],
        conversation_id: str,
        cancel: threading.Event,
        source: str = "agent",
    ) -> ToolReport:
        """Run the call in a worker thread; on cancellation, signal it and wait for it to stop cleanly."""
        call = asyncio.ensure_future(
            asyncio.to_thread(
                self.executor.call,
                name,
                tool_input,
                conversation_id=conversation_id,
                cancel=cancel,
                source=source,
            )
        )
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            cancel.set()  # the sandbox kills the command's process tree
            with contextlib.suppress(Exception):
                await call
            raise

    def _close(self, turn: _Turn) -> None:
        conversation = turn.conversation
        turns = conversation.meta.setdefault("turns", [{}])
        turns[-1].update(
            {
                "ended": iso_now(),
                "stop_reason": turn.stop_reason,
                "message": turn.message,
                "cost": round(turn.cost, 6),
                "tool_calls": len(turn.calls),
            }
        )
        if turn.stop_reason in ("cancelled", "max_cost", "error", "max_tool_rounds"):
            conversation.record(turn.stop_reason, message=turn.message, tool_calls=len(turn.calls))
        with contextlib.suppress(Exception):
            conversation.save(durable=True)
        with contextlib.suppress(OSError):
            self.store.add_to_counters(
                input_tokens=turn.usage.input_tokens,
                output_tokens=turn.usage.output_tokens,
                cost=turn.cost,
                tool_calls=len(turn.calls),
            )
        if self.settings.prune_old:
            with contextlib.suppress(OSError, AgentError):
                self.store.prune_old(self.settings.prune_old)
        self._emit("stopped", turn.message or "", stop_reason=turn.stop_reason)

    # --- replay --------------------------------------------------------------------------------

    async def replay(
        self, conversation_id: str, stamp: str | None = None, *, cancel: threading.Event | None = None
    ) -> ReplayResult:
        """Run the tool calls of a saved response through the gate again; the model is not called."""
        cancel = cancel if cancel is not None else threading.Event()
        conversation = self.store.open(conversation_id)
        stamp, data = conversation.load_response(stamp)
        response = ModelResponse.from_json(data)
        calls: list[ToolCallRecord] = []
        for block in response.tool_uses:
            if cancel.is_set():
                break
            name = str(block.get("name"))
            tool_input = block.get("input") if isinstance(block.get("input"), Mapping) else {}
            assert isinstance(tool_input, Mapping)
            summary = summarize_call(name, tool_input)
            self._emit("tool_start", summary, id=block.get("id"), name=name, input=dict(tool_input))
            outcome = await self._call_tool(name, tool_input, conversation.id, cancel, source="replay")
            outcome.content = self.redact(outcome.content)
            record = ToolCallRecord(str(block.get("id")), name, tool_input, summary, outcome)
            calls.append(record)
            self._emit("tool_result", summary, record=record)
        stats = conversation.stats
        stats.tool_calls += len(calls)
        conversation.stats = stats
        conversation.record("replay", stamp=stamp, tool_calls=len(calls), cancelled=cancel.is_set())
        conversation.save()
        with contextlib.suppress(OSError):
            self.store.add_to_counters(input_tokens=0, output_tokens=0, cost=0.0, tool_calls=len(calls))
        return ReplayResult(conversation.id, stamp, calls)


@dataclass
class _Turn:
    conversation: Conversation
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    requests: int = 0
    counted_calls: int = 0
    stop_reason: str | None = None
    message: str | None = None

    def stop(self, reason: str, message: str | None) -> None:
        self.stop_reason = reason
        self.message = message


def _stop_message(stop_reason: str | None) -> str | None:
    return {
        "max_tokens": "the answer reached max_tokens and was cut off (raise --max-tokens)",
        "refusal": "Claude declined to continue this request",
        "model_context_window_exceeded": "the conversation no longer fits the context; start a new one",
        "pause_turn": "the model paused its turn; send another prompt to let it continue",
    }.get(stop_reason or "")


def _append_user(messages: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    """Add a user message; merge into the last one when it is already a user message (after a stop)."""
    if messages and messages[-1].get("role") == "user":
        content = messages[-1]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        messages[-1]["content"] = [*content, *blocks]
    else:
        messages.append({"role": "user", "content": blocks})


async def _wait_for(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(CANCEL_POLL_SECONDS)


def stats_summary(store: ConversationStore) -> dict[str, Any]:
    """Totals (the seed's counters) and one line per conversation, for `tether ask --stats`."""
    conversations = []
    for conversation in store.list():
        conversations.append(
            {
                "id": conversation.id,
                "created": conversation.meta.get("created"),
                "model": conversation.meta.get("model"),
                **conversation.stats.to_json(),
            }
        )
    return {"totals": store.counters(), "conversations": conversations}


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "AgentEvent",
    "EventSink",
    "ReplayResult",
    "Stats",
    "ToolCallRecord",
    "TurnResult",
    "make_redactor",
    "stats_summary",
]
