"""The gate: the one place where every tool call is decided, checkpointed, executed and audited.

Every face — an agent's `tool_use`, an editor command, the CLI — calls `Gate`. None of them runs a
tool directly, so there is exactly one permission check, one checkpoint site and one audit writer.
A call goes:

    input checks → validation (tool.prepare: input, paths, policy verdict) → permission (else a dry
    run) → pre-hooks → checkpoint → execute → post-hooks → audit and event (`_finish`) → result

docs/architecture.md ("The life of one tool call") names the file and function of each step.

Nothing a caller sends can crash the gate: unknown tools, malformed input, denials and tool failures
all come back as a `GateResult` with `is_error` set and a message the model or user can act on.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tether.core.approvals import (
    TITLES,
    AlwaysRule,
    ApprovalAnswer,
    ApprovalNeed,
    ApprovalRequest,
    Approver,
    AskedSegment,
    RequestIds,
    SessionAllowances,
    denied,
    session_pattern,
)
from tether.core.config import EffectiveConfig
from tether.core.permissions import Permission, Permissions, format_permissions
from tether.core.policy import Decision, check_path, decide, lowest_mode
from tether.core.policy.ruleset import Rule, rule_for_segment
from tether.core.policy.types import MODES, Mode
from tether.errors import (
    CheckpointError,
    ConfigError,
    PolicyDenied,
    ProposalError,
    ProposalStale,
    TetherError,
    ToolInputError,
)

if TYPE_CHECKING:
    # Imported where they are first used: `tether check` and other one-shot faces open a session
    # but never touch proposals, the audit log, checkpoints, the sandbox or the tools, and importing
    # them was half of a cold start (tests/bench/bench_cold_start.py).
    from tether.core.audit import AuditLog, VerifyResult
    from tether.core.checkpoints import Checkpoint, Checkpoints
    from tether.core.proposals import Hunk, Proposal, ProposalStore
    from tether.core.sandbox import Runner
    from tether.core.tools.base import DocumentSource, Tool, ToolContext, ToolOutcome

log = logging.getLogger(__name__)

EventSink = Callable[[dict[str, Any]], None]
ApplyEdit = Callable[["Proposal", "list[Hunk]", str], bool]

MAX_INPUT_BYTES = 4_000_000

CallState = Literal[
    "executed",  # ran (or applied) and succeeded
    "failed",  # allowed, but the tool or the command failed
    "denied",  # refused by the policy, a hook, the session or the person asked
    "proposed",  # an edit became a proposal for the user to review
    "dry_run",  # the session lacks the permission: shown, not run
    "stale",  # a proposal whose file moved on
    "rolled_back",  # a rollback restored the tree
    "accepted",  # proposal states after accept/reject
    "partially_accepted",
    "rejected",
    "pending",
]
"""What happened to a call. Faces read this instead of parsing the result's text."""

VerdictKind = Literal["allow", "ask", "deny"]
DecidedBy = Literal["policy", "mode", "hook", "user", "session"]


@dataclass(frozen=True)
class Verdict:
    """The one typed verdict on a call: what was decided, by which rule, and who decided it.

    `decided_by` says which layer had the last word: the policy, the session's permission mode (a
    dry run), a user hook, the user (accept, rollback, an answer to a question) or the session itself
    (read-only). Its JSON keeps the `allowed` key every face and audit reader already knows.
    """

    verdict: VerdictKind
    rule: str
    reason: str
    decided_by: DecidedBy
    suggestion: str | None = None

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "verdict": self.verdict,
            "rule": self.rule,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "decidedBy": self.decided_by,
        }


def _user_verdict(rule: str, reason: str) -> Verdict:
    return Verdict("allow", rule, reason, "user")


@dataclass
class GateResult:
    """What a face gets back from the gate, for any call, successful or not."""

    tool: str
    ok: bool
    dry_run: bool
    result: dict[str, Any]
    text: str
    verdict: Verdict | None = None
    checkpoint: str | None = None
    proposal: Proposal | None = None
    duration_ms: int = 0
    warnings: list[str] = field(default_factory=list)
    state: CallState = "failed"

    @property
    def is_error(self) -> bool:
        return not self.ok

    @property
    def decision(self) -> dict[str, Any] | None:
        """The verdict as JSON (the shape of `decision` in results, events and the audit log)."""
        return self.verdict.to_json() if self.verdict is not None else None

    def to_json(self, workspace: Path | None = None) -> dict[str, Any]:
        proposal_json = None
        if self.proposal is not None and workspace is not None:
            proposal_json = self.proposal.to_json(workspace)
        return {
            "tool": self.tool,
            "state": self.state,
            "ok": self.ok,
            "dryRun": self.dry_run,
            "isError": self.is_error,
            "result": self.result,
            "text": self.text,
            "decision": self.decision,
            "checkpoint": self.checkpoint,
            "proposalId": self.proposal.id if self.proposal is not None else None,
            "proposal": proposal_json,
            "durationMs": self.duration_ms,
            "warnings": list(self.warnings),
        }


@dataclass
class _CallRecord:
    """What the audit entry needs to know about a call besides its result."""

    args: Any
    source: str
    conversation_id: str | None = None
    started: float = field(default_factory=time.monotonic)


