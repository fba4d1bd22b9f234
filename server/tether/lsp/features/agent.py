"""`tether.ask`: one agent turn, its tool calls through this session's gate.

The seam to `tether.agent` is this one function; the agent package (and the Anthropic SDK behind it)
is imported only when a turn is asked for, so `tether serve` starts fast and works without a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.lsp.features.chat import TurnStream
    from tether.lsp.features.progress import Reporter
    from tether.lsp.server import TetherServer

REPORTED = {"tool_start", "tool_result", "retry", "notice", "stopped"}


async def run_agent_turn(
    server: TetherServer,
    prompt: str,
    conversation_id: str | None,
    progress: Reporter,
    stream: TurnStream | None = None,
) -> dict[str, Any]:
    """Run the turn to its end (answer, max cost, cancel); AgentError when no model is set up.

    `stream`, for clients with a chat view, gets every event as it happens (`tether/turn`).
    """
    from tether.agent import AgentEvent, create_agent

    gate = server.gate()

    def on_event(event: AgentEvent) -> None:
        if stream is not None:
            stream.on_event(event)
        if event.kind in REPORTED:
            progress.report(f"{event.kind.replace('_', ' ')}: {event.text}" if event.text else event.kind)

    agent = create_agent(gate, gate.config.agent, on_event=on_event)
    try:
        result = await agent.ask(prompt, conversation_id=conversation_id, cancel=progress.cancel)
    finally:
        client = agent.client
        if client is not None:
            await client.aclose()
    answer: dict[str, Any] = result.to_json()
    return answer
