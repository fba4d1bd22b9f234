"""`tether fake-api --script FILE [--port P]`: the offline Messages API, for the demo and tests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fake-api",
        help="serve the Anthropic Messages API offline from a script of turns",
        description="Serve POST /v1/messages on 127.0.0.1 from a YAML or JSON script (streaming SSE and "
        "plain JSON), checking that tool_result ids match the tool_use ids it sent. Prints its URL on "
        "stdout when ready: point ANTHROPIC_BASE_URL at it. See docs/agent.md for the script format.",
    )
    parser.add_argument("--script", required=True, metavar="FILE", help="the scripted turns (.yaml or .json)")
    parser.add_argument("--port", type=int, default=0, metavar="P", help="port (default 0: pick a free one)")
    parser.add_argument("--quiet", action="store_true", help="do not log each request on stderr")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tether.agent.fakeapi import load_script, serve
    from tether.errors import ConfigError

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, not {args.port}")
    script = load_script(Path(args.script))
    try:
        serve(script, port=args.port, quiet=args.quiet)
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from exc
    return 0
