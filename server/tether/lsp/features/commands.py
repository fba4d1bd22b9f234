"""`workspace/executeCommand`: every `tether.*` command (docs/lsp.md), each one JSON object in and out.

Handlers are thin: validate the argument (`tether.lsp.params`), call the gate on a worker thread,
shape the result. Tether errors become JSON-RPC errors only here (`tether.lsp.errors`); an
unexpected exception becomes an InternalError response and the server keeps answering.
"""

# No `from __future__ import annotations`: pygls resolves the handlers' annotations at call time.

import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether import __version__
from tether.errors import TetherError
from tether.lsp.errors import ParamsError, request_failed, to_jsonrpc
from tether.lsp.features.apply import follow_disk_changes, open_buffer_states
from tether.lsp.features.chat import TurnStream, new_turn_id
from tether.lsp.features.progress import cancel_all, work_progress
from tether.lsp.params import Args, one_object
from tether.lsp.server import TetherServer

if TYPE_CHECKING:
    from tether.core.gate import Gate

log = logging.getLogger(__name__)
Handler = Callable[[TetherServer, Args], Awaitable[dict[str, Any]]]
COMMANDS: dict[str, Handler] = {}

MAX_PROMPT_CHARS = 200_000
MAX_COMMAND_CHARS = 100_000


