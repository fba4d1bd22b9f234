"""`tether checkpoint | checkpoints | rollback`: snapshots and undo from the terminal.

Taking a checkpoint and rolling back go through the gate (`Gate.checkpoint`, `Gate.rollback`), so
they are audited like every other mutating call; listing is read-only and uses `Checkpoints`
directly, with one snapshot of the present for all "files changed since" counts.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tether.cli._common import add_workspace_arg, print_json
from tether.errors import TetherError


def register(subparsers: Any) -> None:
    take = subparsers.add_parser("checkpoint", help="snapshot the workspace now; prints the checkpoint id")
    add_workspace_arg(take)
    take.add_argument("--message", "-m", default=None, metavar="M", help="a note stored with it")
    take.set_defaults(handler=_checkpoint)

    listing = subparsers.add_parser("checkpoints", help="list checkpoints, newest first")
    add_workspace_arg(listing)
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(handler=_list)

    back = subparsers.add_parser(
        "rollback", help="restore the workspace as it was before the N-th most recent mutating call"
    )
    back.add_argument("steps", nargs="?", type=int, default=None, metavar="N", help="default 1")
    back.add_argument("--to", default=None, metavar="ID", help="a checkpoint id from `tether checkpoints`")
    back.add_argument("--dry-run", action="store_true", help="only list what would change")
    back.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    back.add_argument("--json", action="store_true", help="machine-readable output")
    add_workspace_arg(back)
    back.set_defaults(handler=_rollback)


def _show(path: str) -> str:
    """Paths may contain newlines or escapes; never let them forge output lines."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return ascii(path)
    return path


def _checkpoint(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    gate = open_cli_session(args).gate
    result = gate.checkpoint(args.message, source="cli")
    for warning in result.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    if not result.ok:
        print(f"tether: error: {result.text}", file=sys.stderr)
        return 2
    print(result.checkpoint)
    return 0


def _list(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    session = open_cli_session(args)
    store = session.gate.checkpoint_store()
    if not session.config.checkpoints.enabled:
        print(
            "Warning: checkpoints are disabled (git_enabled = false); rollback is unavailable",
            file=sys.stderr,
        )
    cps = store.list()
    changed: dict[str, list[str]] = {}
    counted = True
    try:
        changed = store.files_changed_since_many(cps) if cps else {}
    except TetherError as exc:  # e.g. mid-merge: listing still works, counting needs a snapshot
        print(f"Warning: cannot compare with the present: {exc}", file=sys.stderr)
        counted = False
    if args.json:
        print_json({"checkpoints": [{**cp.to_json(), "files_changed": changed.get(cp.id, [])} for cp in cps]})
        return 0
    if not cps:
        print("No checkpoints yet.")
        return 0
    print(f"{'#':>3}  {'ID':<12}  {'TIME':<19}  {'TOOL':<16}  CHANGED SINCE")
    for n, cp in enumerate(cps, start=1):
        files = changed.get(cp.id, [])
        when = cp.time[:19].replace("T", " ")
        count = f"{len(files)} file(s)" if counted else "?"
        print(f"{n:>3}  {cp.id:<12}  {when:<19}  {_show(cp.tool)[:16]:<16}  {count}")
    print("\nRoll back with `tether rollback N` or `tether rollback --to ID` (add --dry-run to preview).")
    return 0


def _print_plan(result: dict[str, Any]) -> None:
    groups = (("restore", "restored"), ("delete", "deleted"), ("create", "created"))
    total = 0
    for label, key in groups:
        for path in result.get(key, []):
            print(f"  {label:<8} {_show(path)}")
            total += 1
    if total == 0:
        print("  (no files differ)")


def _ask(prompt: str) -> bool:
    """Read one answer from stdin; end of input or anything but y/yes means no."""
    print(prompt, end=" ", flush=True)
    line = sys.stdin.readline()
    if not line:
        print()
        return False
    return line.strip().lower() in ("y", "yes")


def _rollback(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    if args.steps is not None and args.to is not None:
        raise TetherError("give either N or --to ID, not both")
    if args.steps is not None and args.steps < 1:
        raise TetherError("N must be 1 or more")
    gate = open_cli_session(args).gate
    preview = gate.rollback(steps=args.steps, to=args.to, dry_run=True, source="cli")
    if not preview.ok:
        raise TetherError(preview.text)
    target = preview.result["target"]
    if args.dry_run:
        if args.json:
            print_json(preview.to_json(gate.workspace))
        else:
            print(preview.text)
            _print_plan(preview.result)
        return 0
    if not args.yes:
        print(preview.text.replace("Would roll back", "Roll back", 1))
        _print_plan(preview.result)
        if not _ask("Proceed? The present state is checkpointed first, so this can be undone. [y/N]"):
            print("Nothing changed.")
            return 1
    done = gate.rollback(to=target, source="cli")
    if args.json:
        print_json(done.to_json(gate.workspace))
    else:
        print(done.text)
        for warning in done.warnings:
            print(f"Warning: {warning}", file=sys.stderr)
        if done.ok and done.checkpoint:
            print(f"Undo with `tether rollback 1` (or --to {done.checkpoint}).")
    return 0 if done.ok else 2
