"""`bash_command`: one shell command, decided by the policy, run in the sandbox, bounded.

Why both forms: `{command: "ls -la | head"}` (seeds 000/003) is what models write; the argv form
`{command: "cat", args: ["a.txt"]}` (seed 004) never touches a shell. Either way the policy sees
the command after the user's transformations, a simple command is exec'd as the argv the policy
checked (quote removal done by the policy, not by a shell), and only a policy-approved compound
command runs under `bash --noprofile --norc -c` — inside the sandbox.

The permission the call needs follows the policy's mode: a command allowed in `read` mode (ls,
cat, git log, …) needs `read`; anything else needs `command` and is treated as mutating (the gate
checkpoints first). Without the permission the call is a dry run that shows exactly what would run.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tether.core.approvals import ApprovalNeed, AskedSegment
from tether.core.config import EffectiveConfig, Transform
from tether.core.permissions import Permission
from tether.core.policy import Decision, Mode, decide, decide_argv, lowest_mode, protected_write_paths
from tether.core.policy.asks import ask_for
from tether.core.sandbox.base import Runner, RunRequest, RunResult
from tether.core.sandbox.env import path_links_in_workspace, sandbox_env
from tether.core.sandbox.protected import protected_paths
from tether.core.secret_files import find_secret_paths
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.git_state import IndexWatch, changes_git_state, repository_lock
from tether.core.tools.git_tool import commit_identity
from tether.core.tools.inputs import Prepared, failure, resolve, validate
from tether.errors import CheckpointError, PolicyDenied, SandboxError, SandboxUnavailable, ToolInputError

TRUNCATION_SUGGESTION = "Use output filtering or pagination"
PROXY_REFUSED = "the network proxy refused"
"""How a refused connection's note starts: it makes the call fail (curl exits 0 on the proxy's 403),
and the demo's audit table names it."""
_SHELL_CHARS = frozenset("|&;<>()$`\\\"'*?[]{}~#\n")