def command(name: str) -> Callable[[Handler], Handler]:
    def add(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return add


# --- helpers ---------------------------------------------------------------------------------------


async def _gate(ls: TetherServer) -> "Gate":
    """The session's gate (built on a worker thread the first time: it reads config files)."""
    return await ls.run_blocking(ls.gate)


def _current_text(ls: TetherServer, workspace: Path, rel: str) -> str:
    """The file as the user sees it: open buffer, else disk (worker thread)."""
    from tether.core.proposals import read_current_text

    document = ls.documents.get(workspace / rel)
    if document is not None:
        return document.text
    try:
        return read_current_text(workspace, rel)
    except TetherError:
        return ""


def _proposal_json(ls: TetherServer, workspace: Path, proposal: Any) -> dict[str, Any]:
    result: dict[str, Any] = proposal.to_json(workspace, current=_current_text(ls, workspace, proposal.path))
    return result


async def _refresh_previews(ls: TetherServer) -> None:
    """Publish the previews before the command answers, so the client sees them together."""
    await ls.run_blocking(ls.previews.reload)


# --- commands ------------------------------------------------------------------------------------


@command("tether.status")
async def status(ls: TetherServer, args: Args) -> dict[str, Any]:
    args.done()
    gate = await _gate(ls)
    info = await ls.run_blocking(gate.status)
    agent = gate.config.agent
    return {
        "version": __version__,
        **info,
        "model": agent.model,
        "apiKeyPresent": bool(agent.api_key or os.environ.get("ANTHROPIC_API_KEY")),
    }


@command("tether.ask")
async def ask(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.lsp.features.agent import run_agent_turn

    prompt = args.required_string("prompt", max_chars=MAX_PROMPT_CHARS)
    conversation_id = args.string("conversationId", max_chars=200)
    turn_id = args.string("turnId", max_chars=100) or new_turn_id()
    args.done()
    if turn_id in ls.turns:
        raise ParamsError(f"tether.ask: turn {turn_id!r} is already running; choose another turnId")
    gate = await _gate(ls)
    stream = TurnStream(ls, turn_id, conversation_id) if ls.options.chat else None
    before = await ls.run_blocking(open_buffer_states, ls, gate.workspace)
    try:
        async with work_progress(ls, "Tether: agent turn") as progress:
            ls.turns[turn_id] = progress.cancel
            try:
                result = await run_agent_turn(ls, prompt, conversation_id, progress, stream)
            except Exception as exc:
                if stream is not None:  # the view must not wait for a turn that will never stop
                    stream.send("stopped", stopReason="error", message=str(exc))
                raise
            finally:
                ls.turns.pop(turn_id, None)
    finally:
        updated = await ls.run_blocking(follow_disk_changes, ls, gate.workspace, before)
    result["buffersUpdated"] = updated
    result["turnId"] = turn_id
    await _refresh_previews(ls)
    return result


@command("tether.runTool")
async def run_tool(ls: TetherServer, args: Args) -> dict[str, Any]:
    name = args.required_string("name", max_chars=100)
    tool_input = args.obj("input")
    args.done()
    gate = await _gate(ls)
    before = await ls.run_blocking(open_buffer_states, ls, gate.workspace)
    async with work_progress(ls, f"Tether: {name}") as progress:
        result = await ls.run_blocking(
            lambda: gate.call(
                name, tool_input if tool_input is not None else {}, source="lsp", cancel=progress.cancel
            )
        )
    answer: dict[str, Any] = {"result": result.to_json()}  # proposal ranges: against the buffer, below
    if result.ok and not result.dry_run:
        answer["buffersUpdated"] = await ls.run_blocking(follow_disk_changes, ls, gate.workspace, before)
    if result.proposal is not None:
        proposal = await ls.run_blocking(_proposal_json, ls, gate.workspace, result.proposal)
        answer["result"]["proposal"] = proposal
        answer["proposal"] = proposal
    await _refresh_previews(ls)
    return answer


@command("tether.proposals")
async def proposals(ls: TetherServer, args: Args) -> dict[str, Any]:
    pending = args.boolean("pending")
    args.done()
    gate = await _gate(ls)

    def listing() -> list[dict[str, Any]]:
        return [_proposal_json(ls, gate.workspace, p) for p in gate.proposals.list(pending_only=pending)]

    return {"proposals": await ls.run_blocking(listing)}


@command("tether.proposal")
async def proposal(ls: TetherServer, args: Args) -> dict[str, Any]:
    proposal_id = args.required_string("id", max_chars=100)
    args.done()
    gate = await _gate(ls)
    found = await ls.run_blocking(gate.proposals.get, proposal_id)
    return {
        "proposal": await ls.run_blocking(_proposal_json, ls, gate.workspace, found),
        "baseContent": found.base_content,
        "proposedContent": found.new_content,
    }


@command("tether.diff")
async def show_diff(ls: TetherServer, args: Args) -> dict[str, Any]:
    """The unified diff of a proposal (or some hunks); also shown as a message for plain clients."""
    from lsprotocol import types

    proposal_id = args.required_string("id", max_chars=100)
    hunks = args.hunks()
    args.done()
    gate = await _gate(ls)
    found = await ls.run_blocking(gate.proposals.get, proposal_id)
    selected = [found.hunk(i) for i in hunks] if hunks is not None else found.hunks
    text = f"--- a/{found.path}\n+++ b/{found.path}\n" + "".join(h.diff for h in selected)
    ls.show_message(f"Tether proposal {found.id} ({found.reason}):\n{text}", types.MessageType.Info)
    return {"diff": text}


def _check_selection(found: Any, hunks: list[int] | None) -> None:
    if hunks is None:
        return
    for index in hunks:
        found.hunk(index)  # ProposalError (InvalidParams) for an index the proposal does not have


@command("tether.accept")
async def accept(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.lsp.features.apply import EditorApply

    proposal_id = args.required_string("id", max_chars=100)
    hunks = args.hunks()
    review = args.boolean("review")
    args.done()
    gate = await _gate(ls)
    found = await ls.run_blocking(gate.proposals.get, proposal_id)
    _check_selection(found, hunks)
    editor = EditorApply(ls, review=review)
    async with ls.decisions:
        began = time.perf_counter()
        result = await ls.run_blocking(lambda: gate.accept(proposal_id, hunks, apply=editor, source="lsp"))
        accepted = time.perf_counter()
        await _refresh_previews(ls)
    log.info(
        "accept %s: gate %.1f ms (editor round trip %.1f ms), previews %.1f ms",
        proposal_id,
        (accepted - began) * 1000,
        editor.round_trip_ms,
        (time.perf_counter() - accepted) * 1000,
    )
    if not result.ok:
        message = result.result.get("error", result.text)
        if editor.failure:
            message = f"{message} ({editor.failure})"
        raise request_failed(message, result.to_json(gate.workspace))
    return {
        "proposal": await ls.run_blocking(_proposal_json, ls, gate.workspace, result.proposal),
        "applied": result.result.get("applied", []),
        "checkpoint": result.checkpoint,
        "appliedVia": "editor" if editor.sent else "disk",
        "warnings": result.warnings,
    }


@command("tether.reject")
async def reject(ls: TetherServer, args: Args) -> dict[str, Any]:
    proposal_id = args.required_string("id", max_chars=100)
    hunks = args.hunks()
    args.done()
    gate = await _gate(ls)
    found = await ls.run_blocking(gate.proposals.get, proposal_id)
    _check_selection(found, hunks)
    async with ls.decisions:
        result = await ls.run_blocking(lambda: gate.reject(proposal_id, hunks, source="lsp"))
        await _refresh_previews(ls)
    if not result.ok:
        raise request_failed(result.result.get("error", result.text), result.to_json(gate.workspace))
    return {
        "proposal": await ls.run_blocking(_proposal_json, ls, gate.workspace, result.proposal),
        "rejected": result.result.get("rejected", []),
    }


@command("tether.rollback")
async def rollback(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.lsp.features.apply import sync_buffers_with_disk

    steps = args.integer("steps", low=1, high=10_000)
    target = args.string("checkpoint", max_chars=200)
    dry_run = args.boolean("dryRun")
    args.done()
    if steps is not None and target is not None:
        raise ParamsError("tether.rollback: give `steps` or `checkpoint`, not both")
    gate = await _gate(ls)
    async with ls.decisions, work_progress(ls, "Tether: rollback"):
        result = await ls.run_blocking(
            lambda: gate.rollback(steps=steps, to=target, dry_run=dry_run, source="lsp")
        )
    if not result.ok:
        raise request_failed(result.result.get("error", result.text), result.to_json(gate.workspace))
    payload = {k: v for k, v in result.result.items() if k != "ok"}
    payload["dryRun"] = dry_run
    if not dry_run:
        changed = [*payload["restored"], *payload["deleted"]]
        payload["buffersUpdated"] = await ls.run_blocking(sync_buffers_with_disk, ls, gate.workspace, changed)
        await _refresh_previews(ls)
    return payload


@command("tether.checkpoints")
async def checkpoints(ls: TetherServer, args: Args) -> dict[str, Any]:
    args.done()
    gate = await _gate(ls)
    async with work_progress(ls, "Tether: checkpoints"):
        listed = await ls.run_blocking(gate.checkpoints)
    return {"checkpoints": listed}


@command("tether.toolLog")
async def tool_log(ls: TetherServer, args: Args) -> dict[str, Any]:
    n = args.integer("n", low=1, high=100_000)
    args.done()
    gate = await _gate(ls)
    return {"entries": await ls.run_blocking(gate.log, n)}


@command("tether.setPermissions")
async def set_permissions(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.core.permissions import format_permissions, parse_permissions
    from tether.errors import ConfigError

    text = args.required_string("permissions", max_chars=100)
    args.done()
    try:
        permissions = parse_permissions(text)
    except ConfigError as exc:
        raise ParamsError(f"tether.setPermissions: {exc}") from None
    session = await ls.run_blocking(ls.session)
    result = await ls.run_blocking(lambda: session.set_permissions(permissions, source="lsp"))
    if not result.ok:
        raise request_failed(f"tether.setPermissions: {result.result.get('error', result.text)}")
    return {"permissions": format_permissions(session.permissions)}


@command("tether.allowSecret")
async def allow_secret(ls: TetherServer, args: Args) -> dict[str, Any]:
    """The person lets one secret file through for this session (docs/secrets.md)."""
    path = args.required_string("path", max_chars=4096)
    args.done()
    gate = await _gate(ls)
    result = await ls.run_blocking(lambda: gate.allow_secret(path, source="lsp"))
    if not result.ok:
        raise request_failed(f"tether.allowSecret: {result.result.get('error', result.text)}")
    return {"path": result.result["path"], "allowed": result.result["allowed"]}


@command("tether.checkCommand")
async def check_command(ls: TetherServer, args: Args) -> dict[str, Any]:
    text = args.string("command", required=True, max_chars=MAX_COMMAND_CHARS)
    mode = args.string("mode") or "command"
    args.done()
    if mode not in ("read", "command", "workspace"):
        raise ParamsError(
            f"tether.checkCommand: `mode` must be 'read' or 'command' (or 'workspace'), not {mode!r}"
        )
    gate = await _gate(ls)
    decision: dict[str, Any] = await ls.run_blocking(gate.check_command, text, mode)
    return decision


@command("tether.explain")
async def explain(ls: TetherServer, args: Args) -> dict[str, Any]:
    text = args.string("command", required=True, max_chars=MAX_COMMAND_CHARS)
    mode = args.string("mode")
    args.done()
    if mode not in (None, "read", "command", "workspace"):
        raise ParamsError(
            f"tether.explain: `mode` must be 'read' or 'command' (or 'workspace'), not {mode!r}"
        )
    session = await ls.run_blocking(ls.session)
    report: dict[str, Any] = await ls.run_blocking(session.explain, text, mode)
    return report


@command("tether.cancel")
async def cancel(ls: TetherServer, args: Args) -> dict[str, Any]:
    turn_id = args.string("turnId", max_chars=100)
    args.done()
    if turn_id is None:
        return {"cancelled": cancel_all(ls)}
    event = ls.turns.get(turn_id)
    if event is not None:
        event.set()
    return {"cancelled": event is not None}


@command("tether.conversations")
async def conversations(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.agent import ConversationStore

    args.done()
    gate = await _gate(ls)
    store = ConversationStore(gate.workspace)

    def listing() -> dict[str, Any]:
        found = sorted((c.summary() for c in store.list()), key=lambda c: str(c["updated"]), reverse=True)
        return {"conversations": found, "latest": store.latest_id()}

    return await ls.run_blocking(listing)


@command("tether.conversation")
async def conversation(ls: TetherServer, args: Args) -> dict[str, Any]:
    from tether.agent import ConversationStore

    conversation_id = args.required_string("id", max_chars=200)
    args.done()
    gate = await _gate(ls)
    found = await ls.run_blocking(ConversationStore(gate.workspace).open, conversation_id)
    return {**found.summary(), "entries": found.transcript()}


# --- registration ------------------------------------------------------------------------------


def _wrap(name: str, fn: Handler) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def handler(ls: TetherServer, *arguments: Any) -> dict[str, Any]:
        try:
            if ls.workspace_root is None:
                from tether.lsp.errors import NoWorkspace

                raise NoWorkspace()
            return await fn(ls, one_object(name, arguments))
        except TetherError as exc:
            raise to_jsonrpc(exc) from exc

    handler.__name__ = handler.__qualname__ = name.replace(".", "_")
    return handler


def register(server: TetherServer) -> None:
    for name, fn in COMMANDS.items():
        server.command(name)(_wrap(name, fn))
