"""Scripts for the offline Messages API: a list of steps, each answering one HTTP request.

Why a script and not a model: tests and the demo need the *real* SDK to talk *real* HTTP, and they
need the conversation to be reproducible to the byte. A step is one of

    a message   `content: [{text: …} | {tool_use: {name, input, id?}} | {thinking: …}]`, with optional
                `stop_reason`, `usage`, `expect` (checks on the request) and stream pacing
                (`chunk_delay` seconds between events, `hang_after` events then stall)
    an error    `error: {status, type?, message?, retry_after?}` — an HTTP error response
    a drop      `drop: before_response | mid_stream | stall` — the connection dies (or hangs)
    an event    `error_event: {type, message}` — HTTP 200, then an SSE `error` event mid-stream

Every step answers exactly one request, so a client retry consumes the next step: a script for
"429 then success" is `[{error: {status: 429, retry_after: 0.1}}, {content: …}]`.

`expect` keys (all optional; a failed check answers 400 and is recorded as a failure):
    user_contains: [str]        the last user message (text and tool results) contains each
    tool_results: [{is_error?: bool, contains?: str}]   positional, for the previous tool_use blocks
    tools: [name]               these tools were offered
    system_contains: str        the system prompt contains this
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tether.errors import ConfigError

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_DROP_KINDS = ("before_response", "mid_stream", "stall")


@dataclass(frozen=True)
class Expect:
    user_contains: tuple[str, ...] = ()
    tool_results: tuple[Mapping[str, Any], ...] = ()
    tools: tuple[str, ...] = ()
    system_contains: str | None = None


@dataclass(frozen=True)
class Step:
    """One scripted answer. `kind` is `message`, `error`, `drop` or `error_event`."""

    kind: str
    content: tuple[Mapping[str, Any], ...] = ()
    stop_reason: str | None = None
    usage: Mapping[str, int] | None = None
    expect: Expect = field(default_factory=Expect)
    chunk_delay: float = 0.0
    hang_after: int | None = None
    status: int = 200
    error_type: str = ""
    message: str = ""
    retry_after: float | None = None
    drop: str = ""

    @property
    def tool_use_ids(self) -> list[str]:
        return [str(b["id"]) for b in self.content if b.get("type") == "tool_use"]


@dataclass(frozen=True)
class Script:
    name: str
    steps: tuple[Step, ...]
    model: str | None = None


def load_script(path: Path) -> Script:
    """Read a YAML or JSON script; every mistake names the file and the step."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read script {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc
    return parse_script(data, name=path.stem, where=str(path))


def parse_script(data: Any, *, name: str = "script", where: str = "<script>") -> Script:
    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, Mapping) or not isinstance(data.get("turns"), list) or not data["turns"]:
        raise ConfigError(f"{where}: a script is a mapping with a non-empty `turns` list")
    unknown = set(data) - {"turns", "model", "name", "description"}
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    steps = tuple(_step(raw, i + 1, f"{where} turn {i + 1}") for i, raw in enumerate(data["turns"]))
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{where}: `model` should be a string")
    return Script(name=str(data.get("name", name)), steps=steps, model=model)


