"""The agent's view of a model: one request in, a stream of events out, one response at the end.

Why an interface: the loop must be testable and must not know the SDK. `anthropic_client` is the one
implementation that speaks to the Messages API (real Claude or the offline server); anything with
`stream()` of this shape can drive the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

StreamEventKind = Literal["text", "thinking", "tool_use_start", "retry", "restart"]


@dataclass(frozen=True)
class StreamEvent:
    """Something worth showing while a response streams in."""

    kind: StreamEventKind
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


StreamSink = Callable[[StreamEvent], None]


@dataclass(frozen=True)
class ModelRequest:
    """Everything one Messages API call needs — and nothing secret: this is saved to disk verbatim."""

    model: str
    max_tokens: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    system: str | None = None
    temperature: float | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": self.messages,
            "tools": self.tools,
        }
        if self.system is not None:
            body["system"] = self.system
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }

    @classmethod
    def from_json(cls, data: Any) -> Usage:
        if not isinstance(data, dict):
            return cls()
        return cls(**{k: int(data.get(k) or 0) for k in cls().to_json()})


@dataclass(frozen=True)
class ModelResponse:
    """A complete assistant message: content blocks as API dicts, ready to send back verbatim."""

    id: str
    model: str
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        """The answer's text blocks, a blank line between them: glued, two blocks read as one
        sentence ("…a float.I proposed…")."""
        blocks = (str(b.get("text", "")) for b in self.content if b.get("type") == "text")
        return "\n\n".join(block.strip() for block in blocks if block.strip())

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": self.stop_reason,
            "usage": self.usage.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        return cls(
            id=str(data.get("id", "")),
            model=str(data.get("model", "")),
            content=list(data.get("content") or []),
            stop_reason=data.get("stop_reason"),
            usage=Usage.from_json(data.get("usage")),
        )


class ModelClient(Protocol):
    async def stream(self, request: ModelRequest, sink: StreamSink) -> ModelResponse:
        """Send the request, report events to `sink` as they arrive, return the whole message.

        Raises `AgentError` (with what the user can do) for API failures; asyncio cancellation must
        close the underlying connection.
        """
        ...

    async def aclose(self) -> None: ...
