"""`tether acp [--workspace W] [--permissions P]`: Tether's agent as an ACP agent over stdio.

Editors that speak ACP (Zed, JetBrains IDEs, codecompanion.nvim, avante.nvim) start `tether acp` and
talk to it: each ACP session is a Tether conversation in the session's working directory; a prompt
runs one agent turn whose text streams as message chunks and whose tool calls are ACP tool calls
with Tether's verdict and state; an *ask* becomes `session/request_permission`; a proposed edit
is reported as an ACP diff; `session/cancel` stops the turn. Built on the `agent-client-protocol`
SDK (docs/integrations.md).
"""

from __future__ import annotations

import argparse
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tether.cli._common import add_workspace_arg, resolve_workspace
from tether.cli._session import add_permissions_arg

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import ToolKind

    from tether.agent import Agent, AgentEvent
    from tether.core.approvals import ApprovalAnswer, ApprovalRequest
    from tether.core.gate import Gate

APPROVAL_OPTIONS = (
    ("allow_once", "Allow once", "allow_once"),
    ("allow_session", "Allow for this session", "allow_always"),
    ("allow_always", "Always allow (adds a rule to your Tether user config)", "allow_always"),
    ("deny", "Deny", "reject_once"),
)
"""Tether's four answers as ACP permission options: (option id = Tether's choice, name, ACP kind)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "acp", help="Tether's agent over the Agent Client Protocol on stdio (Zed, JetBrains, Neovim plugins)"
    )
    add_workspace_arg(
        parser, help="the workspace for every session (default: each session's cwd, as the editor sends it)"
    )
    add_permissions_arg(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from acp import run_agent

    workspace = str(resolve_workspace(args.workspace)) if args.workspace else None
    asyncio.run(run_agent(TetherAcpAgent(args.permissions, workspace)))  # type: ignore[arg-type]
    return 0


@dataclass
class _Session:
    agent: Agent
    gate: Gate
    cwd: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    current_tool: str | None = None


class TetherAcpAgent:
    """The ACP side of Tether's agent: one Tether session (and conversation) per ACP session."""

    def __init__(self, permissions: str | None, workspace: str | None = None) -> None:
        self.permissions = permissions
        self.workspace = workspace  # `--workspace`: wins over the cwd each session names
        self.sessions: dict[str, _Session] = {}
        self.conn: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
        from acp import PROTOCOL_VERSION, InitializeResponse
        from acp.schema import AgentCapabilities, Implementation

        from tether import __version__

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="tether", title="Tether", version=__version__),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        from acp import NewSessionResponse

        session = self._open(cwd)
        conversation = session.agent.store.open_or_create(None, session.agent.settings.model)
        self.sessions[conversation.id] = session
        return NewSessionResponse(session_id=conversation.id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> Any:
        """Resume a Tether conversation: its history is replayed as session updates first."""
        from acp import LoadSessionResponse, update_agent_message_text, update_user_message_text

        session = self._open(cwd)
        conversation = session.agent.store.open(session_id)
        self.sessions[session_id] = session
        for entry in conversation.transcript():
            text = str(entry.get("text") or "")
            if entry.get("role") == "user" and text:
                await self._update(session_id, update_user_message_text(text))
            elif entry.get("role") == "assistant" and text:
                await self._update(session_id, update_agent_message_text(text))
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        import asyncio

        from acp import PromptResponse, RequestError

        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}"})
        text = "\n\n".join(
            str(getattr(block, "text", "")) for block in prompt if getattr(block, "type", "") == "text"
        )
        session.cancel = threading.Event()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()

        def on_event(event: AgentEvent) -> None:  # from the agent's threads: onto this loop
            loop.call_soon_threadsafe(queue.put_nowait, event)

        session.agent.on_event = on_event
        turn = asyncio.ensure_future(
            session.agent.ask(text, conversation_id=session_id, cancel=session.cancel)
        )
        turn.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        while (event := await queue.get()) is not None:
            await self._forward(session_id, session, event)
        result = turn.result()
        stop: Literal["end_turn", "max_tokens", "cancelled"] = "end_turn"
        if result.stop_reason in ("cancelled", "max_tokens"):
            stop = "cancelled" if result.stop_reason == "cancelled" else "max_tokens"
        return PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel.set()

    # --- what a turn shows ------------------------------------------------------------------------

    async def _forward(self, session_id: str, session: _Session, event: AgentEvent) -> None:
        from acp import (
            start_tool_call,
            text_block,
            tool_content,
            tool_diff_content,
            update_agent_message_text,
            update_tool_call,
        )

        if event.kind == "text" and event.text:
            await self._update(session_id, update_agent_message_text(event.text))
        elif event.kind == "tool_start":
            tool_id = str(event.data.get("id") or "")
            session.current_tool = tool_id
            name = str(event.data.get("name") or "tool")
            await self._update(
                session_id,
                start_tool_call(
                    tool_id,
                    event.text or name,
                    kind=_kind(name),
                    status="in_progress",
                    raw_input=event.data.get("input"),
                ),
            )
        elif event.kind == "tool_result":
            record = event.data.get("record")
            if record is None:
                return
            report = record.outcome
            content: list[Any] = [tool_content(text_block(report.content))]
            if report.diff and report.proposal_id:
                path = str(record.input.get("path", ""))
                proposed = _proposed_text(session, report.proposal_id)
                if proposed is not None:
                    content.insert(0, tool_diff_content(path, proposed[1], proposed[0]))
            status: Literal["failed", "completed"] = "failed" if report.is_error else "completed"
            await self._update(
                session_id,
                update_tool_call(
                    record.id,
                    status=status,
                    content=content,
                    raw_output={
                        "verdict": report.verdict,
                        "rule": report.rule,
                        "reason": report.reason,
                        "proposalId": report.proposal_id,
                    },
                ),
            )

    async def _update(self, session_id: str, update: Any) -> None:
        if self.conn is not None:
            await self.conn.session_update(session_id=session_id, update=update)

    # --- sessions and approvals ----------------------------------------------------------------------

    def _open(self, cwd: str) -> _Session:
        import asyncio

        from tether.agent import create_agent
        from tether.core.session import FaceOverrides, open_session

        loop = asyncio.get_running_loop()
        holder: dict[str, _Session] = {}
        approver = lambda request, cancel: self._approve(loop, holder["session"], request, cancel)  # noqa: E731
        workspace = resolve_workspace(self.workspace or cwd)
        tether_session = open_session(
            workspace,
            FaceOverrides(permissions=self.permissions),
            approver=approver,
        )
        agent = create_agent(tether_session.gate, tether_session.config.agent)
        session = _Session(agent=agent, gate=tether_session.gate, cwd=workspace)
        holder["session"] = session
        return session

    def _approve(
        self, loop: Any, session: _Session, request: ApprovalRequest, cancel: threading.Event
    ) -> ApprovalAnswer:
        """Called by the gate on the tool call's worker thread: ask the client, wait for the answer."""
        import asyncio

        from acp.schema import PermissionOption, ToolCallUpdate

        from tether.core.approvals import ApprovalAnswer, await_answer, denied

        session_id = next((sid for sid, s in self.sessions.items() if s is session), None)
        if self.conn is None or session_id is None:
            return denied("no ACP client to ask: treated as deny")
        options = [
            PermissionOption(option_id=option, name=name, kind=kind)  # type: ignore[arg-type]
            for option, name, kind in APPROVAL_OPTIONS
            if option in request.choices()
        ]
        tool_call = ToolCallUpdate(
            tool_call_id=session.current_tool or request.id,
            title=f"{request.command} — {request.reason} ({request.rule})",
            status="pending",
            raw_input=request.to_json(),
        )
        future = asyncio.run_coroutine_threadsafe(
            self.conn.request_permission(session_id=session_id, tool_call=tool_call, options=options), loop
        )

        def parse(response: Any) -> ApprovalAnswer:
            outcome = response.outcome
            selected = getattr(outcome, "outcome", "") == "selected"
            choice = getattr(outcome, "option_id", None) if selected else None
            if choice in ("allow_once", "allow_session", "allow_always", "deny"):
                return ApprovalAnswer(choice)
            return denied("the client cancelled the question: treated as deny")

        return await_answer(
            future,
            timeout=request.timeout,
            cancelled=lambda: cancel.is_set() or session.cancel.is_set(),
            parse=parse,
            withdraw=future.cancel,
            who="the client",
        )


def _kind(tool: str) -> ToolKind:
    kinds: dict[str, ToolKind] = {
        "read_file": "read",
        "list_files": "read",
        "grep": "search",
        "write_file": "edit",
        "edit_file": "edit",
        "bash_command": "execute",
        "git_operation": "execute",
    }
    return kinds.get(tool, "other")


def _proposed_text(session: _Session, proposal_id: str) -> tuple[str, str] | None:
    """The proposal's (old, new) text, for an ACP diff the editor can show."""
    try:
        proposal = session.gate.proposals.get(proposal_id)
    except Exception:
        return None
    return proposal.base_content, proposal.new_content
