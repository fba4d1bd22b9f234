"""User hooks around tool calls: PreToolUse may veto a call, PostToolUse sees its result.

Hooks come only from the user config (a repository cannot add one: it would be code execution by
cloning). They still run in the sandbox, with the workspace read-only and no network, because their
input is what the model wrote. A hook that cannot be run, times out or crashes vetoes the call: a
check that did not happen must not look like a check that passed (fail closed).

The JSON on stdin follows the shape Claude Code hooks read, so existing hook scripts work:
`{"hook_event_name", "tool_name", "tool_input", "tool_response"?, "cwd"}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from tether.core.config import Hook
from tether.core.sandbox.base import Runner, RunRequest
from tether.errors import TetherError

Phase = Literal["pre", "post"]

EVENT_NAMES: dict[str, str] = {"pre": "PreToolUse", "post": "PostToolUse"}
# What a hook prints is only a reason shown to the user and the model: keep it short.
MAX_HOOK_OUTPUT = 64 * 1024
MAX_REASON_CHARS = 2000


def hooks_for(hooks: Iterable[Hook], tool: str) -> list[Hook]:
    """The hooks that apply to `tool` (an empty `tools` list means every tool)."""
    return [hook for hook in hooks if not hook.tools or tool in hook.tools]


def hook_input(phase: Phase, tool: str, payload: Mapping[str, Any], workspace: Path) -> bytes:
    """The JSON document a hook reads on stdin.

    The gate refuses input with lone surrogates ("\\udc80"), which UTF-8 cannot encode; should one
    reach a hook anyway (a tool's result), it is written as that escape and stays valid JSON, rather
    than crashing the hook run after the call happened.
    """
    document: dict[str, Any] = {
        "hook_event_name": EVENT_NAMES[phase],
        "tool_name": tool,
        "cwd": str(workspace),
    }
    if phase == "pre":
        document["tool_input"] = dict(payload)
    else:
        document["tool_input"] = payload.get("input")
        document["tool_response"] = payload.get("result")
    return json.dumps(document, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")


def run_hooks(
    hooks: Iterable[Hook],
    *,
    phase: Phase,
    tool: str,
    payload: Mapping[str, Any],
    workspace: Path,
    runner: Callable[[], Runner],
) -> str | None:
    """Run the matching hooks in order; the first objection (a message) stops the rest.

    None means every hook agreed (exit 0). For `pre` an objection vetoes the call; for `post` the
    gate reports it as a warning next to the result, since the call already happened.
    """
    selected = hooks_for(hooks, tool)
    if not selected:
        return None
    stdin = hook_input(phase, tool, payload, workspace)
    for hook in selected:
        objection = _run_one(hook, stdin, workspace, runner)
        if objection is not None:
            return objection
    return None


def _run_one(hook: Hook, stdin: bytes, workspace: Path, runner: Callable[[], Runner]) -> str | None:
    name = " ".join(hook.command)
    request = RunRequest(
        argv=hook.command,
        script=None,
        cwd=workspace,
        workspace=workspace,
        timeout=hook.timeout,
        max_output_bytes=MAX_HOOK_OUTPUT,
        read_only_workspace=True,
        stdin=stdin,
        workspace_path=False,  # the check must not run code the agent can change
    )
    try:
        result = runner().run(request)
    except TetherError as exc:
        return f"hook `{name}` could not run, so the call was refused: {exc}"
    if result.timed_out:
        return f"hook `{name}` did not answer within {hook.timeout:g} s, so the call was refused"
    if result.exit_code == 0:
        return None
    said = (result.stderr.strip() or result.stdout.strip())[:MAX_REASON_CHARS]
    detail = f": {said}" if said else " (it gave no reason)"
    return f"hook `{name}` objected (exit {result.exit_code}){detail}"
