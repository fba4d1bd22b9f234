"""`tether/event`: every tool call and proposal decision, pushed to the client for live views.

The gate calls `send_event` from whichever thread ran the call; the notification is handed to the
event loop (the only writer of stdout), and the proposal previews are refreshed after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.lsp.server import TetherServer

EVENT = "tether/event"


def send_event(server: TetherServer, event: dict[str, Any]) -> None:
    """Notify the client of one gate event and schedule a refresh of the previews."""
    payload = {key: event.get(key) for key in ("tool", "decision", "state")}
    for key in ("proposalId", "checkpoint"):
        if event.get(key) is not None:
            payload[key] = event[key]
    server.call_soon(server.protocol.notify, EVENT, payload)
    server.previews.schedule_reload()


def register(server: TetherServer) -> None:
    """Nothing to register: events are pushed by the gate (see `TetherServer._build_gate`)."""
