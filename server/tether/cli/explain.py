"""`tether explain [--mode M] [--workspace W] [--json] COMMAND`: why a command would be allowed,
asked about or denied, by which rule from which file, and what would happen if it ran.

Exit codes: 0 allowed, 1 denied or asked (like `tether check`), 2 usage error.
"""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli._common import add_workspace_arg, print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="every layer of one decision: verdict per segment, rule and source, sandbox, hooks, checkpoint",
    )
    parser.add_argument(
        "--mode",
        choices=("read", "command", "workspace"),
        default=None,
        help="judge for this mode (default: the lowest mode that allows or asks, as the bash tool does)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    add_workspace_arg(parser)
    parser.add_argument("cmd", metavar="COMMAND", help="the command line to explain")
    parser.set_defaults(handler=_explain)


def _explain(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    report = open_cli_session(args).explain(args.cmd, args.mode)
    if args.json:
        print_json(report)
    else:
        print(render(report))
    return 0 if report["verdict"] == "allow" else 1


def render(report: dict[str, Any]) -> str:
    lines = [f"{report['verdict']} in {report['mode']} mode ({report['rule']}): {report['reason']}"]
    if report.get("suggestion") and report["verdict"] != "allow":
        lines.append(f"suggestion: {report['suggestion']}")
    modes = ", ".join(f"{mode}: {verdict}" for mode, verdict in report["modes"].items())
    lines.append(f"by mode: {modes}")
    lines.append("segments:")
    for segment in report["segments"]:
        where = segment["source"] + (f" ({segment['layer']})" if segment["layer"] != "builtin" else "")
        lines.append(f"  {' '.join(segment['argv'])} — {segment['verdict']} [{segment['rule']}; {where}]")
    sandbox = report["sandbox"]
    if sandbox is None:
        lines.append("sandbox: nothing would run")
    else:
        lines.append(f"sandbox: {sandbox['backend']}, network {sandbox['network']}")
        for key, label in (
            ("writable", "writable"),
            ("readOnly", "read-only"),
            ("hidden", "hidden (secrets)"),
        ):
            if sandbox[key]:
                lines.append(f"  {label}: {_some(sandbox[key])}")
        lines.append(
            f"  writable, not checkpointed (ignored build outputs, they regenerate): "
            f"{_some(sandbox['notCheckpointed'])}"
        )
    hooks = report["hooks"]
    lines.append("hooks: " + ("; ".join(f"{h['event']}: {' '.join(h['command'])}" for h in hooks) or "none"))
    lines.append(
        f"checkpoint: {'taken first (tether rollback 1 undoes it)' if report['checkpoint'] else 'none'}"
    )
    if report["permissionNeeded"] and not report["granted"]:
        lines.append(f"this session lacks `{report['permissionNeeded']}` permission: it would be a dry run")
    return "\n".join(lines)


def _some(items: list[str], shown: int = 8) -> str:
    """A long list cut for a terminal; `--json` has all of it."""
    more = f", … ({len(items) - shown} more; --json lists all)" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more
