"""`tether mcp [--workspace W] [--permissions P]`: the gated tools as an MCP server over stdio.

Any MCP client (Claude Code, Codex, Gemini CLI, Zed, …) gets the same seven tools Tether's own agent
gets — read_file, list_files, write_file, edit_file, grep, git_operation, bash_command — with the same
definitions, the same permission modes, the policy, the sandbox, a checkpoint before every mutating
call, and one audit line per call whose `source` names the client (`mcp:<clientInfo.name>`). Without
`write` permission an edit becomes a proposal, and the result says how the user accepts it.

A call the policy answers with *ask* becomes a form the client shows its user (MCP *elicitation*):
allow once, for the session, always, or deny with a message for the agent. A client that cannot
show one (no `elicitation` capability) gets a deny with the reason and how to allow it (fail
closed), and so does every answer but an accepted form with one of the offered choices.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg
from tether.cli._session import add_permissions_arg

if TYPE_CHECKING:
    import asyncio
    import threading

    from tether.core.approvals import ApprovalAnswer, ApprovalRequest, Approver, Choice
    from tether.core.gate import GateResult
    from tether.core.session import Session


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="the gated tools as an MCP server over stdio (docs/integrations.md)",
    )
    add_workspace_arg(parser)
    add_permissions_arg(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from tether.cli._session import open_cli_session

    session = open_cli_session(args)
    asyncio.run(serve(session))
    return 0


async def serve(session: Session) -> None:
    import asyncio
    import threading

    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from tether import __version__
    from tether.core.permissions import format_permissions

    gate = session.gate
    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
        for d in gate.tool_definitions()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments if params.arguments is not None else {}
        source = f"mcp:{client_name(ctx)}"
        approver = elicitation_approver(ctx, asyncio.get_running_loop())
        cancel = threading.Event()
        try:
            result = await asyncio.to_thread(
                gate.call, params.name, arguments, source=source, approver=approver, cancel=cancel
            )
        except BaseException:  # the client cancelled the call: stop its command, withdraw its question
            cancel.set()
            raise
        return types.CallToolResult(
            content=[types.TextContent(text=model_text(result))],
            structured_content={"state": result.state, "result": result.result, "decision": result.decision},
            is_error=result.is_error,
        )

    server: Server[Any] = Server(
        "tether",
        version=__version__,
        instructions=(
            "Tether's gated tools: every call is checked by Tether's policy, runs in its sandbox after a "
            f"checkpoint, and is audited. Permissions in force: {format_permissions(session.permissions)}."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def client_name(ctx: Any) -> str:
    """The client's own name from `initialize` (`clientInfo.name`), for the audit line's source."""
    try:
        params = ctx.session.client_params
        name = params.client_info.name if params is not None else None
    except AttributeError:
        name = None
    return str(name) if name else "unknown"


def can_elicit_forms(ctx: Any) -> bool:
    """Did the client declare form elicitation? An empty `elicitation: {}` means forms (the spec's
    rule for clients older than URL mode); `{"url": {}}` alone means it cannot show a form."""
    try:
        params = ctx.session.client_params
        declared = params.capabilities.elicitation if params is not None else None
    except AttributeError:
        return False
    return declared is not None and (declared.form is not None or declared.url is None)


def elicitation_approver(ctx: Any, loop: asyncio.AbstractEventLoop) -> Approver | None:
    """The person behind this MCP client, asked with a form; None when the client cannot show one.

    Called by the gate on the tool call's worker thread: the form is sent on the event loop, as part
    of this tool call (`related_request_id`), and its answer waited for there.
    """
    import asyncio

    from tether.core.approvals import await_answer

    if not can_elicit_forms(ctx):
        return None

    def approve(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        offered = request.choices()
        future = asyncio.run_coroutine_threadsafe(
            ctx.session.elicit_form(
                request.text(), approval_form(offered), related_request_id=ctx.request_id
            ),
            loop,
        )
        return await_answer(
            future,
            timeout=request.timeout,
            cancelled=cancel.is_set,
            parse=lambda result: elicited_answer(result, offered),
            withdraw=future.cancel,
            who="the MCP client",
        )

    return approve


def approval_form(offered: tuple[Choice, ...]) -> dict[str, Any]:
    """The form: one choice (titled, Deny preselected) and an optional message for the agent."""
    from tether.core.approvals import MAX_MESSAGE_CHARS, TITLES

    deny_first = sorted(offered, key=lambda c: c != "deny")  # a client ignoring `default` picks the first
    return {
        "type": "object",
        "properties": {
            "choice": {
                "type": "string",
                "title": "Your answer",
                "oneOf": [{"const": c, "title": TITLES[c]} for c in deny_first],
                "default": "deny",
            },
            "message": {
                "type": "string",
                "title": "Message for the agent (optional, read with a Deny)",
                "maxLength": MAX_MESSAGE_CHARS,
            },
        },
        "required": ["choice"],
    }


def elicited_answer(result: Any, offered: tuple[Choice, ...]) -> ApprovalAnswer:
    """The client's `ElicitResult` as an answer. Only an accepted form naming an offered choice can
    allow; the user declining is their deny, a dismissed form or anything malformed is a deny too."""
    from tether.core.approvals import ApprovalAnswer, denied, parse_answer

    action = getattr(result, "action", None)
    if action == "decline":
        return ApprovalAnswer("deny")
    if action != "accept":
        return denied("the question was dismissed without an answer: treated as deny")
    answer = parse_answer(getattr(result, "content", None), "the MCP client")
    if answer.choice not in offered:
        return denied(f"the MCP client answered {answer.choice!r}, which was not offered: treated as deny")
    return answer


def model_text(result: GateResult) -> str:
    """What the model reads: the gate's text, and for a proposal, how the user accepts it."""
    text = result.text
    if result.proposal is not None and result.state == "proposed":
        pid = result.proposal.id
        text += (
            f"\n\nThis is proposal {pid}; nothing was written. The user reviews it in the editor (per "
            f"hunk) or with `tether diff {pid}` and accepts it with `tether accept {pid}`."
        )
    return text
