"""`tether hook claude-code` and `tether hook install claude-code [--write]`: Tether inside Claude Code.

Claude Code runs its own tools; a command hook sees each call before and after. Before: a Bash
command gets Tether's verdict (allow, ask or deny, with the rule and the reason) and, when it may
change files, a checkpoint first, so `tether rollback` undoes what the shell did — which Claude
Code's own checkpoints do not cover. Edit, Write, MultiEdit and NotebookEdit get the path checks
(outside the workspace, protected paths, secrets) and a checkpoint; Read of a secret file, and a
Grep naming one or searching a folder where its ripgrep would read one, are denied.
After: one audit line with the result, in the same hash-chained log as every other face.

With `--sandbox`, a Bash command Tether would let through is not run by Claude Code's shell as
written: the answer rewrites it (`updatedInput`) into `tether hook run GRANT -- COMMAND`, which runs
it through Tether's own gate — the sandbox that hides secret files and holds the network, a
checkpoint, the audit log. That also makes workspace mode safe to offer (`--mode workspace`).

Fail closed: input that is not a Claude Code hook event, or anything that goes wrong while deciding,
is answered with a deny and the reason — never a traceback, never silence (which Claude Code would
take as "no objection"). Tested with Claude Code 2.1.328's hook format (docs/integrations.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli._common import add_workspace_arg
from tether.cli._hook_install import install_hooks

if TYPE_CHECKING:
    import threading

    from tether.cli._grants import Grant
    from tether.core.approvals import ApprovalAnswer, ApprovalRequest, Approver
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
    _add_hook_options(claude)
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
    _add_hook_options(install)
    install.set_defaults(handler=install_hooks)
    run = agents.add_parser(
        "run",
        help="run the Bash command `claude-code --sandbox` granted, in Tether's sandbox "
        "(the hook writes this command for Claude Code; you do not type it)",
    )
    run.add_argument("grant", metavar="GRANT", help="the one-use grant the hook issued")
    run.add_argument("command", nargs="?", metavar="COMMAND", help="the granted command, shown to you")
    run.set_defaults(handler=_run_granted)
    parser.set_defaults(handler=lambda args: parser.print_help(sys.stderr) or 2)


def _add_hook_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=("read", "command", "workspace"),
        default="command",
        help="the highest mode a Bash command is judged in (default command). Workspace mode needs "
        "--sandbox: without it Claude Code runs the command outside Tether's sandbox",
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="run Claude Code's Bash commands in Tether's sandbox (secrets hidden, network through "
        "your allowlist): the hook rewrites each command it lets through",
    )


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
        if args.mode == "workspace" and not args.sandbox:
            raise HookInputError(
                "`--mode workspace` needs `--sandbox`: without it Claude Code runs the command outside "
                "Tether's sandbox, and workspace mode lets any program run"
            )
        session = _session(args, event)
        if name == "PreToolUse":
            answer = pre_tool_use(session, event, args.mode, sandbox=args.sandbox)
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


def pre_tool_use(
    session: Session, event: dict[str, Any], mode: str, *, sandbox: bool = False
) -> dict[str, Any] | None:
    """The answer to a PreToolUse event; None means "no objection" (Claude Code's own rules decide)."""
    tool, tool_input = event["tool_name"], event["tool_input"]
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return deny("Tether: Bash without a string `command`. Denied (fail closed)")
        if sandbox:
            return _sandboxed_bash(session, tool_input, command, _cwd(session, event), mode)
        return _bash(session, command, _cwd(session, event), mode)
    if tool in EDIT_TOOLS or tool in READ_TOOLS:
        key = EDIT_TOOLS.get(tool) or READ_TOOLS[tool]
        path = tool_input.get(key)
        if not (tool in OPTIONAL_PATH and path is None) and (not isinstance(path, str) or not path):
            return deny(f"Tether: {tool} without a string `{key}`. Denied (fail closed)")
        write = tool in EDIT_TOOLS
        if path is not None:
            found = session.gate.check_path(path, write=write)
            if not found["allowed"] and (write or found["rule"] == "path.secret"):
                return deny(f"Tether denied ({found['rule']}): {found['reason']}")
        if tool == "Grep":
            return _grep(session, tool_input, path, _cwd(session, event))
        if write:
            problem = _checkpoint(session, f"{tool} {path}")
            if problem is not None:
                return deny(problem)
    return None


def claude_code_globs(glob: str) -> list[str]:
    """The `--glob`s Claude Code's Grep makes of its `glob` (2.1.3xx): split at whitespace, then at
    commas unless the piece holds a `{…}` alternation; empty pieces dropped. Passing the value as
    one glob let `*.md,.env` through: it matched nothing here and `.env` there."""
    globs: list[str] = []
    for piece in glob.split():
        if "{" in piece and "}" in piece:
            globs.append(piece)
        else:
            globs.extend(part for part in piece.split(",") if part)
    return globs


def _grep(
    session: Session, tool_input: dict[str, Any], path: str | None, cwd: Path | None
) -> dict[str, Any] | None:
    """Claude Code's Grep reads every file its ripgrep lists (hidden ones included, git-ignored ones
    not) and runs outside any sandbox: a secret file among them would reach the model."""
    glob, kind = tool_input.get("glob"), tool_input.get("type")
    if not isinstance(glob, str | None) or not isinstance(kind, str | None):
        return deny("Tether: Grep with a `glob` or `type` that is not a string. Denied (fail closed)")
    globs = claude_code_globs(glob or "")
    types = [kind] if kind else []
    found = session.gate.secrets_a_search_reads(path, cwd=cwd, globs=globs, types=types)
    if not found:
        return None
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return deny(
        f"Tether denied (path.secret): this search would read secret files, which Claude Code's Grep "
        f"reads outside any sandbox: {shown}. Search a narrower path or `glob` that leaves them out, "
        "git-ignore them, or add one to `[secrets] allow` in your Tether user config if it is no secret"
    )


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


CLAUDE_CODE_BASH_TIMEOUT = 120.0
"""Seconds: Claude Code's Bash timeout when the call names none."""
TIMEOUT_MARGIN = 3.0


def _sandboxed_bash(
    session: Session, tool_input: dict[str, Any], command: str, cwd: Path | None, mode: str
) -> dict[str, Any]:
    """Judge as the bash tool will (the lowest mode, up to `mode`, that allows or asks), then hand
    Claude Code a rewritten command that runs this one through Tether's gate: sandbox, checkpoint,
    audit line.

    Nothing runs here: the runner takes the checkpoint, after Claude Code asked you (if it must).
    """
    workspace = session.workspace
    where = cwd if cwd is not None else workspace
    if not where.is_relative_to(workspace):
        return deny(
            f"Tether: Claude Code's shell is in {where}, outside the workspace {workspace}. Commands "
            "run in Tether's sandbox, which holds the workspace only: `cd` back into it first"
        )
    level, decision = session.gate.lowest_mode(command, mode, cwd=where)
    if level is None:
        return _answer("deny", decision)
    verdict = decision["verdict"]
    from tether.cli._grants import Grant, issue

    directory = where.relative_to(workspace).as_posix()
    timeout = _claude_code_timeout(tool_input.get("timeout"))
    grant = Grant(command, str(workspace), directory, level, verdict, time.time(), timeout)
    rewritten = runner_command(issue(grant), command)
    answer = _answer(verdict, decision)
    hook_output = answer["hookSpecificOutput"]
    hook_output["permissionDecisionReason"] += (
        f". It runs in Tether's sandbox ({level} mode), after a checkpoint: `tether rollback 1` undoes it"
        if level != "read"
        else f". It runs in Tether's sandbox ({level} mode)"
    )
    hook_output["updatedInput"] = {**tool_input, "command": rewritten}
    return answer


def _claude_code_timeout(milliseconds: object) -> float:
    """Claude Code's limit for this call (2 minutes unless the model asked for another), in seconds
    and within Tether's own bounds: Claude Code kills the shell then anyway."""
    from tether.core.config import MAX_COMMAND_TIMEOUT

    given = (
        milliseconds
        if isinstance(milliseconds, (int, float)) and not isinstance(milliseconds, bool)
        else None
    )
    seconds = given / 1000 if given is not None and given > 0 else CLAUDE_CODE_BASH_TIMEOUT
    # A little under Claude Code's: Tether's clock starts later, and its own timeout ends the run
    # cleanly (the output so far, an audit line) where Claude Code's would only send a signal.
    return float(min(max(seconds - TIMEOUT_MARGIN, 1.0), MAX_COMMAND_TIMEOUT))


def runner_command(grant_id: str, command: str) -> str:
    """What Claude Code's shell runs instead: this Python's Tether, the grant, and the command
    itself, so that the question Claude Code shows you names what will run."""
    # -P: the shell runs this in the workspace, outside any sandbox; without it Python would import
    # a `tether/` or `argparse.py` a command left in the current directory before Tether's own
    return shlex.join([sys.executable, "-P", "-m", "tether", "hook", "run", grant_id, "--", command])


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
    recorded = session.gate.record_external(
        event["tool_name"],
        event["tool_input"],
        ok=not failed,
        result={"response": _trimmed(response), "toolUseId": event.get("tool_use_id")},
        source=SOURCE,
    )
    for warning in recorded.warnings:  # a line that could not be written is said, not swallowed
        print(f"tether: {warning}", file=sys.stderr)


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


# --- the runner: what `--sandbox` has Claude Code's shell run ---------------------------------------


def _run_granted(args: argparse.Namespace) -> int:
    """Run one granted command through the gate; its output and exit code are Claude Code's result.

    Exit 126 (as a shell does for a command it cannot run) when there is no grant to claim or it is
    for another command; 1 when the gate refuses it now (the workspace changed since the hook).
    """
    from tether.cli._grants import GrantError, claim
    from tether.cli.run import exit_code
    from tether.core.session import FaceOverrides, open_session

    try:
        grant = claim(args.grant)
    except GrantError as exc:
        print(f"tether: not run: {exc}. Tether's hook issues one for each command", file=sys.stderr)
        return 126
    if args.command is not None and args.command != grant.command:
        print("tether: not run: the grant is for another command", file=sys.stderr)
        return 126
    # the mode the hook judged it in, and no more (`command` and `workspace` include reading)
    overrides = FaceOverrides(permissions=grant.mode, command_timeout=grant.timeout)
    session = open_session(Path(grant.workspace), overrides)
    cancel, stopped_by = _stop_on_signals()
    result = session.gate.call(
        "bash_command",
        {"command": grant.command, "directory": grant.directory, "reason": "Claude Code's Bash"},
        source=SOURCE,
        cancel=cancel,
        approver=_approved_in_claude_code(grant),
    )
    body = result.result
    sys.stdout.write(str(body.get("stdout") or ""))
    sys.stdout.flush()
    sys.stderr.write(str(body.get("stderr") or ""))
    error = str(body.get("error") or "")
    if result.state == "denied" or result.dry_run or "exit_code" not in body:
        sys.stderr.write(f"tether: not run: {result.text.strip()}\n")
    elif error and not error.startswith("command failed: exit code"):
        sys.stderr.write(f"tether: {error}\n")  # a timeout, a cancel: the exit code alone hides it
    if body.get("stdout_truncated") or body.get("stderr_truncated"):
        sys.stderr.write(f"tether: the output was cut in the middle: {body.get('suggestion', '')}\n")
    for warning in result.warnings:
        sys.stderr.write(f"tether: {warning}\n")
    if stopped_by:
        return 128 + stopped_by[0]  # as a shell reports a command ended by that signal
    return exit_code(result) if not result.dry_run else 1


def _stop_on_signals() -> tuple[threading.Event, list[int]]:
    """Claude Code ends a command with SIGTERM (Esc, its own timeout). Turned into the gate's
    cancel: the sandbox is torn down (no placeholder left in the workspace), the audit line written.
    """
    import signal
    import threading

    cancel = threading.Event()
    stopped_by: list[int] = []

    def stop(signum: int, frame: object) -> None:
        stopped_by.append(signum)
        cancel.set()

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, stop)
    return cancel, stopped_by


def _approved_in_claude_code(grant: Grant) -> Approver:
    """Yes, once, to exactly the command Claude Code asked you about; no to anything else."""
    from tether.core.approvals import ApprovalAnswer, denied

    def approve(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        if grant.verdict == "ask" and request.command == grant.command:
            return ApprovalAnswer("allow_once", None, "approved by the user in Claude Code's prompt")
        return denied(
            "Tether's hook let this command through without asking, and now it needs a person: "
            "run it again so that Claude Code asks you"
        )

    return approve
