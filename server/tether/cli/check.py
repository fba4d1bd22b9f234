"""`tether check`: ask the policy about a command without running anything.

Exit codes (relied on by scripts and the evaluation): 0 allowed, 1 denied (or *ask*: not allowed
without a person), 2 usage error.
`--jsonl` is the batch form: one JSON object per input line on stdin, one verdict per line on
stdout, in order, whatever the input (invalid JSON, NUL bytes, megabyte strings) — a bad line gets
a denial with rule `input.invalid_json`/`input.invalid_request`, never a crash.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg

if TYPE_CHECKING:
    from tether.core.session import Session

DEFAULT_MODE = "command"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="decide whether a command would be allowed (runs nothing)",
        description=(
            "Decide whether the policy allows COMMAND. Exit 0 allowed, 1 denied or asks (a person "
            "would be asked), 2 usage error."
        ),
    )
    parser.add_argument(
        "--mode",
        choices=("read", "command", "workspace"),
        default=DEFAULT_MODE,
        help=f"permission mode to decide for (default: {DEFAULT_MODE})",
    )
    add_workspace_arg(parser)
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the decision as JSON")
    out.add_argument(
        "--jsonl",
        action="store_true",
        help='read {"id": …, "cmd": …} lines on stdin, write one verdict line each',
    )
    parser.add_argument("cmd", nargs="?", metavar="COMMAND", help="the command line to check")
    parser.set_defaults(handler=_run, _parser=parser)


def _run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args._parser
    if args.jsonl and args.cmd is not None:
        parser.error("--jsonl reads commands from stdin; do not pass COMMAND")
    if not args.jsonl and args.cmd is None:
        parser.error("COMMAND is required (or use --jsonl)")

    from tether.cli._session import open_cli_session

    # The same assembled session as `tether run` and the editors: PATH tools, every config layer.
    session = open_cli_session(args)
    if args.jsonl:
        return _jsonl(args.mode, session)

    decision = session.check_command(args.cmd, args.mode)
    if args.json:
        sys.stdout.write(json.dumps(decision, ensure_ascii=False) + "\n")
    elif decision["allowed"]:
        print(f"allowed ({decision['rule']}): {decision['reason']}")
    elif decision.get("verdict") == "ask":
        print(f"ask ({decision['rule']}): {decision['reason']}")
        for segment in decision.get("ask", []):
            print(f"  asks for: {' '.join(segment['argv'])} [{segment['rule']}] {segment['reason']}")
    else:
        print(f"denied ({decision['rule']}): {decision['reason']}")
        if decision.get("suggestion"):
            print(f"suggestion: {decision['suggestion']}")
    return 0 if decision["allowed"] else 1


def _jsonl(mode: str, session: Session) -> int:
    out = sys.stdout
    for raw_line in sys.stdin.buffer:
        if not raw_line.strip():
            continue  # blank lines are not requests
        ident: Any = None
        try:
            request = json.loads(raw_line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            result = _verdict(None, False, "input.invalid_json", "the line is not valid UTF-8 JSON")
        else:
            if isinstance(request, dict):
                ident = request.get("id")
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                result = _verdict(ident, False, "input.invalid_request", 'expected {"id": …, "cmd": "…"}')
            else:
                d = session.check_command(request["cmd"], mode)
                result = _verdict(ident, d["allowed"], d["rule"], d["reason"])
        out.write(json.dumps(result, ensure_ascii=True) + "\n")
        out.flush()
    return 0


def _verdict(ident: Any, allowed: bool, rule: str, reason: str) -> dict[str, Any]:
    return {"id": ident, "allowed": allowed, "rule": rule, "reason": reason}
