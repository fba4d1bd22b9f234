"""The gate: the one place where every tool call is decided, checkpointed, executed and audited.

Every face — an agent's `tool_use`, an editor command, the CLI — calls `Gate`. None of them runs a
tool directly, so there is exactly one permission check, one checkpoint site and one audit writer.
A call goes:

    permission → validation (tool.prepare: input, paths, policy) → pre-hooks → checkpoint
    → dry run or execute → post-hooks → audit → result

Nothing a caller sends can crash the gate: unknown tools, malformed input, denials and tool failures
all come back as a `GateResult` with `is_error` set and a message the model or user can act on.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tether.core.config import EffectiveConfig, load_config
from tether.core.permissions import Permission, Permissions, format_permissions
from tether.core.tools.base import DocumentSource, NoDocuments, Tool, ToolContext, ToolOutcome
from tether.errors import (
    CheckpointError,
    PolicyDenied,
    ProposalError,
    ProposalStale,
    TetherError,
    ToolInputError,
)

if TYPE_CHECKING:
    from tether.core.audit import AuditLog
    from tether.core.checkpoints import Checkpoint, Checkpoints
    from tether.core.proposals import Hunk, Proposal, ProposalStore
    from tether.core.sandbox import Runner

log = logging.getLogger(__name__)

EventSink = Callable[[dict[str, Any]], None]
ApplyEdit = Callable[["Proposal", "list[Hunk]", str], bool]

MAX_INPUT_BYTES = 4_000_000


@dataclass
class GateResult:
    """What a face gets back from the gate, for any call, successful or not."""

    tool: str
    ok: bool
    dry_run: bool
    result: dict[str, Any]
    text: str
    decision: dict[str, Any] | None = None
    checkpoint: str | None = None
    proposal: Proposal | None = None
    duration_ms: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return not self.ok

    def to_json(self, workspace: Path | None = None) -> dict[str, Any]:
        proposal_json = None
        if self.proposal is not None and workspace is not None:
            proposal_json = self.proposal.to_json(workspace)
        return {
            "tool": self.tool,
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
    started: float
    source: str
    conversation_id: str | None


def _error_result(tool: str, message: str, **extra: Any) -> GateResult:
    return GateResult(
        tool=tool,
        ok=False,
        dry_run=False,
        result={"ok": False, "error": message, **extra},
        text=message if message.startswith("Error") else f"Error: {message}",
    )


class Gate:
    """One session's gate over one workspace. Thread-safe: faces may call it from worker threads."""

    def __init__(
        self,
        workspace: Path,
        permissions: Permissions,
        *,
        config: EffectiveConfig | None = None,
        documents: DocumentSource | None = None,
        on_event: EventSink | None = None,
        tools: Sequence[Tool] | None = None,
        runner_factory: Callable[[], Runner] | None = None,
    ) -> None:
        from tether.core.audit import AuditLog
        from tether.core.proposals import ProposalStore

        self.workspace = workspace.resolve()
        self.config = _protect_path_tools(
            self.workspace, config if config is not None else load_config(self.workspace)
        )
        self.permissions: Permissions = permissions
        self.documents: DocumentSource = documents if documents is not None else NoDocuments()
        self.on_event = on_event
        self.proposals: ProposalStore = ProposalStore(self.workspace)
        self.audit: AuditLog = AuditLog(self.workspace)
        if tools is None:
            from tether.core.tools.registry import default_tools

            tools = default_tools()
        self._tools: dict[str, Tool] = {tool.spec.name: tool for tool in tools}
        self._runner_factory = runner_factory
        self._runner: Runner | None = None
        self._runner_lock = threading.Lock()
        self._checkpoints: Checkpoints | None = None
        self._checkpoint_lock = threading.Lock()

    # --- what faces ask about ------------------------------------------------------------------

    def tool_names(self) -> list[str]:
        return sorted(self._tools)

    def tool_definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions: exactly the tools this gate will run."""
        return [self._tools[name].spec.anthropic_definition() for name in sorted(self._tools)]

    def check_command(self, command: str, mode: str = "command") -> dict[str, Any]:
        from tether.core.policy import decide

        if mode not in ("read", "command"):
            raise ToolInputError(f"mode must be 'read' or 'command', not {mode!r}")
        decision = decide(command, mode, self.workspace, self.config.policy)  # type: ignore[arg-type]
        result: dict[str, Any] = decision.to_json()
        return result

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

    def log(self, n: int | None = None) -> list[dict[str, Any]]:
        return self.audit.read(n)

    def status(self) -> dict[str, Any]:
        return {
            "workspace": str(self.workspace),
            "permissions": format_permissions(self.permissions),
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

    # --- tool calls ----------------------------------------------------------------------------

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | Any,
        *,
        source: str = "cli",
        conversation_id: str | None = None,
        cancel: threading.Event | None = None,
    ) -> GateResult:
        """Decide and run one tool call. Never raises for anything the caller sent."""
        record = _CallRecord(args, time.monotonic(), source, conversation_id)
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

        ctx = ToolContext(
            workspace=self.workspace,
            config=self.config,
            proposals=self.proposals,
            runner_factory=self._runner_or_raise,
            documents=self.documents,
            cancel=cancel if cancel is not None else threading.Event(),
        )
        try:
            return self._call(tool, ctx, args, record)
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
    ) -> GateResult:
        name = tool.spec.name
        try:
            prepared = tool.prepare(ctx, args)
        except PolicyDenied as exc:
            decision = _decision_json(exc.decision, decided_by="policy", fallback_reason=str(exc))
            payload = _denial_payload(exc)
            result = GateResult(
                tool=name,
                ok=False,
                dry_run=False,
                result=payload,
                text=_denial_text(payload),
                decision=decision,
            )
            return self._finish(result, record, state="denied")
        except (ToolInputError, TetherError) as exc:
            return self._finish(_error_result(name, str(exc)), record)

        decision = _decision_json(prepared.decision, decided_by="policy")
        if not self._granted(prepared.permission):
            outcome = prepared.dry_run()
            if decision is not None:
                decision = {**decision, "decidedBy": "mode"}
            result = _from_outcome(name, outcome, dry_run=True, decision=decision)
            state = "proposed" if outcome.proposal is not None else "dry_run"
            return self._finish(result, record, sandbox=outcome.sandbox, state=state)

        veto = self._run_hooks("pre", name, args)
        if veto is not None:
            result = _error_result(name, veto)
            result.decision = {
                "allowed": False,
                "rule": "hook.pre_tool_use",
                "reason": veto,
                "decidedBy": "hook",
            }
            return self._finish(result, record, state="denied")

        checkpoint: Checkpoint | None = None
        warnings: list[str] = []
        if prepared.mutating:
            try:
                checkpoint, cp_warnings = self._take_checkpoint(prepared.summary)
                warnings.extend(cp_warnings)
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
        result = _from_outcome(name, outcome, dry_run=False, decision=decision)
        result.checkpoint = checkpoint.id if checkpoint is not None else None
        result.warnings = warnings + result.warnings
        state = "executed" if outcome.ok else "failed"
        return self._finish(result, record, sandbox=outcome.sandbox, state=state)

    def _granted(self, needed: Permission) -> bool:
        # Running an allowed command already implies reading: `cat` is a read-mode command.
        if needed == "read":
            return bool(self.permissions & {"read", "command"})
        return needed in self.permissions

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
        from tether.core.policy import check_path
        from tether.core.proposals import read_current_text

        record = _CallRecord(
            {"id": proposal_id, "hunks": list(hunks) if hunks is not None else None},
            time.monotonic(),
            source,
            None,
        )
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
            state = "stale" if isinstance(exc, ProposalStale) else "failed"
            message = str(exc) if isinstance(exc, TetherError) else f"cannot write the file: {exc}"
            return self._finish(_error_result("accept", message), record, state=state)
        result = GateResult(
            tool="accept",
            ok=True,
            dry_run=False,
            result={"ok": True, "applied": list(plan.indices), "path": updated.path, "state": updated.state},
            text=f"Applied hunk(s) {', '.join(map(str, plan.indices))} of {updated.path}",
            decision={
                "allowed": True,
                "rule": "user.accept",
                "reason": "accepted by the user",
                "decidedBy": "user",
            },
            checkpoint=checkpoint.id if checkpoint is not None else None,
            proposal=updated,
            warnings=warnings,
        )
        return self._finish(result, record, state=updated.state)

    def reject(
        self, proposal_id: str, hunks: Sequence[int] | None = None, *, source: str = "cli"
    ) -> GateResult:
        record = _CallRecord(
            {"id": proposal_id, "hunks": list(hunks) if hunks is not None else None},
            time.monotonic(),
            source,
            None,
        )
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
            decision={
                "allowed": True,
                "rule": "user.reject",
                "reason": "rejected by the user",
                "decidedBy": "user",
            },
            proposal=updated,
        )
        return self._finish(result, record, state=updated.state)

    # --- checkpoints ---------------------------------------------------------------------------

    def checkpoint(self, message: str | None = None, *, source: str = "cli") -> GateResult:
        record = _CallRecord({"message": message}, time.monotonic(), source, None)
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
            checkpoint=cp.id,
            warnings=list(cp.warnings),
        )
        return self._finish(result, record)

    def rollback(
        self,
        *,
        steps: int | None = None,
        to: str | None = None,
        dry_run: bool = False,
        source: str = "cli",
    ) -> GateResult:
        """Restore the tree as it was before a checkpoint; checkpoints the present first (undoable)."""
        record = _CallRecord({"steps": steps, "to": to, "dry_run": dry_run}, time.monotonic(), source, None)
        try:
            store = self._checkpoint_store()
            with self._checkpoint_lock:
                if dry_run:
                    plan = store.plan_rollback(steps=steps, to=to)
                    before: Checkpoint | None = None
                else:
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
            decision={
                "allowed": True,
                "rule": "user.rollback",
                "reason": "requested by the user",
                "decidedBy": "user",
            },
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
        state: str | None = None,
    ) -> GateResult:
        from tether.core.audit import make_entry

        args = record.args
        result.duration_ms = int((time.monotonic() - record.started) * 1000)
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
        warning = self.audit.append(entry)
        if warning:
            result.warnings.append(warning)
        self._emit(result, state or ("executed" if result.ok else "failed"))
        return result

    def _emit(self, result: GateResult, state: str) -> None:
        if self.on_event is None:
            return
        event: dict[str, Any] = {"tool": result.tool, "decision": result.decision, "state": state}
        if result.proposal is not None:
            event["proposalId"] = result.proposal.id
        if result.checkpoint is not None:
            event["checkpoint"] = result.checkpoint
        try:
            self.on_event(event)
        except Exception:  # a broken listener must not fail the call it reports
            log.exception("event listener failed")


# --- helpers -------------------------------------------------------------------------------------


def _protect_path_tools(workspace: Path, config: EffectiveConfig) -> EffectiveConfig:
    """Add the PATH's tools inside the workspace (an activated `.venv`) to the protected paths.

    Programs there run whenever the user types their names: a write by an edit tool, a redirect or
    a command would plant code the user runs later. Being in the policy's list, they are refused to
    every tool and kept read-only in the sandbox, like `.git/hooks`.
    """
    from tether.core.sandbox.env import path_tools_inside

    extra = tuple(p.relative_to(workspace).as_posix() for p in path_tools_inside(workspace))
    missing = tuple(p for p in extra if p not in config.policy.extra_protected)
    if not missing:
        return config
    policy = replace(config.policy, extra_protected=config.policy.extra_protected + missing)
    return replace(config, policy=policy)


def _from_outcome(
    name: str, outcome: ToolOutcome, *, dry_run: bool, decision: dict[str, Any] | None
) -> GateResult:
    result = dict(outcome.result)
    if outcome.error is not None:
        result.setdefault("error", outcome.error)
    return GateResult(
        tool=name,
        ok=outcome.ok,
        dry_run=dry_run,
        result=result,
        text=outcome.text,
        decision=decision,
        proposal=outcome.proposal,
        warnings=list(outcome.warnings),
    )


def _decision_json(
    decision: Any, *, decided_by: str, fallback_reason: str | None = None
) -> dict[str, Any] | None:
    if decision is None:
        if fallback_reason is None:
            return None
        return {"allowed": False, "rule": "policy.denied", "reason": fallback_reason, "decidedBy": decided_by}
    raw = decision.to_json() if hasattr(decision, "to_json") else dict(decision)
    return {
        "allowed": raw.get("allowed"),
        "rule": raw.get("rule"),
        "reason": raw.get("reason"),
        "suggestion": raw.get("suggestion"),
        "decidedBy": decided_by,
    }


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