def _step(raw: Any, number: int, where: str) -> Step:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")
    allowed = {
        "content",
        "stop_reason",
        "usage",
        "expect",
        "chunk_delay",
        "hang_after",
        "error",
        "drop",
        "error_event",
        "comment",
    }
    unknown = set(raw) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s): {', '.join(sorted(unknown))}")
    kinds = [k for k in ("content", "error", "drop", "error_event") if k in raw]
    if len(kinds) != 1:
        raise ConfigError(
            f"{where}: needs exactly one of content, error, drop, error_event (got {kinds or 'none'})"
        )
    kind = kinds[0]
    if kind == "error":
        err = raw["error"]
        if not isinstance(err, Mapping) or not isinstance(err.get("status"), int):
            raise ConfigError(f"{where}: `error` needs an integer `status`")
        status = int(err["status"])
        return Step(
            kind="error",
            status=status,
            error_type=str(err.get("type", _ERROR_TYPES.get(status, "api_error"))),
            message=str(err.get("message", f"scripted error {status}")),
            retry_after=_number(err.get("retry_after"), f"{where} retry_after"),
        )
    if kind == "drop":
        if raw["drop"] not in _DROP_KINDS:
            raise ConfigError(f"{where}: `drop` should be one of {', '.join(_DROP_KINDS)}")
        return Step(kind="drop", drop=str(raw["drop"]), content=({"type": "text", "text": "partial answer"},))
    if kind == "error_event":
        ev = raw["error_event"]
        if not isinstance(ev, Mapping):
            raise ConfigError(f"{where}: `error_event` should be a mapping with type and message")
        return Step(
            kind="error_event",
            error_type=str(ev.get("type", "overloaded_error")),
            message=str(ev.get("message", "Overloaded")),
        )
    content = _content(raw["content"], number, where)
    stop = raw.get("stop_reason")
    if stop is None:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    usage = raw.get("usage")
    if usage is not None and (
        not isinstance(usage, Mapping) or not all(isinstance(v, int) and v >= 0 for v in usage.values())
    ):
        raise ConfigError(f"{where}: `usage` should map token kinds to non-negative integers")
    hang = raw.get("hang_after")
    if hang is not None and (not isinstance(hang, int) or hang < 1):
        raise ConfigError(f"{where}: `hang_after` should be a positive number of events")
    return Step(
        kind="message",
        content=tuple(content),
        stop_reason=str(stop),
        usage=dict(usage) if usage is not None else None,
        expect=_expect(raw.get("expect"), where),
        chunk_delay=_number(raw.get("chunk_delay"), f"{where} chunk_delay") or 0.0,
        hang_after=hang,
    )


def _content(raw: Any, number: int, where: str) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        raw = [{"text": raw}]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: `content` should be a non-empty list of blocks")
    blocks: list[dict[str, Any]] = []
    for n, raw_item in enumerate(raw, start=1):
        item = {"text": raw_item} if isinstance(raw_item, str) else raw_item
        if not isinstance(item, Mapping) or len(item) != 1:
            raise ConfigError(f"{where} block {n}: write one of `text: …`, `tool_use: {{…}}`, `thinking: …`")
        ((key, value),) = item.items()
        if key == "text" and isinstance(value, str):
            blocks.append({"type": "text", "text": value})
        elif key == "thinking" and isinstance(value, str):
            blocks.append(
                {"type": "thinking", "thinking": value, "signature": f"fake-signature-{number}-{n}"}
            )
        elif key == "tool_use" and isinstance(value, Mapping):
            if not isinstance(value.get("name"), str) or not isinstance(value.get("input", {}), Mapping):
                raise ConfigError(f"{where} block {n}: tool_use needs a `name` and an `input` mapping")
            tool_id = str(value.get("id") or f"toolu_fake_{number:02d}_{n:02d}")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": value["name"],
                    "input": dict(value.get("input", {})),
                }
            )
        else:
            raise ConfigError(f"{where} block {n}: unknown block {key!r} (text, tool_use or thinking)")
    ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
    if len(ids) != len(set(ids)):
        raise ConfigError(f"{where}: tool_use ids must be unique")
    return blocks


def _expect(raw: Any, where: str) -> Expect:
    if raw is None:
        return Expect()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: `expect` should be a mapping")
    unknown = set(raw) - {"user_contains", "tool_results", "tools", "system_contains"}
    if unknown:
        raise ConfigError(f"{where}: unknown expect key(s): {', '.join(sorted(unknown))}")
    user = raw.get("user_contains", [])
    user = [user] if isinstance(user, str) else user
    results = raw.get("tool_results", [])
    if not isinstance(results, Sequence) or not all(isinstance(r, Mapping) for r in results):
        raise ConfigError(f"{where}: `expect.tool_results` should be a list of mappings")
    return Expect(
        user_contains=tuple(str(u) for u in user),
        tool_results=tuple(dict(r) for r in results),
        tools=tuple(str(t) for t in raw.get("tools", [])),
        system_contains=raw.get("system_contains"),
    )


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{where}: should be a non-negative number")
    return float(value)
