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
    return _build(None)[0]


def _build(only: str | None) -> tuple[argparse.ArgumentParser, set[str]]:
    """The whole parser, or with `only` the parser of the one module named like the command, and
    the command names it knows.

    Why `only`: every command module and its 26 subparsers cost a one-shot command such as
    `tether check` (run by scripts and hooks) a tenth of its start-up; `main` asks for the one it
    needs and falls back to the whole parser when that module does not define the command.
    """
    parser = argparse.ArgumentParser(
        prog="tether",
        description="A safety layer between AI coding agents and your editor.",
    )
    parser.add_argument("--version", action="version", version=f"tether {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only is not None and info.name != only):
            continue
        # No try/except: a command module that cannot import is a broken install, and hiding it
        # (the command silently missing from `tether --help`) is worse than failing loudly.
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
    return parser, set(subparsers.choices)


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    first = argv[0] if argv else ""
    if first and not first.startswith("-") and first.isidentifier():
        narrow, known = _build(first)
        if first in known:
            return narrow
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser_for(argv)
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
