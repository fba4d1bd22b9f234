"""Helpers shared by the CLI command modules (argument shapes, output)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from tether.errors import TetherError


def add_workspace_arg(
    parser: argparse.ArgumentParser, help: str = "workspace root (default: the current directory)"
) -> None:
    parser.add_argument("--workspace", "-w", metavar="DIR", default=None, help=help)


def resolve_workspace(value: str | None) -> Path:
    """The workspace's real path; an error the user can act on when it is not a directory."""
    path = Path(value if value is not None else os.getcwd()).expanduser()
    if not path.is_dir():
        raise TetherError(f"workspace {str(path)!r} is not a directory")
    return path.resolve()


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