SPEC = ToolSpec(
    name="bash_command",
    description=(
        "Run a shell command in the workspace, inside a sandbox (read-only system, no network, "
        "no secrets). Commands are checked against an allowlist first; pipelines and && lists are "
        "allowed when every part is. Give `reason` (why you run it). Alternatively pass the program "
        "in `command` and its arguments in `args` to run without any shell. Output is capped; long "
        "output keeps its beginning and end."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "maxLength": 10000,
                "description": "The command line, or the program name when `args` is given.",
            },
            "args": {
                "type": "array",
                "items": {"type": "string", "maxLength": 10000},
                "maxItems": 1000,
                "description": "Arguments for the program in `command`; runs without a shell.",
            },
            "reason": {"type": "string", "maxLength": 2000, "description": "Why this command is run."},
            "directory": {
                "type": "string",
                "maxLength": 4096,
                "description": "Working directory relative to the workspace (default: its root).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)

# Documented presets (docs/sandbox.md), off by default: copy them into the user config to use them.
TRANSFORM_PRESETS: tuple[Transform, ...] = (
    Transform(match="pytest", append="--tb=short --maxfail=5", description="short pytest tracebacks"),
    Transform(match="python -m pytest", append="--tb=short --maxfail=5", description="same, via python -m"),
    Transform(match="npm test", append="-- --silent", description="quieter npm test output"),
)


# --- transformations ----------------------------------------------------------------------------


def _is_simple(command: str) -> bool:
    return not any(ch in _SHELL_CHARS for ch in command)


def apply_transforms(
    command: str, args: Sequence[str] | None, transforms: Sequence[Transform]
) -> tuple[str, list[str] | None, list[str]]:
    """Apply the first matching rule; returns (command, args, descriptions of what was applied).

    A rule matches when the command's first words are exactly `match`'s words, and only for a
    simple command (no shell syntax), so an appended flag can never land on the wrong program of a
    pipeline. Tokens already present are not appended twice.
    """
    for rule in transforms:
        want = rule.match.split()
        extra = shlex.split(rule.append) if rule.append else []
        if not want or not extra:
            continue
        if args is not None:
            words = [command, *args]
            if words[: len(want)] == want:
                missing = [t for t in extra if t not in words]
                if missing:
                    return command, [*args, *missing], [_describe(rule)]
            continue
        if not _is_simple(command):
            continue
        words = command.split()
        if words[: len(want)] == want:
            missing = [t for t in extra if t not in words]
            if missing:
                return f"{command.rstrip()} {shlex.join(missing)}", None, [_describe(rule)]
    return command, None if args is None else list(args), []


def _describe(rule: Transform) -> str:
    return rule.description or f"{rule.match} → append {rule.append}"


# --- concurrency --------------------------------------------------------------------------------

_sem_lock = threading.Lock()
_semaphores: dict[int, threading.BoundedSemaphore] = {}


def _semaphore(limit: int) -> threading.BoundedSemaphore:
    """One process-wide semaphore per configured limit: all sessions share the machine's cores."""
    with _sem_lock:
        sem = _semaphores.get(limit)
        if sem is None:
            sem = _semaphores[limit] = threading.BoundedSemaphore(max(1, limit))
        return sem


class _AloneOrTogether:
    """Per workspace, in this process: a command waiting to run alone (with a writable `.git`) goes
    before commands that arrive after it, so a stream of them cannot starve it.

    The exclusion itself is `git_state.repository_lock`, a file lock across processes and
    subfolder sessions; `flock` gives a waiting exclusive holder no priority, this does.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting_alone = 0

    def acquire(self, alone: bool, cancel: threading.Event) -> bool:
        with self._cond:
            if alone:
                self._waiting_alone += 1
            try:
                while self._alone or (self._running if alone else self._waiting_alone):
                    if cancel.is_set():
                        return False
                    self._cond.wait(timeout=0.1)
            finally:
                if alone:
                    self._waiting_alone -= 1
            if alone:
                self._alone = True
            else:
                self._running += 1
            return True

    def release(self, alone: bool) -> None:
        with self._cond:
            if alone:
                self._alone = False
            else:
                self._running -= 1
            self._cond.notify_all()


_exclusions_lock = threading.Lock()
_exclusions: dict[Path, _AloneOrTogether] = {}


def _exclusion(workspace: Path) -> _AloneOrTogether:
    with _exclusions_lock:
        return _exclusions.setdefault(workspace, _AloneOrTogether())


# --- the prepared call --------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Everything decided before running: shown by the dry run, used by execute."""

    display: str  # the command as shown (after transformations)
    original: str
    reason: str
    argv: tuple[str, ...] | None
    script: str | None
    cwd: Path
    workspace: Path
    decision: Decision
    permission: Permission
    transforms: tuple[str, ...]
    timeout: float
    max_output_bytes: int
    protected: tuple[Path, ...]
    env_passthrough: tuple[str, ...]
    max_parallel: int
    masked: tuple[Path, ...] = ()
    git_state: bool = False
    """An approved git command that changes the repository runs: `.git` is writable, but for its
    hooks, config, info and Tether's checkpoint store (they make git run programs, or are ours)."""
    extra_env: tuple[tuple[str, str], ...] = ()

    def request(self) -> RunRequest:
        return RunRequest(
            argv=self.argv,
            script=self.script,
            cwd=self.cwd,
            workspace=self.workspace,
            timeout=self.timeout,
            max_output_bytes=self.max_output_bytes,
            protected=self.protected,
            env_passthrough=self.env_passthrough,
            # Read-mode commands run without a checkpoint: the sandbox makes sure they change nothing.
            read_only_workspace=self.permission == "read",
            masked=self.masked,
            extra_env=self.extra_env,
            scratch_env=package_caches(self.decision),
        )


def _decide(
    command: str, args: list[str] | None, ws: Path, config: EffectiveConfig, cwd: Path
) -> tuple[Decision, Permission]:
    """The lowest mode that allows the command (read < command < workspace), or that asks.

    The permission the call needs is that mode; a mode whose verdict is *ask* stops the climb (the
    person decides, at that level). PolicyDenied when every mode denies: the message is the
    command mode's, the allowlist users know, unless only workspace mode would say more.
    `cwd` is where the command will run: relative paths are judged from there.
    """
    settings = config.policy
    judged: dict[Mode, Decision] = {}

    def run(mode: Mode) -> Decision:
        if mode not in judged:
            judged[mode] = (
                decide_argv([command, *args], mode, ws, settings, cwd=cwd)
                if args is not None
                else decide(command, mode, ws, settings, cwd=cwd)
            )
        return judged[mode]

    settled = lowest_mode(run)
    if settled is not None:
        return settled
    as_command = run("command")
    payload = as_command.error_payload()
    raise PolicyDenied(str(payload["error"]), decision=as_command)


def approval_need(decision: Decision, display: str, permission: Permission) -> ApprovalNeed | None:
    """The question for the person when the policy's verdict is *ask*: only the segments that need it."""
    if decision.verdict != "ask":
        return None
    return ApprovalNeed(
        command=display,
        mode=permission,
        rule=decision.rule,
        reason=decision.asks[0].reason,
        segments=tuple(AskedSegment(a.argv, a.rule, a.reason) for a in decision.asks),
    )


def _refuse_path_through_workspace_links(ws: Path) -> None:
    links = path_links_in_workspace(ws)
    if links:
        entry, link = links[0]
        raise ToolInputError(
            f"bash_command: refused: the PATH entry {entry} goes through {link.relative_to(ws)}, a "
            "symlink inside the workspace, so a command could replace it and put programs on your "
            f"PATH. Put its target ({os.path.realpath(entry)}) on PATH instead, then restart the "
            "editor. Read-only commands still run."
        )


def make_plan(ctx: ToolContext, args: Mapping[str, Any]) -> Plan:
    a = validate(SPEC, args)
    original: str = a["command"]
    raw_args: list[str] | None = a.get("args")
    command, argv_args, applied = apply_transforms(original, raw_args, ctx.config.transforms)
    ws = Path(ctx.workspace).resolve()
    cwd = ws
    if a.get("directory") not in (None, "", "."):
        where = resolve(a["directory"], ws, write=False, settings=ctx.config.policy, tool="bash_command")
        if not where.path.is_dir():
            raise ToolInputError(f"bash_command: directory {a['directory']!r} is not a directory")
        cwd = where.path
    decision, permission = _decide(command, argv_args, ws, ctx.config, cwd)
    if permission != "read":  # read-mode commands run with the whole workspace read-only
        _refuse_path_through_workspace_links(ws)
    argv: tuple[str, ...] | None
    if argv_args is not None:
        exact = (command, *argv_args)
        argv, script, display = exact, None, shlex.join(exact)
    elif decision.needs_shell:
        argv, script, display = None, command, command
    else:
        if len(decision.segments) != 1:  # the policy promised one simple command; refuse otherwise
            raise PolicyDenied("bash_command: the policy returned no single command to run", decision)
        argv, script, display = decision.segments[0].argv, None, command
    sandbox = ctx.config.sandbox
    git_state = changes_git_state(decision, ws, ctx.config, cwd)
    return Plan(
        display=display,
        original=original if raw_args is None else shlex.join([original, *raw_args]),
        reason=a.get("reason", ""),
        argv=argv,
        script=script,
        cwd=cwd,
        workspace=ws,
        decision=decision,
        permission=permission,
        transforms=tuple(applied),
        timeout=sandbox.command_timeout,
        max_output_bytes=sandbox.max_output_bytes,
        # The policy's names (PATH tools inside the workspace, an activated .venv, too: see Gate);
        # `execute` replaces them by the whole set — other repositories' `.git` included — when the
        # command starts, after any question (looking twice cost every command a second walk).
        protected=tuple(protected_write_paths(ws, ctx.config.policy)),
        git_state=git_state,
        env_passthrough=sandbox.env_passthrough,
        max_parallel=sandbox.max_parallel,
    )


GIT_KEPT_READ_ONLY = ("hooks", "config", "info", "tether", "modules", "objects/info")


PACKAGE_CACHES: tuple[tuple[str, str], ...] = (
    ("npm_config_cache", "npm-cache"),
    ("YARN_CACHE_FOLDER", "yarn-cache"),
    ("BUN_INSTALL_CACHE_DIR", "bun-cache"),
)
"""Where package managers cache in the sandbox: a folder of the command's own, discarded with it."""
PNPM_STORE = ("npm_config_store_dir", "pnpm-store")
"""pnpm's store, set for pnpm commands only: npm warns about the setting it does not know."""


def package_caches(decision: Decision) -> tuple[tuple[str, str], ...]:
    pnpm = any(segment.argv[0] == "pnpm" for segment in decision.segments)
    return (*PACKAGE_CACHES, PNPM_STORE) if pnpm else PACKAGE_CACHES


NODE_INSTALLERS = frozenset({"npm", "yarn", "pnpm", "bun"})


def node_installs(decision: Decision) -> Literal["only", "mixed", "none"]:
    """Whether the command is Node package installs (`npm ci`, `pnpm add x`, …) and nothing else but
    a `cd` ("only"), installs and more ("mixed"), or no install at all. Only the first may write
    `node_modules/.bin`, since that is what installing means there. Not `npm ci && python3 x.py`:
    an "Always allow `npm install`" is no rule for the rest, which could plant a program there."""
    installs = [
        argv[0] in NODE_INSTALLERS
        and (found := ask_for(argv)) is not None
        and found.rule == "ask.package_install"
        for argv in (segment.argv for segment in decision.segments)
    ]
    if not any(installs):
        return "none"
    others = [s.argv for s, install in zip(decision.segments, installs, strict=True) if not install]
    return "only" if all(argv[:1] == ("cd",) for argv in others) else "mixed"


NODE_BIN_NOTE = (
    "node_modules/.bin stayed read-only: this command does more than install Node packages, so an "
    "install in it could not link its programs there. Run the install as a command of its own"
)


def _protected(ws: Path, config: EffectiveConfig, git_state: bool, *, read_only: bool) -> tuple[Path, ...]:
    if read_only:  # the whole workspace is read-only
        return tuple(protected_write_paths(ws, config.policy))
    paths = protected_paths(ws, config.policy)
    git_dir = ws / ".git"
    if not git_state or not git_dir.is_dir() or git_dir.is_symlink():
        return paths
    return tuple(p for p in paths if p != git_dir) + tuple(git_dir / d for d in GIT_KEPT_READ_ONLY)


def _transform_fields(plan: Plan) -> dict[str, Any]:
    if not plan.transforms:
        return {}
    return {"original_command": plan.original, "command": plan.display, "transforms": list(plan.transforms)}


def dry_run(ctx: ToolContext, plan: Plan) -> ToolOutcome:
    try:
        backend = ctx.runner().name
    except SandboxUnavailable as exc:
        backend = f"unavailable ({exc})"
    env_names = sorted(sandbox_env(plan.env_passthrough))
    if plan.permission == "workspace":
        how = "Needs workspace permission (any program, in the sandbox): use --permissions workspace"
    else:
        hint = "--tool=command" if plan.permission == "command" else "--tool=read"
        how = f"Use {hint} or --tool=all to execute"
    text = f"Dry-run: would execute command: {plan.display}\nReason: {plan.reason}\n{how}"
    if plan.transforms:
        text += f"\n(transformed from: {plan.original})"
    result: dict[str, Any] = {
        "dry_run": True,
        "command": plan.display,
        "reason": plan.reason,
        "argv": list(plan.argv) if plan.argv is not None else None,
        "script": plan.script,
        "shell": None if plan.script is None else ["bash", "--noprofile", "--norc", "-c"],
        "cwd": str(plan.cwd),
        "backend": backend,
        "limits": {"timeout_seconds": plan.timeout, "max_output_bytes": plan.max_output_bytes},
        "env": env_names,
        "permission_needed": plan.permission,
        **_transform_fields(plan),
    }
    return ToolOutcome(ok=True, result=result, text=text, sandbox=backend)


def shape_result(plan: Plan, run: RunResult) -> ToolOutcome:
    """Seed result shapes: success, failure (`command failed: exit code N`) and timeout."""
    result: dict[str, Any] = {
        "stdout": run.stdout,
        "stderr": run.stderr,
        "exit_code": run.exit_code,
        "duration_ms": run.duration_ms,
    }
    error: str | None = None
    if run.timed_out:
        error = f"command timeout after {plan.timeout:g}s"
    elif run.cancelled:
        error = "command cancelled"
    elif run.exit_code != 0:
        error = f"command failed: exit code {run.exit_code}"
    if error is not None:
        result["error"] = error
    if run.stdout_truncated:
        result["stdout_truncated"] = True
    if run.stderr_truncated:
        result["stderr_truncated"] = True
    if run.stdout_truncated or run.stderr_truncated:
        result["suggestion"] = TRUNCATION_SUGGESTION
    if run.binary_output:
        result["binary_output"] = True
    if run.warning:
        result["warning"] = run.warning
    result.update(_transform_fields(plan))
    parts = [run.stdout.rstrip("\n")] if run.stdout else []
    if run.stderr:
        parts.append("[stderr]\n" + run.stderr.rstrip("\n"))
    if error is not None:
        parts.append(f"Error: {error}")
    if "suggestion" in result:
        parts.append(f"(output truncated: {TRUNCATION_SUGGESTION})")
    if run.warning:
        parts.insert(0, run.warning)
    text = "\n".join(parts) if parts else "(no output)"
    warnings = [run.warning] if run.warning else []
    return ToolOutcome(
        ok=error is None,
        result=result,
        text=text,
        error=error,
        sandbox=run.warning or run.backend,
        warnings=warnings,
    )


def execute(ctx: ToolContext, plan: Plan) -> ToolOutcome:
    runner = ctx.runner()  # SandboxUnavailable → a failed outcome (fail closed, nothing ran)
    try:  # listed now, not when planned: a file created since must be hidden too
        masked = find_secret_paths(
            plan.workspace, ctx.config.policy.secrets, skip_dirs=ctx.config.checkpoints.regenerated
        )
    except OSError as exc:
        return failure(
            f"refused: the workspace's secret files could not be listed ({exc}), so they could not be "
            "hidden from the command; nothing ran"
        )
    read_only = plan.permission == "read"
    if not read_only:
        # `.tether/` is protected: if missing, the run would pin a placeholder file there, and every
        # other call's audit line would fail to be written while it runs. Made real first.
        from tether.core.audit import state_dir

        try:
            state_dir(plan.workspace)
        except OSError as exc:
            return failure(f"refused: the workspace's .tether folder could not be made ({exc}); nothing ran")
    try:  # looked at again now, after any question: what another command changed meanwhile counts
        protected = _protected(plan.workspace, ctx.config, plan.git_state, read_only=read_only)
    except SandboxError as exc:
        return failure(f"{exc}; nothing ran")
    installs = node_installs(plan.decision)
    if installs == "only":
        # `npm install`, allowed or approved as such, writes `node_modules/.bin`: its links are how
        # packages ship their programs. Kept read-only it cannot create `node_modules` at all.
        protected = tuple(p for p in protected if p != plan.workspace / "node_modules" / ".bin")
    note = NODE_BIN_NOTE if installs == "mixed" else None
    plan = replace(plan, masked=masked, protected=protected)
    if ctx.not_checkpointed:  # what rollback could not restore, the command cannot change
        # but a symlink (a `.gitmodules` link git cannot store) the sandbox cannot hold in place:
        # protected, it would refuse every command that writes. It stays as it is, reported.
        kept = tuple(p for p in ctx.not_checkpointed if os.path.lexists(p) and not os.path.islink(p))
        plan = replace(plan, protected=plan.protected + kept)
    if plan.git_state:  # the user's identity, which the sandbox's hidden global config would lose
        plan = replace(plan, extra_env=tuple(commit_identity(plan.workspace).items()))
    exclusion = _exclusion(plan.workspace)
    if not exclusion.acquire(plan.git_state, ctx.cancel):
        return failure("command cancelled before it started", exit_code=-1)
    try:
        with contextlib.ExitStack() as stack:
            try:
                held = stack.enter_context(
                    repository_lock(plan.workspace, alone=plan.git_state, cancel=ctx.cancel)
                )
            except OSError as exc:
                return failure(f"refused: the repository's run lock could not be taken ({exc}); nothing ran")
            if not held:
                return failure("command cancelled before it started", exit_code=-1)
            outcome = _run_checked(ctx, plan, runner, masked)
            if note is not None:
                outcome.warnings.append(note)
            return outcome
    finally:
        exclusion.release(plan.git_state)


def _run_checked(ctx: ToolContext, plan: Plan, runner: Runner, masked: tuple[Path, ...]) -> ToolOutcome:
    """The run itself, once no other command can change the work tree under a writable `.git`."""
    if plan.git_state:  # checked again now that nothing else runs: the work tree may have changed
        try:
            changes_git_state(plan.decision, plan.workspace, ctx.config, plan.cwd)
        except PolicyDenied as exc:
            return failure(f"refused: the work tree changed since the question: {exc}; nothing ran")
    try:
        watch = IndexWatch(plan.workspace, plan.protected) if plan.git_state else None
    except (CheckpointError, OSError) as exc:
        return failure(f"refused: the repository's index could not be read ({exc}); nothing ran")
    try:
        sem = _semaphore(plan.max_parallel)
        while not sem.acquire(timeout=0.1):
            if ctx.cancel.is_set():
                return failure("command cancelled before it started", exit_code=-1)
        try:
            with _network(ctx, plan, runner.name) as (request, network_notes):
                run = runner.run(request, ctx.cancel)
        finally:
            sem.release()
        outcome = shape_result(plan, run)
        if watch is not None:
            outcome.warnings.extend(watch.undo())
    finally:
        if watch is not None:
            watch.discard()
    refusals = [n for n in network_notes if n.startswith(PROXY_REFUSED)]
    if refusals and outcome.ok:  # curl without -f exits 0 on the proxy's 403: the command did not get it
        error = refusals[0] + (f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else "")
        outcome.ok = False
        outcome.error = error
        outcome.result["error"] = error
        outcome.text = f"{outcome.text}\n[network] {error}".lstrip("\n")
    outcome.warnings.extend(n for n in network_notes if n not in refusals[:1])
    note = masked_note(plan.workspace, masked, plan.display, run.stdout + run.stderr)
    if note is not None:
        outcome.warnings.append(note)
    return outcome


@contextlib.contextmanager
def _network(ctx: ToolContext, plan: Plan, backend: str) -> Iterator[tuple[RunRequest, list[str]]]:
    """The run request, with the network proxy for this one command when `[network]` allows domains,
    and the notes for the result (filled in as connections are refused: read them after the run).

    Only bubblewrap can bind the proxy's socket into a sandbox that keeps its own network namespace;
    with another backend the command runs without network, and the result says why.
    """
    request = plan.request()
    notes: list[str] = []
    network = ctx.config.network
    if not network.enabled or plan.permission == "read":
        yield request, notes
        return
    if backend != "bubblewrap":
        notes.append(
            f"the network allowlist needs the bubblewrap sandbox; with {backend} this command has no "
            "network (docs/network.md)"
        )
        yield request, notes
        return
    from tether.core.audit import state_dir
    from tether.core.network.bridge import proxy_env
    from tether.core.network.proxy import NetworkProxy

    # The proxy writes audit lines while the command runs: `.tether/` must be the real directory
    # then, not the placeholder the sandbox mounts over a protected path that does not exist yet.
    state_dir(plan.workspace)

    def record(connection: dict[str, Any]) -> None:
        if connection.get("decision") != "allow":
            notes.append(
                f"{PROXY_REFUSED} {connection.get('host')}:{connection.get('port')} "
                f"({connection.get('rule')}): {connection.get('reason') or connection.get('error')}"
            )
        if ctx.on_network is not None:
            ctx.on_network({**connection, "command": plan.display})

    with NetworkProxy(network, record) as proxy:
        env = request.extra_env + proxy_env()
        yield replace(request, network_socket=proxy.socket_path, extra_env=env), notes


def masked_note(workspace: Path, masked: tuple[Path, ...], command: str, output: str) -> str | None:
    """Say so when a command met a hidden secret: its empty read would otherwise look like a bug."""
    names = [p.relative_to(workspace).as_posix() for p in masked]
    met = [n for n in names if n in command or n in output or n.rsplit("/", 1)[-1] in command]
    if not met:
        return None
    shown = ", ".join(met[:5]) + (" …" if len(met) > 5 else "")
    return (
        f"secret files are hidden inside the sandbox (they read as empty, writes do not reach them): "
        f"{shown}. See docs/secrets.md; to let one file through, add it to `[secrets] allow` in your "
        "user config"
    )


class BashCommandTool:
    spec = SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        plan = make_plan(ctx, args)
        return Prepared(
            permission=plan.permission,
            mutating=plan.permission != "read",
            summary=f"bash_command({plan.display})",
            run=lambda: execute(ctx, plan),
            preview=lambda: dry_run(ctx, plan),
            decision=plan.decision.to_json(),
            approval=approval_need(plan.decision, plan.display, plan.permission),
        )
