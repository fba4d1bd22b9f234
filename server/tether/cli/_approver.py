"""The terminal's `Approver`: an inline prompt when a person is at the terminal, else none.

Without a terminal on stdin (a script, CI, a pipe) there is nobody to ask, so the CLI opens its
session without an approver and the gate turns every *ask* into a deny that says how to allow it.
The question goes to stderr so that `--json` output on stdout stays one clean object.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

from tether.core.approvals import TITLES, ApprovalAnswer, ApprovalRequest, Choice, denied

if TYPE_CHECKING:
    from tether.core.approvals import Approver

KEYS: dict[str, Choice] = {"o": "allow_once", "s": "allow_session", "a": "allow_always", "d": "deny"}


def terminal_approver(stdin: TextIO | None = None, out: TextIO | None = None) -> Approver | None:
    """An approver reading from the terminal, or None when stdin is not one."""
    source = stdin if stdin is not None else sys.stdin
    sink = out if out is not None else sys.stderr
    if not source.isatty():
        return None

    def approve(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        return ask_on(source, sink, request)

    return approve


def ask_on(source: TextIO, sink: TextIO, request: ApprovalRequest) -> ApprovalAnswer:
    """Ask once on `sink`, read the answer from `source`: o/s/a/d (or the words); anything else is deny."""
    sink.write("\n" + request.text() + "\n")
    options = "  ".join(f"[{key}] {TITLES[choice]}" for key, choice in KEYS.items())
    sink.write(f"{options}  (default: Deny) > ")
    sink.flush()
    line = source.readline()
    if not line:
        sink.write("\n")
        return denied("no answer (end of input): treated as deny")
    word = line.strip().lower()
    choice = KEYS.get(word[:1]) if word else None
    if choice is None:
        return denied(f"answer {word!r} is not one of o, s, a, d: treated as deny")
    if choice != "deny":
        return ApprovalAnswer(choice)
    sink.write("Message for the agent (optional, Enter to skip) > ")
    sink.flush()
    message = source.readline().strip()
    return ApprovalAnswer("deny", message or None)
