"""Proposals: the edits an agent asked for while it had no `write` permission.

A proposal is the base text it was computed against (with its hash), the proposed text, and the
hunks between them. The user accepts all or some hunks, or rejects them; every decision is recorded
in the proposal's outcome so the model can be told what happened to its edit. Proposals are JSON
files in `.tether/proposals/`, so they survive a server restart and the CLI and the editor see the
same list.

Why accepting is split into `plan_accept` and `apply`: the gate takes a checkpoint between the two,
and an editor may apply the plan through its own buffers (`workspace/applyEdit`) instead of the disk.
`plan_accept` never applies blindly: if the file moved on, the selected hunks are re-located by
content (see `tether.core.diff`) and, when that fails, the proposal is marked stale and
`ProposalStale` is raised with a message the user can act on.
"""

from __future__ import annotations

import copy
import json
import os
import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from tether.core import diff as difflib_
from tether.core import fsutil
from tether.errors import ProposalError, ProposalStale

PROPOSAL_STATES = ("pending", "accepted", "partially_accepted", "rejected", "stale")
HUNK_STATES = ("pending", "accepted", "rejected")
_ID = re.compile(r"^p-[0-9a-f]{8}$")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Hunk:
    """One hunk of a proposal; `index` is 1-based and never changes."""

    index: int
    header: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    removed: list[str]
    added: list[str]
    diff: str
    state: str = "pending"

    @classmethod
    def from_diff(cls, index: int, hunk: difflib_.DiffHunk) -> Hunk:
        return cls(
            index=index,
            header=hunk.header,
            old_start=hunk.old_start,
            old_lines=hunk.old_lines,
            new_start=hunk.new_start,
            new_lines=hunk.new_lines,
            removed=hunk.removed,
            added=hunk.added,
            diff=hunk.render(),
        )

    def parsed(self) -> difflib_.DiffHunk:
        """The structured hunk, parsed back from `diff` (the stored source of truth)."""
        hunks = difflib_.parse_hunks(self.diff)
        if len(hunks) != 1:
            raise ProposalError(f"hunk {self.index} is corrupt in the stored proposal")
        return hunks[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "header": self.header,
            "old_start": self.old_start,
            "old_lines": self.old_lines,
            "new_start": self.new_start,
            "new_lines": self.new_lines,
            "removed": list(self.removed),
            "added": list(self.added),
            "diff": self.diff,
            "state": self.state,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hunk:
        return cls(
            index=int(data["index"]),
            header=str(data["header"]),
            old_start=int(data["old_start"]),
            old_lines=int(data["old_lines"]),
            new_start=int(data["new_start"]),
            new_lines=int(data["new_lines"]),
            removed=[str(x) for x in data["removed"]],
            added=[str(x) for x in data["added"]],
            diff=str(data["diff"]),
            state=str(data["state"]),
        )


@dataclass
class Outcome:
    """What became of a proposal, for the model: which hunks landed and what the user did."""

    applied: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    edited_by_user: bool = False
    stale_reason: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": list(self.applied),
            "rejected": list(self.rejected),
            "edited_by_user": self.edited_by_user,
            "stale_reason": self.stale_reason,
            "events": list(self.events),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(
            applied=[int(x) for x in data.get("applied", [])],
            rejected=[int(x) for x in data.get("rejected", [])],
            edited_by_user=bool(data.get("edited_by_user", False)),
            stale_reason=data.get("stale_reason"),
            events=list(data.get("events", [])),
        )


@dataclass
class Proposal:
    """A proposed edit of one file. `path` is workspace-relative with `/` separators."""

    id: str
    path: str
    base_hash: str
    base_content: str
    new_content: str
    hunks: list[Hunk]
    reason: str
    state: str = "pending"
    created: str = field(default_factory=_now)
    outcome: Outcome = field(default_factory=Outcome)
    tool: str = ""

    def hunk(self, index: int) -> Hunk:
        for h in self.hunks:
            if h.index == index:
                return h
        raise ProposalError(
            f"proposal {self.id} has no hunk {index}; its hunks are {_ranges([h.index for h in self.hunks])}"
        )

    @property
    def pending(self) -> list[int]:
        return [h.index for h in self.hunks if h.state == "pending"]

    def refresh_state(self) -> None:
        """Derive the proposal's state from its hunks (stale is kept until a decision moves it on)."""
        states = {h.state for h in self.hunks}
        if states == {"accepted"}:
            self.state = "accepted"
        elif states == {"rejected"}:
            self.state = "rejected"
        elif "accepted" in states:
            self.state = "partially_accepted"
        elif self.state != "stale":
            self.state = "pending"

    def summary_for_model(self) -> str:
        """One paragraph telling the model what happened to its edit."""
        head = f"Proposal {self.id} ({self.path})"
        parts = []
        if self.outcome.applied:
            parts.append(f"{_hunk_words(self.outcome.applied)} applied")
        if self.outcome.rejected:
            parts.append(f"{_hunk_words(self.outcome.rejected)} rejected by the user")
        if self.pending and self.state != "stale":
            parts.append(f"{_hunk_words(self.pending)} still pending")
        if self.state == "stale":
            why = self.outcome.stale_reason or "the file changed"
            parts.append(f"stale: {why}; re-read the file and propose again")
        text = f"{head}: " + ("; ".join(parts) if parts else "no decision yet") + "."
        if self.outcome.edited_by_user:
            text += " The user edited the result before saving; re-read the file before further edits."
        return text

    def to_dict(self) -> dict[str, Any]:
        """The persisted form (snake_case, with contents)."""
        return {
            "version": 1,
            "id": self.id,
            "path": self.path,
            "base_hash": self.base_hash,
            "base_content": self.base_content,
            "new_content": self.new_content,
            "hunks": [h.to_dict() for h in self.hunks],
            "reason": self.reason,
            "state": self.state,
            "created": self.created,
            "outcome": self.outcome.to_dict(),
            "tool": self.tool,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        proposal = cls(
            id=str(data["id"]),
            path=str(data["path"]),
            base_hash=str(data["base_hash"]),
            base_content=str(data["base_content"]),
            new_content=str(data["new_content"]),
            hunks=[Hunk.from_dict(h) for h in data["hunks"]],
            reason=str(data.get("reason", "")),
            state=str(data["state"]),
            created=str(data["created"]),
            outcome=Outcome.from_dict(data.get("outcome", {})),
            tool=str(data.get("tool", "")),
        )
        if proposal.state not in PROPOSAL_STATES or any(h.state not in HUNK_STATES for h in proposal.hunks):
            raise ProposalError(f"proposal {proposal.id}: unknown state in stored file")
        return proposal

    def to_json(self, workspace: Path, current: str | None = None) -> dict[str, Any]:
        """The LSP shape (docs/lsp.md). Ranges are 0-based in `current` (default: the file on disk)."""
        if current is None:
            current = read_current_text(workspace, self.path)
        lines = difflib_.split_lines(current)
        hunks = []
        for hunk in self.hunks:
            parsed = hunk.parsed()
            rng = _range_in(lines, parsed, hunk.state)
            hunks.append(
                {
                    "index": hunk.index,
                    "header": hunk.header,
                    "state": hunk.state,
                    "oldStart": hunk.old_start,
                    "oldLines": hunk.old_lines,
                    "newStart": hunk.new_start,
                    "newLines": hunk.new_lines,
                    "range": rng.to_json(),
                    "removed": list(hunk.removed),
                    "added": list(hunk.added),
                    "diff": hunk.diff,
                }
            )
        return {
            "id": self.id,
            "path": self.path,
            "uri": (workspace / self.path).absolute().as_uri(),
            "state": self.state,
            "reason": self.reason,
            "created": self.created,
            "hunks": hunks,
        }

    def render_dry_run(self) -> str:
        return difflib_.render_dry_run(self.path, [h.parsed() for h in self.hunks])

    def render_unified(self, *, color: bool = False) -> str:
        return difflib_.render_unified(self.path, [h.parsed() for h in self.hunks], color=color)


def _range_in(lines: list[str], hunk: difflib_.DiffHunk, state: str) -> difflib_.LineRange:
    """Where the hunk's changed lines are in `lines`: found by content, else its base position."""
    probe = difflib_.invert(hunk) if state == "accepted" else hunk
    try:
        [pos] = difflib_.locate(lines, [probe])
    except difflib_.HunkConflict:
        pos = probe.expected_position
    return difflib_.changed_range(probe, pos)


def _ranges(indices: Sequence[int]) -> str:
    return ", ".join(str(i) for i in indices) if indices else "none"


def _hunk_words(indices: Sequence[int]) -> str:
    return ("hunk " if len(indices) == 1 else "hunks ") + ", ".join(str(i) for i in sorted(indices))


@dataclass(frozen=True)
class HunkEdit:
    """One selected hunk as an edit of the current text: replace `range` by `new_text`."""

    index: int
    range: difflib_.LineRange
    new_text: str


@dataclass(frozen=True)
class AcceptPlan:
    """What accepting would do; computed against `current_content` (disk or the open buffer)."""

    proposal_id: str
    path: str
    indices: tuple[int, ...]
    hunks: tuple[Hunk, ...]
    current_hash: str
    current_content: str
    new_content: str
    rebased: bool
    edits: tuple[HunkEdit, ...]


def read_current_text(workspace: Path, relpath: str) -> str:
    """The file's text as proposals see it (BOM stripped); "" when it does not exist."""
    return fsutil.read_text(workspace / relpath, relpath).text


def _check_relpath(relpath: str) -> None:
    """Stored proposals are data a repository could ship: their path must be plain and inside."""
    pure = PurePosixPath(relpath)
    if not relpath or "\x00" in relpath or pure.is_absolute() or ".." in pure.parts:
        raise ProposalError(f"proposal path {relpath!r} is not a plain workspace-relative path")
    if pure.parts and pure.parts[0] in (".git", ".tether"):
        raise ProposalError(f"proposal path {relpath!r} is inside {pure.parts[0]}/, which is protected")


class ProposalStore:
    """Proposals of one workspace, one JSON file each under `.tether/proposals/`."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.directory = workspace / ".tether" / "proposals"
        self._parsed: dict[str, tuple[tuple[int, int, int], Proposal]] = {}
        self._cache_lock = threading.Lock()

    # --- persistence -------------------------------------------------------------------------

    def _file(self, proposal_id: str) -> Path:
        if not _ID.match(proposal_id):
            raise ProposalError(f"{proposal_id!r} is not a proposal id (they look like p-1a2b3c4d)")
        return self.directory / f"{proposal_id}.json"

    def save(self, proposal: Proposal) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = json.dumps(proposal.to_dict(), indent=1, ensure_ascii=False).encode("utf-8")
        fsutil.atomic_write(self._file(proposal.id), data, self.workspace, display=f"proposal {proposal.id}")

    def get(self, proposal_id: str) -> Proposal:
        """A fresh copy of the proposal, to read or change and `save`."""
        return copy.deepcopy(self._load(proposal_id))

    def _load(self, proposal_id: str) -> Proposal:
        """The proposal as parsed, shared by every caller: never change it (`get` copies it).

        Proposal files hold whole file contents (megabytes for big files), an accept reads its
        proposal three times (check, plan, record) and editors list them all after every decision,
        so each parse is kept until its file changes: inode, mtime and size, taken from the open
        file, so a file replaced meanwhile is never cached under the old one's stamp.
        """
        file = self._file(proposal_id)
        try:
            with open(file, "rb") as handle:
                info = os.fstat(handle.fileno())
                stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
                with self._cache_lock:
                    cached = self._parsed.get(proposal_id)
                if cached is not None and cached[0] == stamp:
                    return cached[1]
                data = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            raise ProposalError(
                f"no proposal {proposal_id}; `tether proposals` lists the existing ones"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProposalError(f"proposal {proposal_id} cannot be read: {exc}") from exc
        except ValueError as exc:
            raise ProposalError(
                f"proposal {proposal_id} is corrupt ({exc}); reject it or delete {file}"
            ) from exc
        try:
            proposal = Proposal.from_dict(data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProposalError(
                f"proposal {proposal_id} is corrupt ({exc}); reject it or delete {file}"
            ) from exc
        if proposal.id != proposal_id:
            raise ProposalError(f"proposal file {file} holds id {proposal.id}, not {proposal_id}")
        _check_relpath(proposal.path)
        with self._cache_lock:
            self._parsed[proposal_id] = (stamp, proposal)
        return proposal

    # --- lifecycle ---------------------------------------------------------------------------

    def create(self, path: str, base: str, new: str, reason: str, *, tool: str = "") -> Proposal:
        """Record a proposal to turn `base` (the current text of `path`) into `new`."""
        _check_relpath(path)
        hunks = difflib_.compute_hunks(base, new)
        if not hunks:
            raise ProposalError(f"the proposed content of {path} is identical to the current content")
        proposal = Proposal(
            id="p-" + secrets.token_hex(4),
            path=path,
            base_hash=difflib_.content_hash(base),
            base_content=base,
            new_content=new,
            hunks=[Hunk.from_diff(i, h) for i, h in enumerate(hunks, start=1)],
            reason=reason,
            tool=tool,
        )
        proposal.outcome.events.append({"time": proposal.created, "action": "proposed"})
        self.save(proposal)
        return proposal

    def read_current(self, proposal_id: str) -> str:
        """The proposal's file as it is on disk now (for callers without an open buffer)."""
        return read_current_text(self.workspace, self.get(proposal_id).path)

    def _selection(self, proposal: Proposal, hunks: Sequence[int] | None) -> list[int]:
        if hunks is None:
            selected = proposal.pending
            if not selected:
                raise ProposalError(f"proposal {proposal.id} has no pending hunks (state {proposal.state})")
            return selected
        if not hunks:
            raise ProposalError("no hunks selected")
        selected = sorted(set(hunks))
        for index in selected:
            hunk = proposal.hunk(index)
            if hunk.state != "pending":
                raise ProposalError(f"hunk {index} of proposal {proposal.id} is already {hunk.state}")
        return selected

    def plan_accept(self, proposal_id: str, hunks: Sequence[int] | None, current: str) -> AcceptPlan:
        """Compute the text after applying the selected hunks to `current`; ProposalStale if it can't."""
        proposal = self.get(proposal_id)
        selected = self._selection(proposal, hunks)
        parsed = [proposal.hunk(i).parsed() for i in selected]
        bom = current.startswith(fsutil.BOM)  # raw file text; proposals never contain the BOM
        if bom:
            current = current[1:]
        lines = difflib_.split_lines(current)
        try:
            positions = difflib_.locate(lines, parsed)
            new_content = difflib_.apply_at(lines, list(zip(positions, parsed, strict=True)))
        except difflib_.HunkConflict as exc:
            index = selected[exc.position] if exc.position < len(selected) else selected[0]
            reason = (
                f"{proposal.path} changed since the proposal was made and hunk {index} no longer "
                f"applies ({exc.reason})"
            )
            self.mark_stale(proposal_id, reason)
            raise ProposalStale(
                f"Proposal {proposal_id} is stale: {reason}. Nothing was written; reject it and ask "
                "for a fresh edit."
            ) from exc
        edits = tuple(
            HunkEdit(
                index=i,
                range=difflib_.changed_range(h, pos),
                new_text="".join(h.added),
            )
            for i, h, pos in zip(selected, parsed, positions, strict=True)
        )
        return AcceptPlan(
            proposal_id=proposal_id,
            path=proposal.path,
            indices=tuple(selected),
            hunks=tuple(proposal.hunk(i) for i in selected),
            current_hash=difflib_.content_hash(current),
            current_content=(fsutil.BOM if bom else "") + current,
            new_content=(fsutil.BOM if bom else "") + new_content,
            rebased=difflib_.content_hash(current) != proposal.base_hash,
            edits=edits,
        )

    def apply(self, plan: AcceptPlan) -> Proposal:
        """Write the plan to disk atomically (keeping BOM, mode) and record the accepted hunks.

        Refuses (ProposalStale) if the file changed between `plan_accept` and now.
        """
        _check_relpath(plan.path)
        target = self.workspace / plan.path
        on_disk = fsutil.read_text(target, plan.path)
        if difflib_.content_hash(on_disk.text) != plan.current_hash:
            self.mark_stale(plan.proposal_id, f"{plan.path} changed while the proposal was being accepted")
            raise ProposalStale(
                f"Proposal {plan.proposal_id}: {plan.path} changed while it was being accepted; nothing "
                "was written. Try accepting again."
            )
        fsutil.atomic_write_text(target, plan.new_content, workspace=self.workspace, display=plan.path)
        return self.mark(plan.proposal_id, accepted=plan.indices, rejected=())

    def mark(
        self,
        proposal_id: str,
        accepted: Sequence[int],
        rejected: Sequence[int],
        *,
        edited_by_user: bool = False,
    ) -> Proposal:
        """Record decisions on hunks (after the accepted ones were applied by whoever applied them)."""
        proposal = self.get(proposal_id)
        for index in [*accepted, *rejected]:
            proposal.hunk(index)  # raises for unknown indices before anything is changed
        overlap = set(accepted) & set(rejected)
        if overlap:
            raise ProposalError(f"hunk(s) {_ranges(sorted(overlap))} cannot be both accepted and rejected")
        for index in accepted:
            proposal.hunk(index).state = "accepted"
            if index not in proposal.outcome.applied:
                proposal.outcome.applied.append(index)
        for index in rejected:
            proposal.hunk(index).state = "rejected"
            if index not in proposal.outcome.rejected:
                proposal.outcome.rejected.append(index)
        if (accepted or rejected) and proposal.state == "stale":
            proposal.state = "pending"  # a decision moves a stale proposal on
            proposal.outcome.stale_reason = None
        proposal.outcome.edited_by_user = proposal.outcome.edited_by_user or edited_by_user
        proposal.refresh_state()
        event: dict[str, Any] = {"time": _now(), "action": proposal.state}
        if accepted:
            event["accepted"] = sorted(accepted)
        if rejected:
            event["rejected"] = sorted(rejected)
        if edited_by_user:
            event["edited_by_user"] = True
        proposal.outcome.events.append(event)
        self.save(proposal)
        return proposal

    def reject(self, proposal_id: str, hunks: Sequence[int] | None = None) -> Proposal:
        """Reject the given hunks (default: every pending one)."""
        proposal = self.get(proposal_id)
        return self.mark(proposal_id, accepted=(), rejected=self._selection(proposal, hunks))

    def mark_stale(self, proposal_id: str, reason: str | None = None) -> Proposal:
        """Mark stale (plan_accept already does this; calling again keeps the first reason)."""
        proposal = self.get(proposal_id)
        if proposal.state == "stale" and reason is None:
            return proposal
        proposal.state = "stale"
        proposal.outcome.stale_reason = reason or proposal.outcome.stale_reason or "the file changed"
        proposal.outcome.events.append(
            {"time": _now(), "action": "stale", "reason": proposal.outcome.stale_reason}
        )
        self.save(proposal)
        return proposal

    def delete(self, proposal_id: str) -> None:
        """Forget a proposal entirely (used by tests and cleanup; decisions are normally kept)."""
        with self._cache_lock:
            self._parsed.pop(proposal_id, None)
        try:
            os.unlink(self._file(proposal_id))
        except FileNotFoundError:
            raise ProposalError(f"no proposal {proposal_id}") from None

    def list(self, *, pending_only: bool = False) -> list[Proposal]:
        """All readable proposals, oldest first; corrupt files are skipped (`get` names them).

        The objects returned are the cached parses (see `_load`): snapshots to read; `get` gives a
        fresh copy to change.
        """
        if not self.directory.is_dir():
            return []
        found: dict[str, Proposal] = {}
        for file in sorted(self.directory.glob("p-*.json")):
            try:
                found[file.stem] = self._load(file.stem)
            except ProposalError:
                continue
        with self._cache_lock:  # forget the proposals whose files are gone
            self._parsed = {k: v for k, v in self._parsed.items() if k in found}
        listed = list(found.values())
        if pending_only:
            listed = [
                p for p in listed if p.state in ("pending", "partially_accepted", "stale") and p.pending
            ]
        listed.sort(key=lambda p: (p.created, p.id))
        return listed
