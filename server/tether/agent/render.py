"""The terminal face of a turn: streamed text, each tool call with its verdict, diffs, stats.

Verbosity (seed 001):
  silent   nothing while the turn runs; the answer is printed once at the end
  normal   streamed text; `Tool: name(args)` with its verdict, the reason and suggestion of a denial,
           the diff of a proposal, retries
  verbose  + the policy rule that decided, the checkpoint taken, the duration, thinking
  debug    + each request and response (tokens, cost), tool input and the result sent to the model
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from tether.agent.loop import AgentEvent, ToolCallRecord, TurnResult

LEVELS = {"silent": 0, "normal": 1, "verbose": 2, "debug": 3}

_MARKS = {
    "executed": ("✓", "green", "executed"),
    "failed": ("✗", "red", "failed"),
    "denied": ("✗", "bold red", "denied"),
    "dry_run": ("◌", "yellow", "dry run — not executed"),
    "proposed": ("◆", "magenta", "proposed — awaits your review"),
    "cancelled": ("■", "yellow", "cancelled"),
}


def diff_text(diff: str) -> Text:
    """A unified diff with the usual colors (red removed, green added, cyan hunk headers)."""
    text = Text()
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line, style=style)
    if diff and not diff.endswith("\n"):
        text.append("\n")
    return text


class TerminalRenderer:
    """Callable event sink for `Agent(on_event=...)`."""

    def __init__(self, console: Console, verbosity: str = "normal") -> None:
        self.console = console
        self.level = LEVELS.get(verbosity, 1)
        self._mid_line = False
        self._in_thinking = False

    def __call__(self, event: AgentEvent) -> None:
        if self.level == 0:
            return
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    # --- helpers -------------------------------------------------------------------------------

    def _newline(self) -> None:
        if self._mid_line:
            self.console.print()
            self._mid_line = False

    def _line(self, text: str | Text, style: str = "") -> None:
        self._newline()
        self.console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)

    # --- events --------------------------------------------------------------------------------

    def _on_text(self, event: AgentEvent) -> None:
        if self._in_thinking:
            self._newline()
            self._in_thinking = False
        if event.text:
            self.console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
            self._mid_line = not event.text.endswith("\n")

    def _on_thinking(self, event: AgentEvent) -> None:
        if self.level < 2 or not event.text:
            return
        if not self._in_thinking:
            self._newline()
            self._in_thinking = True
        self.console.print(
            event.text, end="", style="dim italic", markup=False, highlight=False, soft_wrap=True
        )
        self._mid_line = not event.text.endswith("\n")

    def _on_tool_start(self, event: AgentEvent) -> None:
        self._line(Text.assemble(("Tool: ", "bold"), (event.text, "bold cyan")))
        if self.level >= 3:
            self._line(f"  input: {json.dumps(event.data.get('input'), ensure_ascii=False)}", "dim")

    def _on_tool_result(self, event: AgentEvent) -> None:
        record: ToolCallRecord = event.data["record"]
        outcome = record.outcome
        mark, style, word = _MARKS.get(outcome.verdict, ("?", "", outcome.verdict))
        line = Text.assemble(("  ", ""), (f"{mark} {word}", style))
        if outcome.verdict in ("denied", "failed") and outcome.reason:
            line.append(f": {outcome.reason}")
        elif outcome.verdict == "failed":
            first = outcome.content.strip().splitlines()[:1]
            if first:
                line.append(f": {first[0][:200]}")
        if outcome.verdict == "proposed" and outcome.proposal_id:
            line.append(f" (proposal {outcome.proposal_id})", style="magenta")
        self._line(line)
        if outcome.suggestion and outcome.is_error:
            self._line(f"    suggestion: {outcome.suggestion}", "yellow")
        if outcome.diff:
            self._newline()
            self.console.print(diff_text(outcome.diff), markup=False, highlight=False, end="")
        if self.level >= 2:
            details = []
            if outcome.rule:
                verdict = "refused" if outcome.verdict == "denied" else "allowed"
                shown = verdict if outcome.rule == verdict else f"{verdict} [{outcome.rule}]"
                if outcome.validation and outcome.verdict != "denied":
                    shown += f": {outcome.validation}"
                details.append(f"validation: {shown}")
            if outcome.checkpoint:
                details.append(f"checkpoint {outcome.checkpoint} created")
            details.append(f"{outcome.duration_ms} ms")
            self._line("    " + " · ".join(details), "dim")
            for warning in outcome.warnings:
                self._line(f"    warning: {warning}", "yellow")
        if self.level >= 3:
            shown = outcome.content if len(outcome.content) <= 2000 else outcome.content[:2000] + "…"
            self._line("    result sent to the model:", "dim")
            self._line(_indent(shown, "      "), "dim")

    def _on_retry(self, event: AgentEvent) -> None:
        self._line(f"  … {event.text}", "yellow")

    def _on_restart(self, event: AgentEvent) -> None:
        self._line(f"  … {event.text} (the partial answer above is discarded)", "yellow")

    def _on_notice(self, event: AgentEvent) -> None:
        self._line(event.text, "dim")

    def _on_request(self, event: AgentEvent) -> None:
        if self.level >= 3:
            est = event.data.get("estimated_cost", 0.0)
            self._line(
                f"→ request {event.data.get('stamp')} (max_tokens {event.data.get('max_tokens')}, "
                f"up to ~${est:.4f})",
                "dim",
            )

    def _on_response(self, event: AgentEvent) -> None:
        if self.level >= 3:
            usage = event.data.get("usage", {})
            self._line(
                f"← response {event.data.get('stamp')}: {event.data.get('stop_reason')}, "
                f"{usage.get('input_tokens')} in / {usage.get('output_tokens')} out, "
                f"${event.data.get('cost', 0):.4f}",
                "dim",
            )

    def _on_stopped(self, event: AgentEvent) -> None:
        self._newline()

    # --- summaries -----------------------------------------------------------------------------

    def summary(self, result: TurnResult) -> None:
        """One line after the turn (normal and up); the reason when it did not end normally."""
        self._newline()
        if result.message and not result.ended_normally:
            self._line(f"Stopped ({result.stop_reason}): {result.message}", "yellow")
        if self.level == 0:
            return
        line = (
            f"— {result.stop_reason} · {result.requests} request(s) · {result.usage.input_tokens:,} in / "
            f"{result.usage.output_tokens:,} out tokens · ${result.cost:.4f} · {len(result.tool_calls)} tool "
            f"call(s) · conversation {result.conversation_id}"
        )
        self._line(line, "dim")


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def print_stats(console: Console, stats: dict[str, Any]) -> None:
    totals = stats.get("totals", {})
    tokens_in, tokens_out = totals.get("total_input_tokens", 0), totals.get("total_output_tokens", 0)
    cost, calls = float(totals.get("total_cost", 0.0)), totals.get("total_tool_calls", 0)
    console.print(
        f"Total: {tokens_in:,} input / {tokens_out:,} output tokens · ${cost:.4f} · {calls} tool calls · "
        f"first run {totals.get('first_run', '-')} · last run {totals.get('last_run', '-')}",
        markup=False,
        highlight=False,
    )
    for conv in stats.get("conversations", []):
        console.print(
            f"  {conv['id']}: {conv['input_tokens']:,} in / {conv['output_tokens']:,} out · "
            f"${conv['cost']:.4f} · {conv['tool_calls']} tool calls · {conv['requests']} requests · "
            f"{conv.get('model')}",
            markup=False,
            highlight=False,
        )