def _error_result(tool: str, message: str, **extra: Any) -> GateResult:
    return GateResult(
        tool=tool,
        ok=False,
        dry_run=False,
        result={"ok": False, "error": message, **extra},
        text=message if message.startswith("Error") else f"Error: {message}",
    )


class Gate:
    """One session's gate over one workspace. Thread-safe: faces may call it from worker threads.

    Faces do not build a gate themselves: `tether.core.session.open_session` assembles the
    effective configuration (every layer, one trust rule, PATH-tool protection) and hands it here.
    """

    def __init__(
        self,
        workspace: Path,
        permissions: Permissions,
        *,
        config: EffectiveConfig,
        read_only: bool = False,
        approver: Approver | None = None,
        documents: DocumentSource | None = None,
        on_event: EventSink | None = None,
        tools: Sequence[Tool] | None = None,
        runner_factory: Callable[[], Runner] | None = None,
        rules_file: Path | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.rules_file = rules_file
        """The user config "Always allow" writes rules into (None: the choice only lasts the session)."""
        self.config = config
        self.read_only = read_only
        self._permissions: Permissions = frozenset() if read_only else permissions
        self.approver = approver
        self.allowances = SessionAllowances()
        self._approval_ids = RequestIds()
        self._documents = documents
        self.on_event = on_event
        self._tool_list = tools
        self._lazy_lock = threading.Lock()
        self._proposals: ProposalStore | None = None
        self._audit: AuditLog | None = None
        self._tool_map: dict[str, Tool] | None = None
        self._runner_factory = runner_factory
        self._runner: Runner | None = None
        self._runner_lock = threading.Lock()
        self._checkpoints: Checkpoints | None = None
        self._checkpoint_lock = threading.Lock()
        self._packing = threading.Event()  # checkpoint maintenance is running on its thread

    # --- parts built on first use -----------------------------------------------------------------

    def _once(self, attr: str, build: Callable[[], Any]) -> Any:
        """`attr`, built by `build` on first use (under a lock: threads share one store)."""
        with self._lazy_lock:
            value = getattr(self, attr)
            if value is None:
                value = build()
                setattr(self, attr, value)
            return value

    @property
    def proposals(self) -> ProposalStore:
        from tether.core.proposals import ProposalStore

        store: ProposalStore = self._once("_proposals", lambda: ProposalStore(self.workspace))
        return store

    @property
    def audit(self) -> AuditLog:
        from tether.core.audit import AuditLog

        log_: AuditLog = self._once("_audit", lambda: AuditLog(self.workspace))
        return log_

    @property
    def documents(self) -> DocumentSource:
        """The editor's open documents; none (everything from disk) for faces without an editor."""
        if self._documents is None:
            from tether.core.tools.base import NoDocuments

            self._documents = NoDocuments()
        return self._documents

    @property
    def _tools(self) -> dict[str, Tool]:
        from tether.core.tools.registry import default_tools

        tools: dict[str, Tool] = self._once(
            "_tool_map", lambda: {tool.spec.name: tool for tool in (self._tool_list or default_tools())}
        )
        return tools

    # --- what faces ask about ------------------------------------------------------------------

    @property
    def permissions(self) -> Permissions:
        """The permission set in force. Changed only through `set_permissions`, which audits it."""
        return self._permissions

    def tool_names(self) -> list[str]:
        return sorted(self._tools)

    def tool_definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions: exactly the tools this gate will run."""
        return [self._tools[name].spec.anthropic_definition() for name in sorted(self._tools)]

    def check_command(
        self, command: str, mode: str = "command", *, cwd: Path | None = None
    ) -> dict[str, Any]:
        """The policy's verdict on `command` in `mode`, with this session's effective settings.

        `cwd` is where the command will run (default: the workspace root): an agent that keeps its
        own shell (Claude Code's Bash) may be in a subdirectory, and relative paths resolve there.
        """
        if mode not in MODES:
            raise ToolInputError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        decision = decide(command, mode, self.workspace, self.config.policy, cwd=cwd)
        result: dict[str, Any] = decision.to_json()
        return result

    def lowest_mode(
        self, command: str, up_to: str = "workspace", *, cwd: Path | None = None
    ) -> tuple[str | None, dict[str, Any]]:
        """The mode `bash_command` would need for `command` (the lowest, up to `up_to`, that allows
        it or asks about it) and the verdict there; None and `up_to`'s verdict when every mode up to
        it denies. For a face that runs the command through the gate later (Claude Code's hook with
        `--sandbox`): both climb the same ladder (`policy.lowest_mode`)."""
        if up_to not in MODES:
            raise ToolInputError(f"mode must be one of {', '.join(MODES)}, not {up_to!r}")

        def judge(mode: Mode) -> Decision:
            return decide(command, mode, self.workspace, self.config.policy, cwd=cwd)

        settled = lowest_mode(judge, up_to)
        if settled is None:
            return None, judge(up_to).to_json()
        decision, mode = settled
        return mode, decision.to_json()

    def check_path(self, path: str, *, write: bool) -> dict[str, Any]:
        """The policy's verdict on reading or writing `path` (relative: to the workspace root), for
        faces whose agent reads and edits files itself (Claude Code's Read, Edit, Write): the same
        outside-the-workspace, protected and secret rules the gate's own tools apply."""
        found = check_path(path, self.workspace, write=write, settings=self.config.policy)
        return {
            "allowed": found.ok,
            "verdict": "allow" if found.ok else "deny",
            "rule": found.rule,
            "reason": found.reason,
        }

    def secrets_a_search_reads(
        self,
        path: str | None,
        *,
        cwd: Path | None = None,
        globs: Sequence[str] = (),
        types: Sequence[str] = (),
    ) -> list[str]:
        """The secret files a ripgrep search of `path` (default: `cwd`, else the workspace) would
        read, for a face whose agent searches itself (Claude Code's Grep): outside the sandbox
        nothing hides them. Shown relative to the workspace when inside it. Raises TetherError
        when they cannot be listed (the face must then refuse: fail closed)."""
        from tether.core.secret_files import secrets_a_search_reads

        base = cwd if cwd is not None else self.workspace
        target = base / os.path.expanduser(path) if path else base
        # `[secrets] allow` names workspace paths: checked on the workspace-relative form
        settings = self.config.policy.secrets
        try:
            found = secrets_a_search_reads(target, settings, globs=globs, types=types)
        except OSError as exc:
            raise TetherError(
                f"the files a search of {target} would read could not be listed: {exc}"
            ) from None
        shown: list[str] = []
        for hit in found:
            inside = hit.is_relative_to(self.workspace)
            rel = hit.relative_to(self.workspace).as_posix() if inside else str(hit)
            if inside and rel in settings.allowed:
                continue
            shown.append(rel)
        return shown

    def record_external(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        ok: bool,
        result: Mapping[str, Any],
        source: str,
        verdict: Verdict | None = None,
        state: CallState | None = None,
    ) -> GateResult:
        """Audit a call another program ran or refused (an agent's own tool), through the one writer.

        The gate did not run it, so nothing is decided here: the line records what the face
        reports, under the face's `source`, in the same hash chain as the gate's own calls.
        """
        gate_result = GateResult(
            tool=tool, ok=ok, dry_run=False, result=dict(result), text="", verdict=verdict
        )
        return self._finish(gate_result, _CallRecord(args, source), state=state)

    def _record_connection(self, connection: Mapping[str, Any], source: str) -> None:
        """One audit line per connection the network proxy saw (docs/network.md)."""
        allowed = connection.get("decision") == "allow"
        rule = str(connection.get("rule") or ("network.allowed" if allowed else "network.denied"))
        reason = str(connection.get("reason") or connection.get("error") or "")
        recorded = self.record_external(
            "network",
            {k: connection.get(k) for k in ("host", "port", "method", "command")},
            ok=allowed,
            result=dict(connection),
            source=source,
            verdict=Verdict("allow" if allowed else "deny", rule, reason, "policy"),
            state="executed" if allowed else "denied",
        )
        for warning in recorded.warnings:  # nobody reads this result: the failure goes to the log
            log.warning("network audit line: %s", warning)

    def checkpoints(self) -> list[dict[str, Any]]:
        store = self._checkpoint_store()
        kept = store.list()
        if not kept:
            return []
        changed = store.files_changed_since_many(kept)  # one snapshot of the present for all of them
        return [
            {"id": cp.id, "time": cp.time, "tool": cp.tool, "message": cp.message, "files": changed[cp.id]}
            for cp in kept
        ]

    def checkpoint_store(self) -> Checkpoints:
        """The private checkpoint store, for listings that need more than `checkpoints()` gives."""
        return self._checkpoint_store()

    def log(self, n: int | None = None) -> list[dict[str, Any]]:
        return self.audit.read(n)

    def verify_log(self) -> VerifyResult:
        """Check the audit log's hash chain (`tether log --verify`)."""
        return self.audit.verify()

    def status(self) -> dict[str, Any]:
        return {
            "workspace": str(self.workspace),
            "permissions": format_permissions(self.permissions),
            "readOnly": self.read_only,
            "sandbox": self.sandbox_name(),
            "pendingProposals": len(self.proposals.list(pending_only=True)),
            "checkpointsEnabled": self.config.checkpoints.enabled,
        }

    def sandbox_name(self) -> str:
        """The backend commands would run in, without starting one (`auto` is resolved)."""
        try:
            return self._runner_or_raise().name
        except TetherError as exc:
            return f"unavailable: {exc}"

    def runner(self) -> Runner:
        """The session's sandbox runner (`tether sandbox` runs diagnostics in it, outside the policy)."""
        return self._runner_or_raise()

    # --- the session's permissions -------------------------------------------------------------

    def set_permissions(self, permissions: Permissions, *, source: str = "cli") -> GateResult:
        """Change the permission set: the one way to do it, decided by the user, and audited.

        The audit line (`"tool": "set_permissions"`) records the old and the new set; every later
        line records the new set under `permissions`. A read-only session refuses.
        """
        old = format_permissions(self._permissions)
        new = format_permissions(permissions)
        record = _CallRecord({"old": old, "new": new}, source)
        if self.read_only:
            message = (
                "this session is read-only (an untrusted workspace): permissions stay `none`. "
                "Trust the workspace in the editor to change them"
            )
            result = _error_result("set_permissions", message)
            result.verdict = Verdict("deny", "session.read_only", message, "session")
            return self._finish(result, record, state="denied")
        self._permissions = permissions
        result = GateResult(
            tool="set_permissions",
            ok=True,
            dry_run=False,
            result={"ok": True, "old": old, "new": new},
            text=f"Permissions: {old} → {new}",
            verdict=_user_verdict("user.set_permissions", "set by the user"),
        )
        return self._finish(result, record, state="executed")

    def allow_secret(self, path: str, *, source: str = "lsp") -> GateResult:
        """Let one secret file through for this session only (docs/secrets.md): the person's choice,
        made in the editor, audited; the agent cannot call it. Its content then reaches the model."""
        from tether.core.policy.secrets import secret_pattern

        record = _CallRecord({"path": path}, source)
        rel = os.path.normpath(path.strip()) if isinstance(path, str) and path.strip() else ""
        inside = bool(rel) and not os.path.isabs(rel) and rel != ".." and not rel.startswith("../")
        found = check_path(rel, self.workspace, write=False, settings=self.config.policy) if inside else None
        problem = None
        if self.read_only:
            problem = "this session is read-only (an untrusted workspace)"
        elif found is None or found.rule not in ("path.secret", "allowed"):
            problem = f"{path!r} is not a file in the workspace ({found.reason if found else 'empty path'})"
        elif secret_pattern(rel, self.config.policy.secrets) is None:
            problem = f"{path!r} is not a secret file: nothing to allow"
        if problem is not None:
            result = _error_result("allow_secret", problem)
            result.verdict = Verdict("deny", "session.allow_secret", problem, "user")
            return self._finish(result, record, state="denied")
        policy = self.config.policy
        allowed = (*policy.secret_allowed, rel)
        self.config = replace(self.config, policy=replace(policy, secret_allowed=allowed))
        result = GateResult(
            tool="allow_secret",
            ok=True,
            dry_run=False,
            result={"ok": True, "path": rel, "allowed": list(allowed)},
            text=f"{rel} may be read for this session; its content will reach the model",
            verdict=_user_verdict("user.allow_secret", "allowed by the user for this session"),
        )
        return self._finish(result, record, state="executed")

    # --- tool calls ----------------------------------------------------------------------------

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | Any,
        *,
        source: str = "cli",
        conversation_id: str | None = None,
        cancel: threading.Event | None = None,
        approver: Approver | None = None,
    ) -> GateResult:
        """Decide and run one tool call. Never raises for anything the caller sent.

        `approver` asks the person behind this call's face (an MCP client that can show a form) in
        place of the session's own; without either, an *ask* is a deny.
        """
        record = _CallRecord(args, source, conversation_id)
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            result = _error_result(
                str(name),
                f"unknown tool {name!r}; available tools: {', '.join(self.tool_names())}",
                available_tools=self.tool_names(),
            )
            return self._finish(result, record)
        if not isinstance(args, Mapping):
            result = _error_result(name, f"tool input must be a JSON object, not {type(args).__name__}")
            return self._finish(result, record)
        problem, oversized = _input_problem(args)
        if problem is not None:
            if oversized:
                record.args = {"oversized": True}  # the log line stays small
            return self._finish(_error_result(name, problem), record)

        from tether.core.tools.base import ToolContext

        ctx = ToolContext(
            workspace=self.workspace,
            config=self.config,
            proposals=self.proposals,
            runner_factory=self._runner_or_raise,
            documents=self.documents,
            cancel=cancel if cancel is not None else threading.Event(),
        )
        ctx.on_network = lambda connection: self._record_connection(connection, source)
        try:
            return self._call(tool, ctx, args, record, approver or self.approver)
        except Exception as exc:  # a bug in a tool must not take the session down
            log.error("tool %s crashed: %s\n%s", name, exc, traceback.format_exc())
            result = _error_result(name, f"internal error in {name}: {exc.__class__.__name__}: {exc}")
            return self._finish(result, record)

    def _call(
        self,
        tool: Tool,
        ctx: ToolContext,
        args: Mapping[str, Any],
        record: _CallRecord,
        approver: Approver | None,
    ) -> GateResult:
        name = tool.spec.name
        try:
            prepared = tool.prepare(ctx, args)
        except PolicyDenied as exc:
            payload = _denial_payload(exc)
            result = GateResult(
                tool=name,
                ok=False,
                dry_run=False,
                result=payload,
                text=_denial_text(payload),
                verdict=_policy_verdict(exc.decision, fallback_reason=str(exc)),
            )
            return self._finish(result, record, state="denied")
        except (ToolInputError, TetherError) as exc:
            return self._finish(_error_result(name, str(exc)), record)

        verdict = _policy_verdict(prepared.decision)
        if not self._granted(prepared.permission):
            outcome = prepared.dry_run()
            if verdict is not None:
                verdict = Verdict(verdict.verdict, verdict.rule, verdict.reason, "mode", verdict.suggestion)
            result = _from_outcome(name, outcome, dry_run=True, verdict=verdict)
            state: CallState = "proposed" if outcome.proposal is not None else "dry_run"
            return self._finish(result, record, sandbox=outcome.sandbox, state=state)

        need = prepared.approval
        if need is not None:
            answer, asked = self._approve(name, need, ctx.cancel, record.source, approver)
            if not answer.allowed:
                return self._finish(_refused_by_person(name, need, answer, asked), record, state="denied")
            how = "for this session" if answer.choice != "allow_once" else "once"
            who = "the session's earlier answer" if not asked else "the user"
            verdict = Verdict("allow", need.rule, f"approved {how} by {who}: {need.reason}", "user")

        veto = self._run_hooks("pre", name, args)
        if veto is not None:
            result = _error_result(name, veto)
            result.verdict = Verdict("deny", "hook.pre_tool_use", veto, "hook")
            return self._finish(result, record, state="denied")

        checkpoint: Checkpoint | None = None
        warnings: list[str] = []
        if prepared.mutating:
            try:
                checkpoint, cp_warnings = self._take_checkpoint(prepared.summary)
                warnings.extend(cp_warnings)
                if checkpoint is not None:
                    ctx.not_checkpointed = tuple(self.workspace / rel for rel in checkpoint.uncovered)
            except CheckpointError as exc:
                message = (
                    f"refused: no checkpoint could be taken, so this call could not be undone: {exc}. "
                    "Resolve the repository state, or set `git_enabled = false` in the user config "
                    "to run without rollback."
                )
                return self._finish(_error_result(name, message), record)

        outcome = prepared.execute()
        post_veto = self._run_hooks("post", name, {"input": dict(args), "result": outcome.result})
        if post_veto is not None:
            outcome.warnings.append(f"post-tool hook: {post_veto}")
        result = _from_outcome(name, outcome, dry_run=False, verdict=verdict)
        result.checkpoint = checkpoint.id if checkpoint is not None else None
        result.warnings = warnings + result.warnings
        return self._finish(
            result, record, sandbox=outcome.sandbox, state="executed" if outcome.ok else "failed"
        )

    def _approve(
        self, tool: str, need: ApprovalNeed, cancel: threading.Event, source: str, approver: Approver | None
    ) -> tuple[ApprovalAnswer, bool]:
        """Ask the person about the segments of `need` this session has not allowed yet.

        Returns the answer and whether anyone was asked. No approver means deny (fail closed), with
        a reason that says how to allow it. Every question and its answer is an audit line.
        """
        pending = tuple(s for s in need.segments if not self.allowances.covers(s.argv))
        if not pending:
            return ApprovalAnswer("allow_session", None, "allowed earlier in this session"), False
        if approver is None:
            return denied(_NOBODY_TO_ASK), False
        from tether.core.explain import network_summary

        patterns = tuple(dict.fromkeys(session_pattern(s.argv) for s in pending))
        always = self._always_rules(pending)
        request = ApprovalRequest(
            id=self._approval_ids.next(),
            tool=tool,
            command=need.command,
            mode=need.mode,
            rule=pending[0].rule,
            reason=pending[0].reason,
            segments=pending,
            sandbox={
                "backend": self.sandbox_name(),
                "network": network_summary(self, need.mode),
                "writable": [str(self.workspace)],
            },
            patterns=patterns,
            always=always,
            timeout=self.config.approvals.timeout,
        )
        record = _CallRecord(
            {"id": request.id, "command": need.command, "segments": [s.to_json() for s in pending]}, source
        )
        try:
            answer = approver(request, cancel)
        except Exception as exc:  # a broken face must not turn into an allow
            log.exception("the approver failed")
            answer = denied(f"asking failed ({exc.__class__.__name__}: {exc}): treated as deny")
        if answer.choice in ("allow_session", "allow_always"):
            self.allowances.add(patterns)
        written: dict[str, Any] = {}
        if answer.choice == "allow_always":
            written = self._write_always(pending, always)
        result = GateResult(
            tool="approval",
            ok=True,
            dry_run=False,
            result={
                "ok": True,
                "id": request.id,
                **answer.to_json(),
                "patterns": [list(p) for p in patterns],
                **written,
            },
            text=f"{TITLES[answer.choice]}: {need.command}",
            verdict=Verdict(
                "allow" if answer.allowed else "deny", "user.approval", answer.reason, "user", None
            ),
        )
        self._finish(result, record, state="executed" if answer.allowed else "denied")
        return answer, True

    def _always_rules(self, pending: Sequence[AskedSegment]) -> AlwaysRule | None:
        """What "Always allow" would write, and where: shown in the question before anyone chooses."""
        if self.rules_file is None:
            return None
        from tether.core.rules_file import rule_toml

        rules = [_approved_rule(segment) for segment in pending]
        toml = "".join(rule_toml(rule) for rule in dict.fromkeys(rules))
        patterns = tuple(tuple(str(word) for word in rule.pattern) for rule in rules)
        return AlwaysRule(str(self.rules_file), toml, patterns)

    def _write_always(self, pending: Sequence[AskedSegment], always: AlwaysRule | None) -> dict[str, Any]:
        """Write the rules "Always allow" promised into the user config (never the project).

        A failed write still allows the call for this session (the person said yes); the audit
        line and the result say the rule was not saved, and why.
        """
        if always is None or self.rules_file is None:
            return {"rulesWritten": [], "rulesError": "no user config file to write the rule into"}
        from tether.core.rules_file import add_user_rule

        written: list[str] = []
        try:
            for rule in dict.fromkeys(_approved_rule(segment) for segment in pending):
                _, _, added = add_user_rule(rule, self.rules_file)
                if added:
                    written.append(rule.pattern_text)
        except ConfigError as exc:
            log.warning("could not save an Always-allow rule: %s", exc)
            return {"rulesFile": str(self.rules_file), "rulesWritten": written, "rulesError": str(exc)}
        return {"rulesFile": str(self.rules_file), "rulesWritten": written}

    def _granted(self, needed: Permission) -> bool:
        # Running an allowed command already implies reading: `cat` is a read-mode command.
        if needed == "read":
            return bool(self._permissions & {"read", "command"})
        return needed in self._permissions

    def _refuse_read_only(self, tool: str, record: _CallRecord) -> GateResult | None:
        """A read-only session (untrusted workspace) changes nothing: no accept, rollback or checkpoint."""
        if not self.read_only:
            return None
        message = (
            f"{tool} is unavailable: this session is read-only (an untrusted workspace). "
            "Trust the workspace in the editor to let Tether change files"
        )
        result = _error_result(tool, message)
        result.verdict = Verdict("deny", "session.read_only", message, "session")
        return self._finish(result, record, state="denied")

    # --- proposals -----------------------------------------------------------------------------

    def accept(
        self,
        proposal_id: str,
        hunks: Sequence[int] | None = None,
        *,
        apply: ApplyEdit | None = None,
        source: str = "cli",
    ) -> GateResult:
        """Apply all or some hunks of a proposal: checkpoint first, never blindly onto a moved file."""
        record = _CallRecord({"id": proposal_id, "hunks": list(hunks) if hunks is not None else None}, source)
        refused = self._refuse_read_only("accept", record)
        if refused is not None:
            return refused
        try:
            proposal = self.proposals.get(proposal_id)
            check = check_path(proposal.path, self.workspace, write=True, settings=self.config.policy)
            if not check.ok or check.path is None:
                raise PolicyDenied(check.reason)
            # An open buffer matters only when the face can apply edits to it; else the disk is the truth.
            document = self.documents.get(check.path) if apply is not None else None
            if document is not None:
                current = document.text
            else:
                from tether.core.proposals import read_current_text

                current = read_current_text(self.workspace, proposal.path)
            plan = self.proposals.plan_accept(proposal_id, hunks, current)  # marks it stale if it can't
            checkpoint, warnings = self._take_checkpoint(f"accept {proposal.path}")
            if document is not None and apply is not None:
                if not apply(proposal, list(plan.hunks), plan.new_content):
                    raise ProposalError(
                        "the editor did not apply the edit (refused, or the buffer changed); "
                        "the proposal is still pending"
                    )
                updated = self.proposals.mark(proposal_id, accepted=plan.indices, rejected=())
            else:
                # apply() re-reads the file and refuses if it moved since the plan: no blind write.
                updated = self.proposals.apply(plan)
        except (TetherError, OSError) as exc:
            state: CallState = "stale" if isinstance(exc, ProposalStale) else "failed"
            message = str(exc) if isinstance(exc, TetherError) else f"cannot write the file: {exc}"
            return self._finish(_error_result("accept", message), record, state=state)
        result = GateResult(
            tool="accept",
            ok=True,
            dry_run=False,
            result={"ok": True, "applied": list(plan.indices), "path": updated.path, "state": updated.state},
            text=f"Applied hunk(s) {', '.join(map(str, plan.indices))} of {updated.path}",
            verdict=_user_verdict("user.accept", "accepted by the user"),
            checkpoint=checkpoint.id if checkpoint is not None else None,
            proposal=updated,
            warnings=warnings,
        )
        return self._finish(result, record, state=_proposal_state(updated.state))

    def reject(
        self, proposal_id: str, hunks: Sequence[int] | None = None, *, source: str = "cli"
    ) -> GateResult:
        record = _CallRecord({"id": proposal_id, "hunks": list(hunks) if hunks is not None else None}, source)
        try:
            proposal = self.proposals.get(proposal_id)
            indices = (
                list(hunks)
                if hunks is not None
                else [h.index for h in proposal.hunks if h.state == "pending"]
            )
            updated = self.proposals.mark(proposal_id, accepted=(), rejected=indices)
        except TetherError as exc:
            return self._finish(_error_result("reject", str(exc)), record)
        result = GateResult(
            tool="reject",
            ok=True,
            dry_run=False,
            result={"ok": True, "rejected": indices, "path": updated.path, "state": updated.state},
            text=f"Rejected hunk(s) {', '.join(map(str, indices))} of {updated.path}",
            verdict=_user_verdict("user.reject", "rejected by the user"),
            proposal=updated,
        )
        return self._finish(result, record, state=_proposal_state(updated.state))

    # --- checkpoints ---------------------------------------------------------------------------

    def checkpoint(self, message: str | None = None, *, source: str = "cli") -> GateResult:
        record = _CallRecord({"message": message}, source)
        refused = self._refuse_read_only("checkpoint", record)
        if refused is not None:
            return refused
        try:
            store = self._checkpoint_store()
            with self._checkpoint_lock:
                cp = store.create("checkpoint", message=message)
        except TetherError as exc:
            return self._finish(_error_result("checkpoint", str(exc)), record)
        result = GateResult(
            tool="checkpoint",
            ok=True,
            dry_run=False,
            result={"ok": True, "id": cp.id, "skipped": list(cp.skipped)},
            text=cp.id,
            verdict=_user_verdict("user.checkpoint", "requested by the user"),
            checkpoint=cp.id,
            warnings=list(cp.warnings),
        )
        return self._finish(result, record, state="executed")

    def rollback(
        self,
        *,
        steps: int | None = None,
        to: str | None = None,
        dry_run: bool = False,
        source: str = "cli",
    ) -> GateResult:
        """Restore the tree as it was before a checkpoint; checkpoints the present first (undoable)."""
        record = _CallRecord({"steps": steps, "to": to, "dry_run": dry_run}, source)
        if not dry_run:
            refused = self._refuse_read_only("rollback", record)
            if refused is not None:
                return refused
        from tether.core.tools.git_state import repository_lock

        try:
            store = self._checkpoint_store()
            with self._checkpoint_lock:
                if dry_run:
                    plan = store.plan_rollback(steps=steps, to=to)
                    before: Checkpoint | None = None
                else:  # not while a command with a writable .git runs: it may put a link back
                    with repository_lock(self.workspace, alone=False, cancel=threading.Event()):
                        plan, before = store.rollback(steps=steps, to=to)
        except TetherError as exc:
            return self._finish(_error_result("rollback", str(exc)), record)
        payload = {
            "ok": True,
            "target": plan.target.id,
            "restored": list(plan.restored),
            "deleted": list(plan.deleted),
            "created": list(plan.created),
            "kept": list(plan.kept),
            "checkpoint": before.id if before is not None else None,
        }
        verb = "Would roll back" if dry_run else "Rolled back"
        text = (
            f"{verb} to before {plan.target.id} ({plan.target.tool}): "
            f"{len(plan.restored)} restored, {len(plan.deleted)} deleted, {len(plan.created)} created"
        )
        if plan.kept:
            text += f"; left alone (would lose data no checkpoint holds): {', '.join(plan.kept)}"
        result = GateResult(
            tool="rollback",
            ok=True,
            dry_run=dry_run,
            result=payload,
            text=text,
            verdict=_user_verdict("user.rollback", "requested by the user"),
            checkpoint=before.id if before is not None else None,
        )
        return self._finish(result, record, state="dry_run" if dry_run else "rolled_back")

    def _checkpoint_store(self) -> Checkpoints:
        if self._checkpoints is None:
            from tether.core.checkpoints import Checkpoints

            self._checkpoints = Checkpoints(self.workspace, self.config.checkpoints)
        return self._checkpoints

    def _take_checkpoint(self, summary: str) -> tuple[Checkpoint | None, list[str]]:
        if not self.config.checkpoints.enabled:
            return None, ["checkpoints are disabled (git_enabled = false): this call cannot be rolled back"]
        store = self._checkpoint_store()
        with self._checkpoint_lock:
            cp = store.create(summary)
        # The warnings already name what was skipped and why; `cp.skipped` stays in the audit/metadata.
        return cp, list(cp.warnings)

    # --- sandbox and hooks ---------------------------------------------------------------------

    def _runner_or_raise(self) -> Runner:
        with self._runner_lock:
            if self._runner is None:
                if self._runner_factory is not None:
                    self._runner = self._runner_factory()
                else:
                    from tether.core.sandbox import select_runner

                    self._runner = select_runner(self.config.sandbox)
            return self._runner

    def _run_hooks(self, phase: Literal["pre", "post"], tool: str, payload: Mapping[str, Any]) -> str | None:
        hooks = self.config.hooks.pre_tool_use if phase == "pre" else self.config.hooks.post_tool_use
        if not hooks:
            return None
        from tether.core.hooks import run_hooks

        return run_hooks(
            hooks,
            phase=phase,
            tool=tool,
            payload=payload,
            workspace=self.workspace,
            runner=self._runner_or_raise,
        )

    # --- audit and events ----------------------------------------------------------------------

    def _finish(
        self,
        result: GateResult,
        record: _CallRecord,
        *,
        sandbox: str | None = None,
        state: CallState | None = None,
    ) -> GateResult:
        """Every entry point ends here: the state is set, the audit line written, the event sent."""
        args = record.args
        result.duration_ms = int((time.monotonic() - record.started) * 1000)
        result.state = state or ("executed" if result.ok else "failed")
        from tether.core.redact import redact_credentials

        # What the model reads never carries a private key or a provider key (docs/secrets.md).
        result.text, in_text = redact_credentials(result.text)
        result.result, in_result = redact_credentials(result.result)
        from tether.core.audit import make_entry

        entry = make_entry(
            tool=result.tool,
            input=args if isinstance(args, Mapping) else {"raw": repr(args)[:2000]},
            result=result.result,
            success=result.ok,
            dry_run=result.dry_run,
            duration_ms=result.duration_ms,
            conversation_id=record.conversation_id,
            git_commit=result.checkpoint,
            error=result.result.get("error") if not result.ok else None,
            decision=result.decision,
            sandbox=sandbox,
        )
        entry["source"] = record.source
        entry["state"] = result.state
        entry["permissions"] = format_permissions(self._permissions)
        if in_text or in_result:
            entry["redactedCredentials"] = max(in_text, in_result)
        warning = self.audit.append(entry)
        if warning:
            result.warnings.append(warning)
        self._emit(result)
        self._pack_after_call()
        return result

    def _pack_after_call(self) -> None:
        """Checkpoint maintenance (packing, pruning) after the call's result, on a thread of its own:
        it never delays a call and never holds the store's lock (Checkpoints.pack_objects)."""
        store = self._checkpoints
        if store is None or not store.packing_due or self._packing.is_set():
            return
        self._packing.set()

        def pack() -> None:
            try:
                store.pack_objects()
            except Exception as exc:  # maintenance is best effort: the next one retries
                log.warning("checkpoint maintenance failed: %s", exc)
            finally:
                self._packing.clear()

        threading.Thread(target=pack, name="tether-checkpoint-maintenance", daemon=True).start()

    def _emit(self, result: GateResult) -> None:
        if self.on_event is None:
            return
        event: dict[str, Any] = {"tool": result.tool, "decision": result.decision, "state": result.state}
        if result.proposal is not None:
            event["proposalId"] = result.proposal.id
        if result.checkpoint is not None:
            event["checkpoint"] = result.checkpoint
        try:
            self.on_event(event)
        except Exception:  # a broken listener must not fail the call it reports
            log.exception("event listener failed")


# --- helpers -------------------------------------------------------------------------------------


def _from_outcome(name: str, outcome: ToolOutcome, *, dry_run: bool, verdict: Verdict | None) -> GateResult:
    result = dict(outcome.result)
    if outcome.error is not None:
        result.setdefault("error", outcome.error)
    return GateResult(
        tool=name,
        ok=outcome.ok,
        dry_run=dry_run,
        result=result,
        text=outcome.text,
        verdict=verdict,
        proposal=outcome.proposal,
        warnings=list(outcome.warnings),
    )


def _policy_verdict(decision: Any, *, fallback_reason: str | None = None) -> Verdict | None:
    """The policy's `Decision` (or its JSON, as tools hand it over) as the gate's typed verdict."""
    if decision is None:
        if fallback_reason is None:
            return None
        return Verdict("deny", "policy.denied", fallback_reason, "policy")
    raw = decision.to_json() if hasattr(decision, "to_json") else dict(decision)
    said = raw.get("verdict")
    kind: VerdictKind = (
        said if said in ("allow", "ask", "deny") else ("allow" if raw.get("allowed") else "deny")
    )
    return Verdict(
        kind,
        str(raw.get("rule") or "policy.denied"),
        str(raw.get("reason") or fallback_reason or ""),
        "policy",
        raw.get("suggestion"),
    )


_NOBODY_TO_ASK = (
    "nobody could be asked here (no editor or terminal to answer), so this is denied. Run it from "
    "the editor or an interactive terminal to be asked, or allow it with a rule in your user config "
    "(see `tether explain` and docs/policy.md)"
)


def _approved_rule(segment: AskedSegment) -> Rule:
    return rule_for_segment(segment.argv, f'approved with "Always allow" ({segment.rule}: {segment.reason})')


def _refused_by_person(tool: str, need: ApprovalNeed, answer: ApprovalAnswer, asked: bool) -> GateResult:
    """The denial the model gets: the segments, why they needed a person, and the person's message."""
    needs = "; ".join(f"`{' '.join(s.argv)}` ({s.reason})" for s in need.segments)
    if asked and answer.reason == ApprovalAnswer("deny").reason:
        message = f"the user denied this command: {needs}"
    elif asked:  # a timeout, a cancel, a broken answer: say which, the person did not choose
        message = f"the user was asked about this command — {needs} — but {answer.reason}"
    else:
        message = f"this command needs the user's approval — {needs} — but {answer.reason}"
    if answer.message:
        message += f". The user says: {answer.message}"
    result = _error_result(tool, message, approval=answer.to_json())
    result.verdict = Verdict("deny", need.rule, message, "user" if asked else "session")
    return result


def _proposal_state(state: str) -> CallState:
    """A proposal's own state after accept/reject, as the call's state."""
    known: dict[str, CallState] = {
        "accepted": "accepted",
        "rejected": "rejected",
        "partially_accepted": "partially_accepted",
        "pending": "pending",
        "stale": "stale",
    }
    return known.get(state, "executed")


def _denial_payload(exc: PolicyDenied) -> dict[str, Any]:
    decision = exc.decision
    if decision is not None and hasattr(decision, "error_payload"):
        payload: dict[str, Any] = dict(decision.error_payload())
        return payload
    return {"ok": False, "error": str(exc)}


def _denial_text(payload: Mapping[str, Any]) -> str:
    lines = [f"Error: {payload.get('error', 'denied by policy')}"]
    if payload.get("suggestion"):
        lines.append(f"Suggestion: {payload['suggestion']}")
    return "\n".join(lines)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _strings(args: Mapping[str, Any]) -> Iterator[str]:
    """Every string in a tool input, keys included, however deeply nested."""
    stack: list[Any] = [args]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _input_problem(args: Mapping[str, Any]) -> tuple[str | None, bool]:
    """What makes an input unusable by any tool, in one walk: (message, whether it is the size).

    JSON can carry "\\udc80", which no file, pipe or UTF-8 log can hold: refused up front too.
    """
    total = 0
    surrogate = False
    for text in _strings(args):
        total += len(text)
        if total > MAX_INPUT_BYTES:
            return (
                f"tool input is too large (over {MAX_INPUT_BYTES // 1_000_000} MB); send smaller pieces",
                True,
            )
        surrogate = surrogate or _SURROGATE.search(text) is not None
    if surrogate:
        message = (
            "tool input contains an unpaired UTF-16 surrogate (a \\ud800-\\udfff escape), which "
            "is not valid Unicode text; send the text itself"
        )
        return message, False
    return None, False
