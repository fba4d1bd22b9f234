"""What the offline server verifies in each request, as the real API would (and a bit more).

The real API answers 400 when a `tool_use` is not followed by a `tool_result` with the same id; the
script also lets a test state what it expects the client to have sent (`expect`). Every check returns
a message naming what was wrong, so a failing test says *why* rather than "400".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tether.agent.fakeapi.script import Expect


def check_request(body: Any, served_tool_ids: Sequence[str], expect: Expect) -> str | None:
    """None when the request is acceptable, else the reason it is not."""
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: must be a positive integer"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    problem = _check_structure(messages)
    if problem:
        return problem
    problem = _check_served_ids(messages, served_tool_ids)
    if problem:
        return problem
    return _check_expect(body, messages, served_tool_ids, expect)


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _check_structure(messages: list[Any]) -> str | None:
    # Claude Code 2.1 sends `system`-role messages between turns (environment notes): the API
    # accepts them; they take no part in the user/assistant alternation checked below.
    messages = [m for m in messages if not (isinstance(m, Mapping) and m.get("role") == "system")]
    if not messages:
        return "messages: at least one `user` message is required"
    first = messages[0]
    if not isinstance(first, Mapping) or first.get("role") != "user":
        return "messages.0: the first message must use the `user` role"
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            return f"messages.{i}: role must be `user` or `assistant`"
        if i and message["role"] == "assistant" and messages[i - 1].get("role") == "assistant":
            return f"messages.{i}: two consecutive `assistant` messages"
        if message["role"] != "assistant":
            continue
        ids = [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        if following is None or following.get("role") != "user":
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message."
            )
        blocks = _blocks(following)
        results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        leading = [b.get("type") for b in blocks[: len(results)]]
        if sorted(results) != sorted(ids) or any(t != "tool_result" for t in leading):
            return (
                f"messages.{i + 1}: tool_result ids {results} do not match the tool_use ids {ids} of "
                "the previous message (tool_result blocks must come first, one per tool_use)"
            )
    return None


def _check_served_ids(messages: list[Any], served: Sequence[str]) -> str | None:
    """The newest assistant tool_use in the history must be the one this server last sent."""
    if not served:
        return None
    for message in reversed(messages):
        if message.get("role") == "assistant":
            ids = [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]
            if ids and sorted(ids) != sorted(served):
                return (
                    f"the last assistant message carries tool_use ids {ids}, but this server last sent "
                    f"{list(served)}: the client changed or lost the model's tool calls"
                )
            return None
    return f"the history has no assistant message, but this server last sent tool_use ids {list(served)}"


def _text_of(message: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for block in _blocks(message):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_result_text(block))
    return "\n".join(parts)


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
    return str(content)


def _check_expect(
    body: Mapping[str, Any], messages: list[Any], served: Sequence[str], expect: Expect
) -> str | None:
    last = messages[-1]
    if expect.user_contains:
        if last.get("role") != "user":
            return "expect.user_contains: the last message is not a user message"
        text = _text_of(last)
        for needle in expect.user_contains:
            if needle not in text:
                return f"expect.user_contains: {needle!r} not found in the last user message: {text[:500]!r}"
    if expect.tool_results:
        results = [b for b in _blocks(last) if b.get("type") == "tool_result"]
        by_id = {str(b.get("tool_use_id")): b for b in results}
        order = list(served) if served else [str(b.get("tool_use_id")) for b in results]
        if len(order) < len(expect.tool_results):
            return f"expect.tool_results: expected {len(expect.tool_results)} tool results, got {len(order)}"
        for n, (tool_id, wanted) in enumerate(zip(order, expect.tool_results, strict=False), start=1):
            block = by_id.get(tool_id)
            if block is None:
                return f"expect.tool_results #{n}: no tool_result for {tool_id}"
            if "is_error" in wanted and bool(block.get("is_error", False)) != bool(wanted["is_error"]):
                return (
                    f"expect.tool_results #{n} ({tool_id}): is_error should be {wanted['is_error']}, "
                    f"got {block.get('is_error', False)}; content: {_result_text(block)[:300]!r}"
                )
            wanted_text = wanted.get("contains")
            if wanted_text is not None and str(wanted_text) not in _result_text(block):
                return (
                    f"expect.tool_results #{n} ({tool_id}): {wanted_text!r} not found in "
                    f"{_result_text(block)[:500]!r}"
                )
    if expect.tools:
        offered = {str(t.get("name")) for t in body.get("tools", []) if isinstance(t, Mapping)}
        missing = [t for t in expect.tools if t not in offered]
        if missing:
            return f"expect.tools: not offered: {', '.join(missing)} (offered: {', '.join(sorted(offered))})"
    if expect.system_contains is not None:
        system = body.get("system", "")
        if isinstance(system, list):
            system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
        if expect.system_contains not in str(system):
            return f"expect.system_contains: {expect.system_contains!r} not in the system prompt"
    return None
