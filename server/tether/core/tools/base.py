"""The contract between the gate and each tool.

A tool never runs by itself: the gate calls `prepare` (pure validation: input shape, paths, policy),
reads from the returned `PreparedCall` which permission it needs and whether it mutates, takes a
checkpoint when it does, and then calls exactly one of `dry_run` or `execute`. Splitting prepare from
execute is what lets one gate give every face the same dry-run, checkpoint and audit behaviour.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tether.core.approvals import ApprovalNeed
from tether.core.config import EffectiveConfig
from tether.core.permissions import Permission

if TYPE_CHECKING:
    from tether.core.proposals import Proposal, ProposalStore
    from tether.core.sandbox import Runner


@dataclass(frozen=True)
class ToolSpec:
    """Name, description and JSON schema: usable as-is as an Anthropic tool definition."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def anthropic_definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": dict(self.input_schema)}


@dataclass(frozen=True)
class OpenDocument:
    """An editor buffer: what proposals are computed against when the file is open."""

    text: str
    version: int | None


class DocumentSource(Protocol):
    """Gives the open buffer for a path, or None when the file is not open (then disk is used)."""

    def get(self, path: Path) -> OpenDocument | None: ...


class NoDocuments:
    """The CLI's document source: nothing is open, everything comes from disk."""

    def get(self, path: Path) -> OpenDocument | None:
        return None


@dataclass
class ToolContext:
    """Everything a tool may touch. Built by the gate; tools never construct their own."""

    workspace: Path
    config: EffectiveConfig
    proposals: ProposalStore
    runner_factory: Any = None  # Callable[[], Runner]; lazy so read-only sessions never probe sandboxes
    documents: DocumentSource = field(default_factory=NoDocuments)
    cancel: threading.Event = field(default_factory=threading.Event)
    not_checkpointed: tuple[Path, ...] = ()
    """Files this call's checkpoint could not take (over the size budget, nested repositories without
    a commit): set by the gate after the checkpoint. Rollback could not restore them, so the edit
    tools refuse to overwrite them and commands see them read-only."""

    on_network: Callable[[dict[str, Any]], None] | None = None
    """Called by the network proxy for every connection a command opens (one audit line each)."""

    def runner(self) -> Runner:
        if self.runner_factory is None:
            from tether.errors import SandboxUnavailable

            raise SandboxUnavailable("no sandbox runner is configured for this session")
        runner: Runner = self.runner_factory()
        return runner


@dataclass
class ToolOutcome:
    """What a tool produced. `result` is the JSON object callers see (seed shapes)."""

    ok: bool
    result: dict[str, Any]
    text: str
    error: str | None = None
    proposal: Proposal | None = None
    sandbox: str | None = None  # backend name, or the "running without isolation" warning
    warnings: list[str] = field(default_factory=list)


class PreparedCall(Protocol):
    """A validated call, ready to be previewed or executed exactly once."""

    @property
    def permission(self) -> Permission:
        """The permission that turns the dry run into a real execution."""
        ...

    @property
    def mutating(self) -> bool:
        """True when executing may change the workspace (a checkpoint is taken first)."""
        ...

    @property
    def summary(self) -> str:
        """One line for logs and verbose output, e.g. `bash_command(ls -la)`."""
        ...

    @property
    def decision(self) -> Mapping[str, Any] | None:
        """The policy's verdict when one was taken (allowed, rule, reason, suggestion)."""
        ...

    @property
    def approval(self) -> ApprovalNeed | None:
        """Set when the policy's verdict is *ask*: the gate asks the person before executing."""
        ...

    def dry_run(self) -> ToolOutcome: ...

    def execute(self) -> ToolOutcome: ...


class Tool(Protocol):
    spec: ToolSpec

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> PreparedCall:
        """Validate `args`; raise ToolInputError for bad input, PolicyDenied for refused paths/commands."""
        ...
