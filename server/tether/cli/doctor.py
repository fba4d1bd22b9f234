"""`tether doctor`: which sandbox backends work on this machine, which do not and why."""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli._common import add_workspace_arg, print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check which sandbox backends work here and what `auto` picks",
        description="Probe every sandbox backend with a real command and report the result.",
    )
    add_workspace_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tether.cli._hook_install import installed_hook
    from tether.cli._session import open_cli_session
    from tether.core.config import user_config_path
    from tether.core.session import probe_sandboxes
    from tether.errors import TetherError

    config_error: str | None = None
    try:
        session = open_cli_session(args)
    except TetherError as exc:
        config_error = str(exc)
        session = None
    report = session.sandbox_report() if session is not None else probe_sandboxes()
    if args.json:
        print_json(
            {
                "backends": report["backends"],
                "auto": report["auto"],
                "configured": report["configured"] if session is not None else None,
                "config_error": config_error,
                "session": session.describe() if session is not None else None,
                "claudeCodeHook": installed_hook(),
            }
        )
        return 0 if report["auto"] is not None else 1
    print("Sandbox backends (strongest first):")
    for name in report["order"][:-1]:
        s = report["backends"][name]
        mark = "✓" if s["available"] else "✗"
        version = f" {s['version']}" if s["version"] else ""
        print(f"  {mark} {name}{version}: {s['reason']}")
    print('  - none: no isolation, only when the user config sets `[sandbox] backend = "none"`')
    choice = report["auto"]
    if choice is not None:
        print(f"auto picks: {choice}")
    else:
        print("auto picks: nothing works here — commands are refused (fail closed) unless you set")
        print('  `[sandbox] backend = "none"` in your user config to run them without isolation.')
    if config_error:
        print(f"config error: {config_error}")
    elif session is not None:
        configured = report["configured"]
        print(f"configured ({user_config_path()}): backend = {configured}")
        if configured not in ("auto", "none") and not report["backends"][configured]["available"]:
            print("  ✗ the configured backend does not work here: commands will be refused")
        if report["rejected_env"]:
            names = ", ".join(report["rejected_env"])
            print(f"  env_passthrough names never passed (look like secrets): {names}")
        _print_session(session.describe())
    _print_hook(installed_hook())
    return 0 if choice is not None else 1


def _print_hook(hook: dict[str, Any] | None) -> None:
    if hook is None:
        return  # not a Claude Code user, or not through Tether: nothing to say
    how = "its shell commands run in Tether's sandbox" if hook["sandbox"] else "verdicts only (no --sandbox)"
    print(f"Claude Code hook ({hook['settings']}): {how}")
    if hook["problem"]:
        print(f"  ✗ {hook['problem']}")


def _print_session(described: dict[str, Any]) -> None:
    print(f"workspace: {described['workspace']}")
    print(
        f"  permissions: {described['permissions']}"
        + (" (read-only session)" if described["readOnly"] else "")
    )
    print(f"  config files: {', '.join(described['configSources']) or '(none: built-in defaults)'}")
    print(f"  read-only for every tool and command: {', '.join(described['protected'])}")
    view = described["workspaceMode"]
    print("  in workspace mode (any program, in the sandbox):")
    print(f"    writable: {', '.join(view['writable'])}")
    print(f"    read-only: the paths above, and everything outside the workspace; network: {view['network']}")
    print(f"    hidden (secret files here now): {', '.join(view['hidden']) or 'none'}")
    print(
        "    writable but not checkpointed (ignored build outputs, they regenerate): "
        + ", ".join(view["notCheckpointed"])
    )
    print(f"  secret files (never read, hidden in the sandbox): {', '.join(described['secretPatterns'])}")
    network = described["network"]
    if network["enabled"]:
        local = "; local addresses allowed" if network["allowLocalAddresses"] else ""
        domains = ", ".join(network["allowedDomains"])
        print(f"  network: through Tether's proxy (bubblewrap only) to {domains}{local}")
        if network["deniedDomains"]:
            print(f"    denied: {', '.join(network['deniedDomains'])}")
    else:
        print(
            "  network: none (add domains to [network] allowed_domains in your user config: docs/network.md)"
        )
