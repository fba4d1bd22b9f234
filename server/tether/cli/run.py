"""`tether run`: one bash_command through the whole gate (policy, sandbox, checkpoint, audit)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg, print_json
from tether.cli._session import add_permissions_arg, open_cli_session

if TYPE_CHECKING:
    from tether.core.gate import GateResult


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run one shell command through the policy and the sandbox",
        description="Run COMMAND as the agent's bash_command would: validated, sandboxed, "
        "checkpointed and logged. Without the needed permission it is a dry run.",
    )
    add_workspace_arg(parser)
    add_permissions_arg(parser)
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds (max 600)")
    parser.add_argument("--reason", default="run from the command line", help="why (recorded in the log)")
    parser.add_argument("--json", action="store_true", help="print the result object as JSON")
    parser.add_argument("command", metavar="COMMAND", help="the command line, quoted as one argument")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    gate = open_cli_session(args, timeout=args.timeout, ask=True).gate
    result = gate.call("bash_command", {"command": args.command, "reason": args.reason}, source="cli")
    if args.json:
        print_json(result.to_json(gate.workspace))
    else:
        _print_verbose(args.command, result, gate.config.sandbox.command_timeout)
    return exit_code(result)


def exit_code(result: GateResult) -> int:
    """0 for success and dry runs; the command's own code when it ran and failed; 1 otherwise."""
    if result.ok:
        return 0
    code = result.result.get("exit_code")
    if isinstance(code, int) and code > 0:
        return code
    if code == -1:
        return 124  # timed out, as timeout(1) reports it
    return 1


def _print_verbose(command: str, result: GateResult, timeout: float) -> None:
    out = sys.stdout
    out.write("Tool: bash_command\n")
    out.write(f"Command: {command}\n")
    verdict = result.verdict
    if result.state == "denied" and verdict is not None:
        out.write(f"Validation: ✗ denied [{verdict.rule}] {verdict.reason}\n")
        if verdict.suggestion:
            out.write(f"Suggestion: {verdict.suggestion}\n")
    elif verdict is not None:
        out.write(f"Validation: ✓ passed ({verdict.reason})\n")
    for warning in result.warnings:
        out.write(f"Warning: {warning}\n")
    if result.state == "denied":
        if verdict is None:
            out.write(result.text.rstrip("\n") + "\n")
        return  # the denial and its suggestion are printed above
    if result.state == "dry_run" or verdict is None:
        out.write(result.text.rstrip("\n") + "\n")
        return
    if result.checkpoint:
        out.write(f"Git: committed {result.checkpoint} (pre-tool: bash_command)\n")
    out.write(f"Executing with timeout {timeout:g}s...\n")
    body = result.result
    out.write(f"Duration: {body.get('duration_ms', result.duration_ms)}ms\n")
    if "exit_code" in body:
        out.write(f"Exit code: {body['exit_code']}\n")
    if body.get("error"):
        out.write(f"Error: {body['error']}\n")
    if body.get("stdout"):
        out.write("--- stdout ---\n" + str(body["stdout"]).rstrip("\n") + "\n")
    if body.get("stderr"):
        out.write("--- stderr ---\n" + str(body["stderr"]).rstrip("\n") + "\n")
    if body.get("suggestion"):
        out.write(f"Suggestion: {body['suggestion']}\n")
