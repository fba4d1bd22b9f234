"""The agent: Claude's tool calls, each one through the gate.

    agent = create_agent(gate, config.agent)          # raises AgentError when no key is available
    result = await agent.ask("fix the failing test", cancel=threading.Event())
    result.to_json()   # {text, conversationId, stopReason, toolCalls, usage, cost, …}

Only `anthropic_client` imports the SDK, and only when a client is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tether.agent.conversations import ConversationStore
from tether.agent.executor import GateExecutor, ToolExecutor, ToolReport
from tether.agent.loop import (
    Agent,
    AgentEvent,
    EventSink,
    ReplayResult,
    ToolCallRecord,
    TurnResult,
    stats_summary,
)
from tether.agent.model import ModelClient, ModelRequest, ModelResponse, Usage

if TYPE_CHECKING:
    from tether.core.config import AgentSettings
    from tether.core.gate import Gate


def create_agent(
    gate: Gate,
    settings: AgentSettings,
    *,
    on_event: EventSink | None = None,
    environ: Mapping[str, str] | None = None,
    client: ModelClient | None = None,
    with_client: bool = True,
    client_options: Mapping[str, Any] | None = None,
) -> Agent:
    """An agent over `gate`'s workspace; `with_client=False` for replay/stats (no key needed)."""
    secrets: list[str] = []
    if client is None and with_client:
        from tether.agent.anthropic_client import AnthropicModelClient, resolve_endpoint

        endpoint = resolve_endpoint(settings, environ)
        if not endpoint.placeholder_key:
            secrets.append(endpoint.api_key)
        client = AnthropicModelClient(endpoint, **dict(client_options or {}))
    store = ConversationStore(gate.workspace)
    return Agent(
        GateExecutor(gate),
        settings,
        store,
        client,
        workspace=gate.workspace,
        on_event=on_event,
        secrets=secrets,
    )


__all__ = [
    "Agent",
    "AgentEvent",
    "ConversationStore",
    "EventSink",
    "GateExecutor",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ReplayResult",
    "ToolCallRecord",
    "ToolExecutor",
    "ToolReport",
    "TurnResult",
    "Usage",
    "create_agent",
    "stats_summary",
]
