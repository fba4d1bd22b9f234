"""Pure diff logic for proposals: hunks from two texts, applying a subset, re-basing onto new content.

Why hunks are located by content and not by line number: between a proposal and its acceptance the
file may change (the user typed, another proposal was accepted, an earlier hunk of the same proposal
was applied). Like `patch` without fuzz, each hunk's old side (context + removed lines) must be found
*exactly* in the current text, nearest to where it is expected; a hunk that cannot be found, or whose
found places would overlap, makes the whole selection stale. Nothing is ever applied approximately.

`difflib` generates the unified diff and `unidiff` parses it, so the hunk boundaries are those any
diff tool would show. Lines are split on `\\n` only (never on `\\r`, form feeds or U+2028, which
`str.splitlines` would treat as line breaks), so CRLF files keep their `\\r\\n` inside each line.

This module does no I/O.
"""

from __future__ import annotations

import difflib
import hashlib
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from unidiff.constants import LINE_TYPE_NO_NEWLINE
from unidiff.patch import PatchSet

CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file\n"

# ANSI colours for `render_unified(color=True)`.
_BOLD, _RED, _GREEN, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[0m"


class HunkConflict(Exception):
    """A hunk's old side is not (uniquely placeable) in the current text. Callers translate it."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position  # 0-based position of the hunk in the sequence given
        self.reason = reason


def content_hash(text: str) -> str:
    """The identity of a text version, stored as a proposal's base hash."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def split_lines(text: str) -> list[str]:
    """Lines with their `\\n` kept; a last line without one is kept as is."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass(frozen=True)
class DiffHunk:
    """One unified-diff hunk: positions from its header and its body as (op, line) pairs."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    body: tuple[tuple[str, str], ...]  # op is " ", "-" or "+"; line keeps its newline

    @property
    def header(self) -> str:
        return f"@@ -{_span(self.old_start, self.old_lines)} +{_span(self.new_start, self.new_lines)} @@"

    @property
    def old_block(self) -> list[str]:
        return [line for op, line in self.body if op != "+"]

    @property
    def new_block(self) -> list[str]:
        return [line for op, line in self.body if op != "-"]

    @property
    def lead(self) -> int:
        """Unchanged lines before the first change."""
        n = 0
        for op, _ in self.body:
            if op != " ":
                break
            n += 1
        return n

    @property
    def trail(self) -> int:
        """Unchanged lines after the last change."""
        n = 0
        for op, _ in reversed(self.body):
            if op != " ":
                break
            n += 1
        return n

    @property
    def removed(self) -> list[str]:
        """Old text of the changed region (context trimmed; unchanged lines *inside* it kept)."""
        inner = self.body[self.lead : len(self.body) - self.trail]
        return [line for op, line in inner if op != "+"]

    @property
    def added(self) -> list[str]:
        """New text of the changed region: `range` + `added` is a complete edit."""
        inner = self.body[self.lead : len(self.body) - self.trail]
        return [line for op, line in inner if op != "-"]

    @property
    def expected_position(self) -> int:
        """0-based index in the base where the old block starts."""
        return self.old_start - 1 if self.old_lines > 0 else self.old_start

    @property
    def anchored_start(self) -> bool:
        """Fewer context lines than asked before the change: the hunk starts at the file's start."""
        return self.lead < CONTEXT and self.expected_position == 0

    @property
    def anchored_end(self) -> bool:
        """Fewer context lines than asked after the change: the hunk ends at the file's end."""
        return self.trail < CONTEXT

    def render(self) -> str:
        """The hunk as unified-diff text, with `\\ No newline at end of file` markers."""
        out = [self.header + "\n"]
        for op, line in self.body:
            if line.endswith("\n"):
                out.append(op + line)
            else:
                out.append(op + line + "\n" + NO_NEWLINE)
        return "".join(out)


def _span(start: int, length: int) -> str:
    return str(start) if length == 1 else f"{start},{length}"


def unified_diff_text(old: str, new: str, *, context: int = CONTEXT) -> str:
    """`difflib`'s unified diff (`--- old` / `+++ new`), made parseable for lines without newline."""
    out: list[str] = []
    for line in difflib.unified_diff(
        split_lines(old), split_lines(new), "old", "new", n=context, lineterm="\n"
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + NO_NEWLINE)
    return "".join(out)


def compute_hunks(old: str, new: str) -> list[DiffHunk]:
    """The hunks turning `old` into `new` (empty when they are equal)."""
    text = unified_diff_text(old, new)
    if not text:
        return []
    return parse_hunks(text)


def parse_hunks(text: str) -> list[DiffHunk]:
    """Parse unified-diff text (one file; a bare hunk is accepted) into hunks via `unidiff`."""
    if not text.startswith("--- "):
        text = "--- old\n+++ new\n" + text
    patch = PatchSet(io.StringIO(text))
    hunks: list[DiffHunk] = []
    for patched_file in patch:
        for hunk in patched_file:
            body: list[tuple[str, str]] = []
            for line in hunk:
                if line.line_type == LINE_TYPE_NO_NEWLINE:
                    if body:
                        op, value = body[-1]
                        body[-1] = (op, value[:-1] if value.endswith("\n") else value)
                    continue
                body.append((line.line_type, line.value))
            hunks.append(
                DiffHunk(
                    old_start=hunk.source_start,
                    old_lines=hunk.source_length,
                    new_start=hunk.target_start,
                    new_lines=hunk.target_length,
                    body=tuple(body),
                )
            )
    return hunks


def locate(current: Sequence[str], hunks: Sequence[DiffHunk], *, offsets: bool = True) -> list[int]:
    """Where each hunk's old block starts in `current` (0-based line index), in order.

    Hunks must be given in file order. The search starts at the expected place (shifted by how far
    the previous hunks moved) and widens one line at a time; the nearest exact match wins. A hunk
    that touched the file's start or end (fewer context lines) goes there, or else to the one place
    its lines occur. An empty file's hunk applies only to an empty file. Raises HunkConflict when a
    hunk cannot be placed or would overlap the previous one.
    """
    positions: list[int] = []
    delta = 0
    floor = 0
    for i, hunk in enumerate(hunks):
        block = hunk.old_block
        size = len(block)
        expected = hunk.expected_position + (delta if offsets else 0)
        found = None
        anchor = _anchor(hunk, len(current))
        if hunk.anchored_start and hunk.anchored_end:
            # The hunk spans the whole (short) file: the whole file must still be its old side.
            found = 0 if floor == 0 and list(current) == block else None
        elif anchor is not None and anchor >= floor and current[anchor : anchor + size] == block:
            found = anchor
        elif anchor is not None or size == 0:
            # The hunk sat at the start/end of the file (or has no old lines at all): somewhere
            # else is only acceptable when the block occurs exactly once, so it cannot be misplaced.
            matches = [p for p in range(floor, len(current) - size + 1) if current[p : p + size] == block]
            found = matches[0] if len(matches) == 1 and size > 0 else None
        else:
            for pos in _outward(expected, len(current) - size):
                if pos >= floor and current[pos : pos + size] == block:
                    found = pos
                    break
        if found is None:
            raise HunkConflict(i, f"the lines around {hunk.header} are no longer in the file")
        positions.append(found)
        delta = found - hunk.expected_position
        floor = found + size
    return positions


def _anchor(hunk: DiffHunk, length: int) -> int | None:
    """Where an anchored hunk must start (file start or end), None when it floats."""
    if hunk.anchored_start:
        return 0
    if hunk.anchored_end:
        return length - len(hunk.old_block)
    return None


def _outward(expected: int, last: int) -> Iterable[int]:
    """expected, expected-1, expected+1, … within [0, last]."""
    if last < 0:
        return
    expected = min(max(expected, 0), last)
    yield expected
    for d in range(1, last + 1):
        lo, hi = expected - d, expected + d
        if lo < 0 and hi > last:
            return
        if lo >= 0:
            yield lo
        if hi <= last:
            yield hi


def apply_at(current: Sequence[str], placed: Sequence[tuple[int, DiffHunk]]) -> str:
    """Replace each hunk's old block at its position with its new block (positions from `locate`)."""
    out: list[str] = []
    cursor = 0
    for pos, hunk in sorted(placed, key=lambda item: item[0]):
        if pos < cursor:
            raise HunkConflict(0, f"{hunk.header} overlaps another hunk")
        out.extend(current[cursor:pos])
        out.extend(hunk.new_block)
        cursor = pos + len(hunk.old_block)
    out.extend(current[cursor:])
    return "".join(out)


def apply_hunks(current: str, hunks: Sequence[DiffHunk]) -> str:
    """Apply `hunks` (a subset, in file order) to `current`, re-basing them; HunkConflict if stale."""
    lines = split_lines(current)
    positions = locate(lines, hunks)
    return apply_at(lines, list(zip(positions, hunks, strict=True)))


@dataclass(frozen=True)
class LineRange:
    """0-based LSP-style range; `end_character` counts UTF-16 code units like LSP's default."""

    start_line: int
    end_line: int
    end_character: int

    def to_json(self) -> dict[str, dict[str, int]]:
        return {
            "start": {"line": self.start_line, "character": 0},
            "end": {"line": self.end_line, "character": self.end_character},
        }


def changed_range(hunk: DiffHunk, position: int) -> LineRange:
    """The range the hunk replaces when its old block sits at `position`: changed lines only."""
    start = position + hunk.lead
    removed = hunk.removed
    if removed and not removed[-1].endswith("\n"):
        last = removed[-1]
        return LineRange(start, start + len(removed) - 1, len(last.encode("utf-16-le")) // 2)
    return LineRange(start, start + len(removed), 0)


def render_dry_run(path: str, hunks: Sequence[DiffHunk]) -> str:
    """The seed's readable dry-run form of an edit."""
    parts = [f"=== {path} (dry-run) ===\n", "--- old\n", "+++ new\n"]
    parts.extend(h.render() for h in hunks)
    parts.append("(dry-run: use --tool=write to apply)")
    return "".join(parts)


def render_unified(path: str, hunks: Sequence[DiffHunk], *, color: bool = False) -> str:
    """A unified diff of the hunks for a terminal, optionally ANSI-coloured."""
    text = "".join([f"--- a/{path}\n", f"+++ b/{path}\n", *(h.render() for h in hunks)])
    return _colour(text) if color else text


class _StoredHunk(Protocol):
    index: int
    diff: str
    state: str


class _StoredProposal(Protocol):
    path: str

    @property
    def hunks(self) -> Sequence[_StoredHunk]: ...


def render_proposal(proposal: _StoredProposal, *, color: bool = False) -> str:
    """`tether diff ID`: the proposal as a unified diff, each hunk header naming its index and state.

    The label goes where diff tools put a function name (after the closing `@@`), so the output is
    still a valid patch.
    """
    lines = [f"--- a/{proposal.path}\n", f"+++ b/{proposal.path}\n"]
    for stored in proposal.hunks:
        for hunk in parse_hunks(stored.diff):
            body = split_lines(hunk.render())
            body[0] = f"{hunk.header} hunk {stored.index} ({stored.state})\n"
            lines.extend(body)
    return _colour("".join(lines)) if color else "".join(lines)


def _colour(text: str) -> str:
    out: list[str] = []
    for line in split_lines(text):
        body = line[:-1] if line.endswith("\n") else line
        if line.startswith(("--- ", "+++ ")):
            out.append(f"{_BOLD}{body}{_RESET}\n")
        elif line.startswith("@@"):
            out.append(f"{_CYAN}{body}{_RESET}\n")
        elif line.startswith("-"):
            out.append(f"{_RED}{body}{_RESET}\n")
        elif line.startswith("+"):
            out.append(f"{_GREEN}{body}{_RESET}\n")
        else:
            out.append(line)
    return "".join(out)


def invert(hunk: DiffHunk) -> DiffHunk:
    """The hunk undoing `hunk`: used to find where an already-applied hunk sits now."""
    swap = {"-": "+", "+": "-", " ": " "}
    return DiffHunk(
        old_start=hunk.new_start,
        old_lines=hunk.new_lines,
        new_start=hunk.old_start,
        new_lines=hunk.old_lines,
        body=tuple((swap[op], line) for op, line in hunk.body),
    )
