"""The `tether` command line.

Each command group is a module in this package exposing `register(subparsers)`; modules are
discovered, so adding a command never touches a shared list. Modules keep heavy imports inside
their handlers: `tether serve` start-up time is an editor's start-up time.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

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
    for name in [only] if only is not None else _command_modules():
        # No try/except: a command module that cannot import is a broken install, and hiding it
        # (the command silently missing from `tether --help`) is worse than failing loudly.
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(subparsers)
    return parser, set(subparsers.choices)


def _command_modules() -> list[str]:
    import pkgutil  # only for the whole parser: a one-shot command skips the discovery

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _is_command_module(name: str) -> bool:
    """Whether `name` is one of this package's command modules, from one stat (no discovery)."""
    return not name.startswith("_") and (Path(__file__).parent / f"{name}.py").is_file()


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    first = argv[0] if argv else ""
    if first.isidentifier() and _is_command_module(first):
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
