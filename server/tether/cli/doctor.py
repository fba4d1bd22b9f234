"""`tether doctor`: which sandbox backends work on this machine, which do not and why."""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli._common import print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check which sandbox backends work here and what `auto` picks",
        description="Probe every sandbox backend with a real command and report the result.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tether.core.config import load_config, user_config_path
    from tether.core.sandbox import STRENGTH_ORDER, auto_choice, probe_backends
    from tether.core.sandbox.env import rejected_passthrough
    from tether.errors import TetherError

    statuses = probe_backends(refresh=True)
    choice = auto_choice()
    config_error: str | None = None
    try:
        configured = load_config(None).sandbox
    except TetherError as exc:
        configured = None
        config_error = str(exc)
    if args.json:
        print_json(
            {
                "backends": {
                    name: {"available": s.available, "reason": s.reason, "version": s.version}
                    for name, s in statuses.items()
                },
                "auto": choice,
                "configured": configured.backend if configured else None,
                "config_error": config_error,
            }
        )
        return 0 if choice is not None else 1
    print("Sandbox backends (strongest first):")
    for name in STRENGTH_ORDER:
        s = statuses[name]
        mark = "✓" if s.available else "✗"
        version = f" {s.version}" if s.version else ""
        print(f"  {mark} {name}{version}: {s.reason}")
    print('  - none: no isolation, only when the user config sets `[sandbox] backend = "none"`')
    if choice is not None:
        print(f"auto picks: {choice}")
    else:
        print("auto picks: nothing works here — commands are refused (fail closed) unless you set")
        print('  `[sandbox] backend = "none"` in your user config to run them without isolation.')
    if config_error:
        print(f"config error: {config_error}")
    elif configured is not None:
        print(f"configured ({user_config_path()}): backend = {configured.backend}")
        if configured.backend not in ("auto", "none") and not statuses[configured.backend].available:
            print("  ✗ the configured backend does not work here: commands will be refused")
        rejected = rejected_passthrough(configured.env_passthrough)
        if rejected:
            print(f"  env_passthrough names never passed (look like secrets): {', '.join(rejected)}")
    return 0 if choice is not None else 1
