"""`tether hook install claude-code [--write] [--sandbox] [--mode M]`, and what `tether doctor`
says about the hook installed.

Only your user settings (`~/.claude/settings.json`), never a project's: a repository must not decide
which hooks guard its own agent. One Tether hook per event: an earlier install (other options, or an
older Tether's `python -m tether` without `-P`) is brought up to date rather than joined by a second,
which would give Claude Code two answers for each call.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

PRE_MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit|Read|Grep"
POST_MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit"


def hooks_block(command: str) -> dict[str, Any]:
    """The `hooks` entries for Claude Code's user settings."""
    entry = {"type": "command", "command": command, "timeout": 60}
    return {
        "PreToolUse": [{"matcher": PRE_MATCHER, "hooks": [entry]}],
        "PostToolUse": [{"matcher": POST_MATCHER, "hooks": [dict(entry)]}],
    }


def _hook_command(args: argparse.Namespace) -> str:
    found = shutil.which("tether")
    # -P: Claude Code starts the hook in the project; the project's `tether/` must not stand in for it
    program = found if found is not None else f"{shlex.quote(sys.executable)} -P -m tether"
    command = f"{program} hook claude-code"
    if args.mode != "command":
        command += f" --mode {args.mode}"
    if args.sandbox:
        command += " --sandbox"
    return command


def install_hooks(args: argparse.Namespace) -> int:
    if args.mode == "workspace" and not args.sandbox:
        print("tether: `--mode workspace` needs `--sandbox`; nothing was changed", file=sys.stderr)
        return 2
    block = hooks_block(_hook_command(args))
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


def installed_hook(settings_path: Path | None = None) -> dict[str, Any] | None:
    """What `tether doctor` reports about Tether's Claude Code hook in your user settings: None when
    there is none; else its command, whether it runs commands in the sandbox, and a problem to fix.

    The problem it knows: an install by an older Tether that names `python -m tether` without `-P`.
    Claude Code starts the hook in your project, so a `tether/` folder or an `argparse.py` there
    would run in place of Tether, with no answer (no objection) for Claude Code."""
    path = settings_path or Path.home() / ".claude" / "settings.json"
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    found = _tether_hooks(hooks.get("PreToolUse") if isinstance(hooks, dict) else None)
    if not found:
        return None
    command = str(found[0][1]["command"])
    words = command.split()
    problem = None
    if "-m" in words and "-P" not in words:
        problem = (
            "it runs `python -m tether` without -P: a `tether/` folder or `argparse.py` in your project "
            "would run in its place. Run `tether hook install claude-code --write` again"
        )
    return {"settings": str(path), "command": command, "sandbox": "--sandbox" in words, "problem": problem}


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
        installed = _tether_hooks(existing)
        if not installed:
            existing.extend(entries)
            added.append(event)
            continue
        group, hook = installed[0]
        if hook.get("command") != ours:  # other options (`--sandbox`): one Tether hook, not two
            hook["command"] = ours
            added.append(f"{event} (command updated)")
        if group.get("matcher") != entries[0]["matcher"]:  # an older Tether's matcher
            group["matcher"] = entries[0]["matcher"]
            added.append(f"{event} (matcher updated)")
    return settings, added


_TETHER_HOOK = re.compile(r"(?:^|[\s/])tether hook claude-code(?:\s|$)")


def _tether_hooks(groups: object) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The Tether hooks among an event's hook groups, with their group: whatever their options or
    the Python they name (an older install's `python -m tether`). Two would answer each Bash call
    differently, so an install brings the one found up to date rather than adding another."""
    return [
        (group, hook)
        for group in (groups if isinstance(groups, list) else [])
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if isinstance(hook, dict) and _TETHER_HOOK.search(str(hook.get("command", ""))) is not None
    ]


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
