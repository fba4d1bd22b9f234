"""`tether log [N] [--json] [--verify]`: read the audit log (seed `--tool-log [N]`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tether.cli._common import add_workspace_arg, print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("log", help="show the last N audited tool calls (default 20)")
    parser.add_argument("n", nargs="?", type=int, default=None, metavar="N")
    parser.add_argument("--json", action="store_true", help="one JSON object per line, as stored")
    parser.add_argument("--verify", action="store_true", help="check the hash chain; exit 1 if broken")
    add_workspace_arg(parser)
    parser.set_defaults(handler=_log)


def _summary(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        for key in ("command", "path", "pattern", "message"):
            if value.get(key):
                value = value[key]
                break
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _log(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    gate = open_cli_session(args).gate
    if args.verify:
        result = gate.verify_log()
        if args.json:
            print_json(result.to_json())
        elif result.ok:
            torn = f"; skipped torn line(s) {list(result.torn_lines)}" if result.torn_lines else ""
            print(f"ok: {result.checked} entries, hash chain intact{torn}")
        else:
            print(f"BROKEN at line {result.first_bad_line}: {result.reason}")
        return 0 if result.ok else 1
    n = 20 if args.n is None and not args.json else args.n
    if n is not None and n < 1:
        print("tether: error: N must be 1 or more", file=sys.stderr)
        return 2
    entries = gate.log(n)
    if args.json:
        for entry in entries:
            sys.stdout.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return 0
    if not entries:
        print(f"No tool calls logged yet ({gate.audit.path}).")
        return 0
    for e in entries:
        when = str(e.get("time", e.get("timestamp", "")))[:19].replace("T", " ")
        state = "dry-run" if e.get("dry_run") else ("ok" if e.get("success") else "FAILED")
        ms = e.get("duration_ms")
        cp = f" cp:{e['git_commit']}" if e.get("git_commit") else ""
        line = f"{when}  {e.get('tool', '?'):<14} {state:<7} {ms if ms is not None else '-':>6}ms{cp}"
        detail = _summary(e.get("input"))
        if detail:
            line += f"  {detail}"
        if e.get("error"):
            line += f"  error: {_summary(e['error'])}"
        print(line)
    return 0
