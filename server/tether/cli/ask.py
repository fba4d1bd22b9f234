"""`tether ask PROMPT`: one agent turn in the terminal — the model's tool calls go through the gate.

Exit codes: 0 the turn ended normally; 1 it stopped early (max cost, max tokens, round limit,
refusal); 2 an error (API failure, bad option); 130 cancelled with Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg
from tether.cli._session import add_permissions_arg, open_cli_session
from tether.errors import TetherError

if TYPE_CHECKING:
    from rich.console import Console

    from tether.agent.loop import Agent, TurnResult
    from tether.core.gate import Gate

VERBOSITIES = ("silent", "normal", "verbose", "debug")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="run an agent turn: Claude's tool calls go through the gate",
        description="Send PROMPT to Claude with the gate's tools. Streams the answer, shows each tool call "
        "with its verdict and any diff. Exit 0 when the turn ended normally, 1 when it stopped early "
        "(max cost, max tokens), 2 on errors, 130 when cancelled.",
    )
    add_workspace_arg(parser)
    add_permissions_arg(parser)
    parser.add_argument(
        "--max-cost", type=float, metavar="D", help="stop before this turn would cost more (USD)"
    )
    parser.add_argument("--model", "-m", metavar="M", help="Claude model id (default from config)")
    parser.add_argument("--conversation", "-c", metavar="ID", help="continue (or name) this conversation")
    parser.add_argument(
        "--continue", dest="continue_last", action="store_true", help="continue the most recent conversation"
    )
    parser.add_argument("--max-tokens", type=int, metavar="N", help="max output tokens per request")
    parser.add_argument("--verbosity", choices=VERBOSITIES, help="silent, normal (default), verbose or debug")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v verbose, -vv debug")
    parser.add_argument("-q", "--quiet", action="store_true", help="same as --verbosity silent")
    parser.add_argument("--stats", action="store_true", help="print token, cost and tool-call totals")
    parser.add_argument(
        "--replay",
        nargs="?",
        const="",
        metavar="TIMESTAMP",
        help="run the tool calls of a saved response again (latest if no TIMESTAMP), without the model",
    )
    parser.add_argument(
        "--prune", type=int, metavar="N", help="keep only the newest N request/response pairs"
    )
    parser.add_argument("--json", action="store_true", help="print the turn's result as JSON on stdout")
    parser.add_argument("prompt", nargs="*", metavar="PROMPT", help="the request ('-' reads stdin)")
    parser.set_defaults(handler=_run)


def _verbosity(args: argparse.Namespace, default: str) -> str:
    if args.quiet:
        return "silent"
    if args.verbosity:
        return str(args.verbosity)
    if args.verbose:
        return "debug" if args.verbose > 1 else "verbose"
    return default


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tether.agent import ConversationStore, create_agent, stats_summary
    from tether.agent.render import TerminalRenderer, print_stats

    prompt = " ".join(args.prompt).strip()
    if prompt == "-":
        prompt = sys.stdin.read().strip()
    if args.max_cost is not None and args.max_cost < 0:
        raise TetherError("--max-cost must be >= 0")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise TetherError("--max-tokens must be >= 1")
    if args.prune is not None and args.prune < 0:
        raise TetherError("--prune must be >= 0")
    if not prompt and args.replay is None and not args.stats and args.prune is None:
        raise TetherError("nothing to do: give a PROMPT (or --replay, --stats, --prune)")

    gate = open_cli_session(args, ask=True).gate
    settings = gate.config.agent
    changes: dict[str, Any] = {"verbosity": _verbosity(args, settings.verbosity)}
    if args.model:
        changes["model"] = args.model
    if args.max_cost is not None:
        changes["max_cost"] = args.max_cost
    if args.max_tokens is not None:
        changes["max_tokens"] = args.max_tokens
    settings = replace(settings, **changes)
    console = Console(stderr=args.json, highlight=False)
    renderer = TerminalRenderer(console, settings.verbosity)
    store = ConversationStore(gate.workspace)
    conversation_id = args.conversation
    if args.continue_last and conversation_id is None:
        conversation_id = store.latest_id()
        if conversation_id is None:
            raise TetherError("--continue: there is no conversation yet in this workspace")

    code = 0
    if args.prune is not None:
        removed = store.prune_old(args.prune)
        console.print(f"Pruned {removed} file(s); kept the newest {args.prune} request/response pair(s).")
    if args.replay is not None:
        agent = create_agent(gate, settings, on_event=renderer, with_client=False)
        replay_id = conversation_id or store.latest_id()
        if replay_id is None:
            raise TetherError("--replay: there is no saved conversation in this workspace")
        code = _replay(agent, replay_id, args.replay or None, console, args.json)
    elif prompt:
        agent = create_agent(gate, settings, on_event=renderer)
        if settings.verbosity != "silent":
            _header(console, gate, settings.model, settings.verbosity)
        result = _ask(agent, prompt, conversation_id, console)
        if result is None:
            return 130
        renderer.summary(result)
        if settings.verbosity == "silent" and result.text:
            console.print(result.text, markup=False, highlight=False)
        if args.json:
            sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
        code = 0 if result.ended_normally else (130 if result.stop_reason == "cancelled" else 1)
    if args.stats:
        print_stats(console, stats_summary(store))
    return code


def _header(console: Console, gate: Gate, model: str, verbosity: str) -> None:
    from tether.core.permissions import format_permissions

    permissions = format_permissions(gate.permissions)
    if verbosity in ("verbose", "debug"):
        line = f"workspace {gate.workspace} · permissions {permissions} · model {model}"
        console.print(line, style="dim", markup=False, highlight=False)
    if permissions == "none":
        console.print(
            "Permissions: none — every tool call is a dry run. Use --permissions read,command "
            "(edits stay proposals) or all.",
            style="yellow",
            markup=False,
            highlight=False,
        )


def _ask(agent: Agent, prompt: str, conversation_id: str | None, console: Console) -> TurnResult | None:
    """Run the turn; Ctrl-C once cancels cleanly (stream closed, command killed, recorded), twice aborts."""
    import asyncio

    cancel = threading.Event()

    async def main() -> TurnResult:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        presses = 0

        def on_sigint() -> None:
            nonlocal presses
            presses += 1
            cancel.set()
            if presses == 1:
                console.print("\n[yellow]Cancelling… (Ctrl-C again to abort)[/yellow]")
            elif task is not None:
                task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return await agent.ask(prompt, conversation_id=conversation_id, cancel=cancel)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            if agent.client is not None:
                with contextlib.suppress(Exception):
                    await agent.client.aclose()

    try:
        return asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        console.print("[yellow]Aborted; the turn was recorded as cancelled.[/yellow]")
        return None


def _replay(agent: Agent, conversation_id: str, stamp: str | None, console: Console, as_json: bool) -> int:
    import asyncio

    result = asyncio.run(agent.replay(conversation_id, stamp))
    failed = sum(1 for call in result.tool_calls if call.outcome.is_error)
    console.print(
        f"Replayed {len(result.tool_calls)} tool call(s) of response {result.stamp} in conversation "
        f"{result.conversation_id}: {failed} failed or denied.",
        markup=False,
        highlight=False,
    )
    if as_json:
        payload = {
            "conversationId": result.conversation_id,
            "stamp": result.stamp,
            "toolCalls": [call.to_json() for call in result.tool_calls],
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    return 0
