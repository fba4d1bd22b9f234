"""How the loop runs a tool: a small `ToolExecutor` protocol and its one real implementation, the gate.

The loop knows nothing of policies, sandboxes or proposals: it hands a `tool_use` to an executor and
gets back what to tell the model (`content`, `is_error`) plus what to show the user (verdict, reason,
diff, checkpoint). `GateExecutor` is the thin adapter over `tether.core.gate.Gate`, so the agent's
calls get the same permission check, checkpoint and audit entry as every other face.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.core.gate import Gate, GateResult

Verdict = Literal["executed", "failed", "denied", "dry_run", "proposed", "cancelled"]

PROPOSAL_NOTE = (
    "\n\nThis edit was NOT applied: it is proposal {id} for {path} ({hunks} hunk(s)), awaiting the "
    "user's review. The user may accept or reject each hunk, or edit the result; you will be told the "
    "outcome at the start of the next turn. Do not write this file another way meanwhile."
)


@dataclass
class ToolReport:
    """One tool call's result: `content`/`is_error` for the model, the rest for people."""

    content: str
    is_error: bool
    verdict: Verdict
    rule: str | None = None
    reason: str | None = None
    suggestion: str | None = None
    validation: str | None = None  # the policy's own words on the call, allowed or not
    diff: str | None = None
    proposal_id: str | None = None
    checkpoint: str | None = None
    duration_ms: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "isError": self.is_error,
            "verdict": self.verdict,
            "rule": self.rule,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "validation": self.validation,
            "proposalId": self.proposal_id,
            "checkpoint": self.checkpoint,
            "durationMs": self.duration_ms,
            "warnings": list(self.warnings),
        }


class ToolExecutor(Protocol):
    def definitions(self) -> list[dict[str, Any]]:
        """The tools offered to the model — exactly the ones `call` will run."""
        ...

    def call(
        self,
        name: str,
        input: Mapping[str, Any],
        *,
        conversation_id: str | None,
        cancel: threading.Event,
        source: str = "agent",
    ) -> ToolReport:
        """Run one call; never raises for a failed, denied or malformed call."""
        ...

    def review_outcomes(self, proposal_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """(what to tell the model about these proposals, the ids still awaiting a decision)."""
        ...


def summarize_call(name: str, input: Mapping[str, Any], limit: int = 100) -> str:
    """`bash_command(ls -la)` — the seed's one-line form of a call."""
    if not isinstance(input, Mapping):
        shown = repr(input)
    else:
        first = next((v for v in input.values() if isinstance(v, str)), None)
        if first is not None and len(input) == 1:
            shown = first
        elif "command" in input and isinstance(input["command"], str):
            shown = input["command"]
        elif "path" in input and isinstance(input["path"], str):
            shown = input["path"]
        else:
            shown = json.dumps(input, ensure_ascii=False, separators=(",", ":"))
    shown = shown.replace("\n", "⏎")
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f"{name}({shown})"


class GateExecutor:
    """`ToolExecutor` over the gate (source `agent`): the only way the agent touches the workspace."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def definitions(self) -> list[dict[str, Any]]:
        return self.gate.tool_definitions()

    def call(
        self,
        name: str,
        input: Mapping[str, Any],
        *,
        conversation_id: str | None,
        cancel: threading.Event,
        source: str = "agent",
    ) -> ToolReport:
        result = self.gate.call(name, input, source=source, conversation_id=conversation_id, cancel=cancel)
        return outcome_from_gate(result)

    def review_outcomes(self, proposal_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        messages: list[str] = []
        still_pending: list[str] = []
        for proposal_id in proposal_ids:
            try:
                proposal = self.gate.proposals.get(proposal_id)
            except TetherError:
                messages.append(
                    f"Proposal {proposal_id} no longer exists (it was discarded); nothing was applied."
                )
                continue
            undecided = bool(proposal.pending) and proposal.state != "stale"
            if undecided:
                still_pending.append(proposal_id)
            messages.append(proposal.summary_for_model())
        return messages, still_pending


_VERDICT_OF_STATE: dict[str, Verdict] = {
    "executed": "executed",
    "failed": "failed",
    "stale": "failed",
    "denied": "denied",
    "proposed": "proposed",
    "dry_run": "dry_run",
}


def outcome_from_gate(result: GateResult) -> ToolReport:
    """What the model and the user are told, from the gate's own state (never from its text)."""
    decision = result.decision or {}
    reason = decision.get("reason") if isinstance(decision, Mapping) else None
    suggestion = decision.get("suggestion") if isinstance(decision, Mapping) else None
    payload = result.result if isinstance(result.result, Mapping) else {}
    suggestion = suggestion or payload.get("suggestion")
    content = result.text or json.dumps(payload, default=str)
    diff = None
    verdict = _VERDICT_OF_STATE.get(result.state, "failed" if result.is_error else "executed")
    if verdict == "failed":
        # the policy allowed it; what went wrong is the tool's error or the command's exit code
        reason = str(payload.get("error") or "") or None
        if reason is None and payload.get("exit_code") is not None:
            reason = f"exit code {payload['exit_code']}"
    elif verdict == "denied":
        if reason and reason not in content:
            content += f"\nReason: {reason}"
        if suggestion and suggestion not in content:
            content += f"\nSuggestion: {suggestion}"
    elif verdict == "proposed" and result.proposal is not None:
        proposal = result.proposal
        diff = proposal.render_unified(color=False)
        content += PROPOSAL_NOTE.format(id=proposal.id, path=proposal.path, hunks=len(proposal.hunks))
    elif verdict == "dry_run" and "dry run" not in content.lower():  # say so once
        content = f"[dry run — nothing was executed; the session lacks the permission for this]\n{content}"
    return ToolReport(
        content=content,
        is_error=result.is_error,
        verdict=verdict,
        rule=decision.get("rule") if isinstance(decision, Mapping) else None,
        reason=reason,
        validation=str(decision.get("reason")) if decision.get("reason") else None,
        suggestion=suggestion,
        diff=diff,
        proposal_id=result.proposal.id if result.proposal is not None else None,
        checkpoint=result.checkpoint,
        duration_ms=result.duration_ms,
        warnings=list(result.warnings),
    )
