"""Shared helpers for the tool integration tests: a real ToolContext over a temp workspace."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.core.config import EffectiveConfig
from tether.core.proposals import ProposalStore
from tether.core.tools.base import OpenDocument, Tool, ToolContext, ToolOutcome


class Buffers:
    """A DocumentSource holding editor buffers by absolute path (what the LSP layer provides)."""

    def __init__(self) -> None:
        self.open: dict[Path, OpenDocument] = {}

    def get(self, path: Path) -> OpenDocument | None:
        return self.open.get(path)


def make_ctx(workspace: Path, documents: Buffers | None = None) -> ToolContext:
    ctx = ToolContext(workspace=workspace, config=EffectiveConfig(), proposals=ProposalStore(workspace))
    if documents is not None:
        ctx.documents = documents
    return ctx


def run(tool: Tool, ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutcome:
    """prepare + execute, as the gate does with the permission granted."""
    return tool.prepare(ctx, args).execute()


def preview(tool: Tool, ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutcome:
    """prepare + dry_run, as the gate does without the permission."""
    return tool.prepare(ctx, args).dry_run()
