"""Build a gate for one CLI invocation: workspace, config, permissions, optional overrides."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from tether.cli._common import resolve_workspace
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.core.gate import Gate


def add_permissions_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--permissions",
        "--tool",
        dest="permissions",
        metavar="P",
        default=None,
        help="none (dry run, the default), read, write, command, all, or a comma list like read,write",
    )


def open_gate(args: argparse.Namespace, *, timeout: float | None = None) -> Gate:
    from tether.core.config import MAX_COMMAND_TIMEOUT, load_config
    from tether.core.gate import Gate
    from tether.core.permissions import parse_permissions

    workspace = resolve_workspace(getattr(args, "workspace", None))
    config = load_config(workspace)
    for warning in config.warnings:
        print(f"Warning: {warning}", file=__import__("sys").stderr)
    if timeout is not None:
        if not 0 < timeout <= MAX_COMMAND_TIMEOUT:
            raise TetherError(f"--timeout must be between 1 and {MAX_COMMAND_TIMEOUT} seconds")
        config = replace(config, sandbox=replace(config.sandbox, command_timeout=timeout))
    text = getattr(args, "permissions", None)
    permissions = parse_permissions(text if text is not None else config.permissions)
    return Gate(workspace, permissions, config=config)
