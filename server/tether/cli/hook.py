"""`tether hook claude-code` and `tether hook install claude-code [--write]`: Tether inside Claude Code.

Claude Code runs its own tools; a command hook sees each call before and after. Before: a Bash
command gets Tether's verdict (allow, ask or deny, with the rule and the reason) and, when it may
change files, a checkpoint first, so `tether rollback` undoes what the shell did — which Claude
Code's own checkpoints do not cover. Edit, Write, MultiEdit and NotebookEdit get the path checks
(outside the workspace, protected paths, secrets) and a checkpoint; Read of a secret file, and Grep
naming one as its path, are denied.
After: one audit line with the result, in the same hash-chained log as every other face.

Fail closed: input that is not a Claude Code hook event, or anything that goes wrong while deciding,
is answered with a deny and the reason — never a traceback, never silence (which Claude Code would
take as "no objection"). Tested with Claude Code 2.1.328's hook format (docs/integrations.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg

if TYPE_CHECKING:
    from tether.core.session import Session

MAX_EVENT_BYTES = 4 * 1024 * 1024
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
READ_TOOLS = {"Read": "file_path", "Grep": "path"}
OPTIONAL_PATH = {"Grep"}  # searches the project when no path is given
PRE_MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit|Read|Grep"
POST_MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit"
SOURCE = "claude-code"


class HookInputError(Exception):
    """The event is not something Tether can judge: answered with a deny naming what is wrong."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hook", help="Tether as a hook of another agent: `tether hook claude-code` (docs/integrations.md)"
    )
    agents = parser.add_subparsers(dest="hook_agent", metavar="AGENT")
    claude = agents.add_parser(
        "claude-code",
        help="read one Claude Code hook event (PreToolUse, PostToolUse) on stdin, answer on stdout",
    )
    claude.add_argument(
        "--mode",
        choices=("read", "command"),
        default="command",
        help="the highest mode a Bash command is judged in (default command). Workspace mode is not "
        "offered: Claude Code runs the command outside Tether's sandbox",
    )
    add_workspace_arg(claude)
    claude.set_defaults(handler=_claude_code)
    install = agents.add_parser(
        "install", help="print (or --write) the hooks block for an agent's user settings"
    )
    install.add_argument("agent", choices=("claude-code",))
    install.add_argument(
        "--write",
        action="store_true",
        help="merge it into ~/.claude/settings.json (your user settings; never a project's)",
    )
    install.set_defaults(handler=_install)
    parser.set_defaults(handler=lambda args: parser.print_help(sys.stderr) or 2)


# --- the hook ---------------------------------------------------------------------------------------


def _claude_code(args: argparse.Namespace) -> int:
    """Always exit 0 with a JSON answer (or, after a tool ran, nothing): Claude Code reads stdout."""
    try:
        event = parse_event(sys.stdin.buffer.read(MAX_EVENT_BYTES + 1))
    except HookInputError as exc:
        _emit(deny(f"Tether could not read this hook event: {exc}. Denied (fail closed)"))
        return 0
    name = event["hook_event_name"]
    try:
        session = _session(args, event)
        if name == "PreToolUse":
            answer = pre_tool_use(session, event, args.mode)
            if answer is not None:
                _emit(answer)
        else:
            post_tool_use(session, event)
    except Exception as exc:  # anything at all: a deny with the reason, never a traceback
        if name == "PreToolUse":
            _emit(deny(f"Tether could not decide ({exc.__class__.__name__}: {exc}). Denied (fail closed)"))
        else:
            print(f"tether: the audit line for this call could not be written: {exc}", file=sys.stderr)
    return 0


