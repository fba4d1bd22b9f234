"""`tether mcp [--workspace W] [--permissions P]`: the gated tools as an MCP server over stdio.

Any MCP client (Claude Code, Codex, Gemini CLI, Zed, …) gets the same seven tools Tether's own agent
gets — read_file, list_files, write_file, edit_file, grep, git_operation, bash_command — with the same
definitions, the same permission modes, the policy, the sandbox, a checkpoint before every mutating
call, and one audit line per call whose `source` names the client (`mcp:<clientInfo.name>`). Without
`write` permission an edit becomes a proposal, and the result says how the user accepts it.

A call the policy answers with *ask* is denied here, with the reason and how to allow it: an MCP
server has no person to ask (fail closed).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg
from tether.cli._session import add_permissions_arg

if TYPE_CHECKING:
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
        result = await asyncio.to_thread(gate.call, params.name, arguments, source=source)
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
