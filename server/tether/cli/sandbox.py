"""`tether sandbox -- ARGV...`: run a command in the sandbox without the policy, to diagnose it.

The policy is bypassed on purpose (this is how the sandbox's own guarantees are tested), but the
full profile applies: read-only system, protected workspace paths, masked secrets, no network.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tether.cli._common import add_workspace_arg


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="run a command in the sandbox (no policy) to see what it can and cannot do",
        description="Run ARGV inside the sandbox profile, bypassing the command policy. Prints the "
        "backend on stderr and exits with the command's exit code.",
    )
    add_workspace_arg(parser)
    parser.add_argument(
        "--backend",
        choices=("auto", "bubblewrap", "firejail", "landlock", "none"),
        default=None,
        help="backend to use (default: the configured one, normally auto)",
    )
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds (max 600)")
    parser.add_argument("--cwd", default=None, metavar="DIR", help="directory inside the workspace")
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- ARGV", help="the command to run")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session
    from tether.errors import TetherError

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise TetherError("nothing to run: use `tether sandbox [options] -- COMMAND [ARGS...]`")
    session = open_cli_session(args)
    workspace = session.workspace
    cwd = (workspace / args.cwd).resolve() if args.cwd else workspace
    if not cwd.is_relative_to(workspace) or not cwd.is_dir():
        raise TetherError(f"--cwd {args.cwd!r} is not a directory inside the workspace")
    result, backend = session.run_in_sandbox(argv, cwd=cwd, timeout=args.timeout, backend=args.backend)
    timeout = args.timeout if args.timeout is not None else session.config.sandbox.command_timeout
    print(f"tether: sandbox backend: {backend}", file=sys.stderr)
    if result.warning:
        print(result.warning, file=sys.stderr)
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.write(result.stderr)
    if result.stdout_truncated or result.stderr_truncated:
        print("tether: output was truncated (max_output_bytes)", file=sys.stderr)
    if result.timed_out:
        print(f"tether: command timeout after {timeout:g}s (process tree killed)", file=sys.stderr)
        return 124
    return result.exit_code
