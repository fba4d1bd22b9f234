"""Open the session for one CLI invocation: `--workspace`, `--permissions` and the config files.

Every CLI command that touches a workspace comes through here, so `tether check`, `tether run`,
`tether tool`, `tether sandbox` and the rest judge with the same assembled configuration.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tether.cli._common import resolve_workspace

if TYPE_CHECKING:
    from tether.core.session import Session


def add_permissions_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--permissions",
        "--tool",
        dest="permissions",
        metavar="P",
        default=None,
        help="none (dry run, the default), read, write, command, all, or a comma list like read,write",
    )


def open_cli_session(args: argparse.Namespace, *, timeout: float | None = None, ask: bool = False) -> Session:
    """The session for `args.workspace` (default: the current directory), warnings on stderr.

    `ask`: commands that run tools (`run`, `tool`, `ask`) ask the person at the terminal when the
    policy says *ask*; without a terminal there is nobody to ask and the gate denies.
    """
    from tether.cli._approver import terminal_approver
    from tether.core.session import FaceOverrides, open_session

    workspace = resolve_workspace(getattr(args, "workspace", None))
    overrides = FaceOverrides(permissions=getattr(args, "permissions", None), command_timeout=timeout)
    session = open_session(workspace, overrides, approver=terminal_approver() if ask else None)
    for warning in session.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return session
