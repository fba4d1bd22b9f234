"""`tether proposals | accept | reject | diff`: review dry-run edits from the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tether.cli._common import add_workspace_arg, print_json
from tether.cli._session import open_cli_session
from tether.errors import TetherError


def register(subparsers: Any) -> None:
    listing = subparsers.add_parser("proposals", help="list pending and past proposals")
    add_workspace_arg(listing)
    listing.add_argument("--all", action="store_true", help="include accepted, rejected and stale ones")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)

    for name, verb in (("accept", "apply"), ("reject", "discard")):
        parser = subparsers.add_parser(name, help=f"{verb} a proposal, or some of its hunks")
        parser.add_argument("id", metavar="ID")
        parser.add_argument(
            "--hunks", default=None, metavar="N,M", help="1-based hunk numbers (default: all)"
        )
        parser.add_argument("--json", action="store_true")
        add_workspace_arg(parser)
        parser.set_defaults(handler=_decide, verb=name)

    diff = subparsers.add_parser("diff", help="show a proposal as a unified diff")
    diff.add_argument("id", metavar="ID")
    diff.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    add_workspace_arg(diff)
    diff.set_defaults(handler=_diff)


def parse_hunks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        numbers = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError as exc:
        raise TetherError(f"--hunks must be a comma list of numbers like 1,3, not {text!r}") from exc
    if not numbers or any(n < 1 for n in numbers):
        raise TetherError("--hunks numbers start at 1")
    return numbers


def _list(args: argparse.Namespace) -> int:
    gate = open_cli_session(args).gate
    proposals = gate.proposals.list(pending_only=not args.all)
    if args.json:
        print_json({"proposals": [p.to_json(gate.workspace) for p in proposals]})
        return 0
    if not proposals:
        print("No pending proposals." if not args.all else "No proposals.")
        return 0
    for p in proposals:
        states = ", ".join(f"{h.index}:{h.state}" for h in p.hunks)
        print(f"{p.id}  {p.state:<18} {p.path}  hunks [{states}]  {p.reason}")
    return 0


def _decide(args: argparse.Namespace) -> int:
    gate = open_cli_session(args).gate
    hunks = parse_hunks(args.hunks)
    if args.verb == "accept":
        result = gate.accept(args.id, hunks, source="cli")
    else:
        result = gate.reject(args.id, hunks, source="cli")
    if args.json:
        print_json(result.to_json(gate.workspace))
    else:
        print(result.text)
        for warning in result.warnings:
            print(f"Warning: {warning}", file=sys.stderr)
        if result.checkpoint:
            print(f"Checkpoint: {result.checkpoint} (undo with `tether rollback`)")
    return 0 if result.ok else 1


def _diff(args: argparse.Namespace) -> int:
    from tether.core.diff import render_proposal

    gate = open_cli_session(args).gate
    proposal = gate.proposals.get(args.id)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    sys.stdout.write(render_proposal(proposal, color=color))
    return 0