def parse_event(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_EVENT_BYTES:
        raise HookInputError(f"the event is larger than {MAX_EVENT_BYTES // (1024 * 1024)} MiB")
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HookInputError(f"stdin is not UTF-8 JSON ({exc})") from None
    if not isinstance(event, dict):
        raise HookInputError(f"the event is a JSON {type(event).__name__}, not an object")
    name = event.get("hook_event_name")
    if name not in ("PreToolUse", "PostToolUse"):
        raise HookInputError(f"unknown hook_event_name {name!r} (Tether answers PreToolUse and PostToolUse)")
    if not isinstance(event.get("tool_name"), str) or not event["tool_name"]:
        raise HookInputError("`tool_name` is missing")
    if not isinstance(event.get("tool_input"), dict):
        raise HookInputError("`tool_input` is missing or not an object")
    return event


def pre_tool_use(session: Session, event: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """The answer to a PreToolUse event; None means "no objection" (Claude Code's own rules decide)."""
    tool, tool_input = event["tool_name"], event["tool_input"]
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return deny("Tether: Bash without a string `command`. Denied (fail closed)")
        return _bash(session, command, _cwd(session, event), mode)
    if tool in EDIT_TOOLS or tool in READ_TOOLS:
        key = EDIT_TOOLS.get(tool) or READ_TOOLS[tool]
        path = tool_input.get(key)
        if tool in OPTIONAL_PATH and path is None:
            return None
        if not isinstance(path, str) or not path:
            return deny(f"Tether: {tool} without a string `{key}`. Denied (fail closed)")
        write = tool in EDIT_TOOLS
        found = session.gate.check_path(path, write=write)
        if not found["allowed"] and (write or found["rule"] == "path.secret"):
            return deny(f"Tether denied ({found['rule']}): {found['reason']}")
        if write:
            problem = _checkpoint(session, f"{tool} {path}")
            if problem is not None:
                return deny(problem)
    return None


def _bash(session: Session, command: str, cwd: Path | None, mode: str) -> dict[str, Any]:
    as_read = session.check_command(command, "read", cwd=cwd)
    if as_read["verdict"] == "allow":
        return _answer("allow", as_read)  # changes nothing: no checkpoint needed
    decision = session.check_command(command, mode, cwd=cwd) if mode != "read" else as_read
    if decision["verdict"] == "deny":
        return _answer("deny", decision)
    problem = _checkpoint(session, f"Bash {command[:200]}")
    if problem is not None:
        return deny(problem)
    return _answer(decision["verdict"], decision, checkpointed=True)


def _answer(verdict: str, decision: dict[str, Any], *, checkpointed: bool = False) -> dict[str, Any]:
    reason = f"Tether: {verdict} ({decision['rule']}): {decision['reason']}"
    if verdict != "allow" and decision.get("suggestion"):
        reason += f". Suggestion: {decision['suggestion']}"
    if checkpointed:
        reason += ". A checkpoint was taken first: `tether rollback 1` undoes what it does"
    return _decision(verdict, reason)


def _checkpoint(session: Session, summary: str) -> str | None:
    """Take a checkpoint before the call; the refusal's reason when none can be taken."""
    if not session.config.checkpoints.enabled:
        return None
    result = session.gate.checkpoint(f"before claude-code {summary}", source=SOURCE)
    if result.ok:
        return None
    return (
        f"Tether: no checkpoint could be taken ({result.text}), so this call could not be undone. "
        "Denied; set `git_enabled = false` in the Tether user config to run without rollback"
    )


def post_tool_use(session: Session, event: dict[str, Any]) -> None:
    response = event.get("tool_response")
    failed = isinstance(response, dict) and (
        response.get("is_error") is True or response.get("interrupted") is True or bool(response.get("error"))
    )
    session.gate.record_external(
        event["tool_name"],
        event["tool_input"],
        ok=not failed,
        result={"response": _trimmed(response), "toolUseId": event.get("tool_use_id")},
        source=SOURCE,
    )


def _trimmed(value: Any, limit: int = 20_000) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def deny(reason: str) -> dict[str, Any]:
    return _decision("deny", reason)


def _decision(verdict: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": verdict,
            "permissionDecisionReason": reason,
        }
    }


def _session(args: argparse.Namespace, event: dict[str, Any]) -> Session:
    from tether.cli._common import resolve_workspace
    from tether.core.session import FaceOverrides, open_session

    chosen = args.workspace or os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd")
    if not isinstance(chosen, str) or not chosen:
        raise HookInputError("no workspace: pass --workspace, or run from Claude Code (CLAUDE_PROJECT_DIR)")
    # Claude Code runs the command, not Tether's sandbox: no proxy stands between it and the network.
    return open_session(resolve_workspace(chosen), FaceOverrides(outside_sandbox=True))


def _cwd(session: Session, event: dict[str, Any]) -> Path | None:
    """Where Claude Code's shell is: relative paths in the command resolve there."""
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    return Path(cwd).resolve()


def _emit(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


# --- install -----------------------------------------------------------------------------------------


def hooks_block(command: str) -> dict[str, Any]:
    """The `hooks` entries for Claude Code's user settings."""
    entry = {"type": "command", "command": command, "timeout": 60}
    return {
        "PreToolUse": [{"matcher": PRE_MATCHER, "hooks": [entry]}],
        "PostToolUse": [{"matcher": POST_MATCHER, "hooks": [dict(entry)]}],
    }


def _hook_command() -> str:
    found = shutil.which("tether")
    program = found if found is not None else f"{sys.executable} -m tether"
    return f"{program} hook claude-code"


def _install(args: argparse.Namespace) -> int:
    block = hooks_block(_hook_command())
    if not args.write:
        print(json.dumps({"hooks": block}, indent=2))
        print(
            "\n# Merge this into ~/.claude/settings.json (your user settings), or run "
            "`tether hook install claude-code --write`.",
            file=sys.stderr,
        )
        return 0
    settings = Path.home() / ".claude" / "settings.json"
    try:
        merged, added = merge_settings(settings, block)
    except ValueError as exc:
        print(f"tether: {settings}: {exc}; nothing was changed", file=sys.stderr)
        return 1
    if not added:
        print(f"{settings}: the Tether hooks are already there; nothing changed")
        return 0
    _atomic_write(settings, json.dumps(merged, indent=2) + "\n")
    print(f"{settings}: added the Tether hooks ({', '.join(added)})")
    return 0


def merge_settings(path: Path, block: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings with Tether's hooks added, or an earlier install's matcher brought up to date
    (every other key and hook kept), and what changed."""
    if path.exists():
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not valid JSON ({exc})") from None
        if not isinstance(settings, dict):
            raise ValueError("not a JSON object")
    else:
        settings = {}
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("`hooks` is not an object")
    added: list[str] = []
    for event, entries in block.items():
        existing = hooks.setdefault(event, [])
        if not isinstance(existing, list):
            raise ValueError(f"`hooks.{event}` is not a list")
        ours = entries[0]["hooks"][0]["command"]
        installed = [
            group
            for group in existing
            if isinstance(group, dict)
            and any(isinstance(h, dict) and h.get("command") == ours for h in group.get("hooks", []))
        ]
        if not installed:
            existing.extend(entries)
            added.append(event)
        elif installed[0].get("matcher") != entries[0]["matcher"]:  # an older Tether's matcher
            installed[0]["matcher"] = entries[0]["matcher"]
            added.append(f"{event} (matcher updated)")
    return settings, added


def _atomic_write(path: Path, text: str) -> None:
    """Temp file + rename: the user's settings are never half written. Not `core.fsutil`: that is the
    gate's writer for workspace files, which faces do not import (tests/unit/test_faces_imports.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tether-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
