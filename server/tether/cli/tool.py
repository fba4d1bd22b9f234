"""`tether tool NAME --input JSON`: any tool through the gate, result object as JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tether.cli._common import add_workspace_arg, print_json
from tether.cli._session import add_permissions_arg, open_cli_session
from tether.errors import TetherError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tool",
        help="call any tool through the gate",
        description="Call tool NAME with a JSON object input, exactly as the agent would. "
        "Exit 0 when the tool succeeded or produced a proposal, 1 otherwise.",
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument(
        "--input", required=True, metavar="JSON", help="the tool input, a JSON object ('-' reads stdin)"
    )
    add_workspace_arg(parser)
    add_permissions_arg(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    raw = args.input
    if raw == "-":
        import sys

        raw = sys.stdin.read()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise TetherError(f"--input is not valid JSON: {exc}") from exc
    gate = open_cli_session(args, ask=True).gate
    result = gate.call(args.name, value, source="cli")
    print_json(result.to_json(gate.workspace))
    return 0 if result.ok else 1
