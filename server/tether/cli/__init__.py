"""The `tether` command line.

Each command group is a module in this package exposing `register(subparsers)`; modules are
discovered, so adding a command never touches a shared list. Modules keep heavy imports inside
their handlers: `tether serve` start-up time is an editor's start-up time.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from tether import __version__
from tether.errors import TetherError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether",
        description="A safety layer between AI coding agents and your editor.",
    )
    parser.add_argument("--version", action="version", version=f"tether {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        # No try/except: a command module that cannot import is a broken install, and hiding it
        # (the command silently missing from `tether --help`) is worse than failing loudly.
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.handler(args)
    except TetherError as exc:
        print(f"tether: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tether: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    return code
