"""Asking the person: the question a face shows when the policy's verdict is *ask*, and the answer.

Why a module of its own: every face asks differently (an LSP request, a modal, a floating window, a
terminal prompt) but the question and the answer must mean the same everywhere, and they are
audited. Nothing here does I/O; faces provide an `Approver`, the gate calls it. No approver present
means deny (fail closed), and so does an answer that is not exactly one of the four choices.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from tether.core.policy.asks import git_plain
from tether.core.policy.ruleset import subcommand_prefix
from tether.core.policy.types import Ask

if TYPE_CHECKING:
    import concurrent.futures  # a one-shot `tether check` never waits for an answer

Choice = Literal["allow_once", "allow_session", "allow_always", "deny"]
CHOICES: tuple[Choice, ...] = get_args(Choice)

TITLES: dict[Choice, str] = {
    "allow_once": "Allow once",
    "allow_session": "Allow for this session",
    "allow_always": "Always allow",
    "deny": "Deny",
}
"""The action titles, exactly (relied on by clients that answer `window/showMessageRequest`)."""

DEFAULT_TIMEOUT = 300.0


AskedSegment = Ask
"""One simple command of the call that needs a person, and why: the policy's own `Ask`."""


@dataclass(frozen=True)
class ApprovalNeed:
    """What a prepared call needs a person for: the policy said *ask* for these segments."""

    command: str
    mode: str
    rule: str
    reason: str
    segments: tuple[AskedSegment, ...]


def session_pattern(argv: Sequence[str]) -> tuple[str, ...]:
    """The argument prefix "Allow for this session" allows: the program and its subcommand
    (`git commit -m wip` → `git commit`), the same prefix "Always allow" writes as a rule."""
    return subcommand_prefix(argv)


@dataclass(frozen=True)
class AlwaysRule:
    """What "Always allow" writes, and where: shown to the person before they choose it."""

    file: str
    toml: str
    patterns: tuple[tuple[str, ...], ...]

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "toml": self.toml}


@dataclass(frozen=True)
class ApprovalRequest:
    """The question. `patterns` are the argument prefixes "Allow for this session" will allow."""

    id: str
    tool: str
    command: str
    mode: str
    rule: str
    reason: str
    segments: tuple[AskedSegment, ...]
    sandbox: Mapping[str, Any]
    patterns: tuple[tuple[str, ...], ...]
    always: AlwaysRule | None = None
    timeout: float = DEFAULT_TIMEOUT

    def to_json(self) -> dict[str, Any]:
        """The `tether/approve` request's params (docs/lsp.md, "Approvals")."""
        return {
            "id": self.id,
            "tool": self.tool,
            "command": self.command,
            "mode": self.mode,
            "rule": self.rule,
            "reason": self.reason,
            "segments": [s.to_json() for s in self.segments],
            "sandbox": dict(self.sandbox),
            "always": self.always.to_json() if self.always is not None else None,
            "timeoutMs": int(self.timeout * 1000),
        }

    def choices(self) -> tuple[Choice, ...]:
        """The answers to offer: "Always allow" only when there is a user config to write the rule to."""
        return tuple(c for c in CHOICES if c != "allow_always" or self.always is not None)

    def text(self) -> str:
        """The question in words, for a message box or a terminal."""
        lines = [f"Tether: the agent wants to run `{self.command}` ({self.mode} mode). Allow it?"]
        for segment in self.segments:
            lines.append(f"  • {' '.join(segment.argv)} — {segment.reason} [{segment.rule}]")
        backend = self.sandbox.get("backend")
        if backend:
            network = self.sandbox.get("network", "none")
            lines.append(f"It runs in the {backend} sandbox (network: {network}), after a checkpoint.")
        if self.always is not None:
            lines.append(f"“Always allow” adds this rule to {self.always.file}:\n{self.always.toml.rstrip()}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ApprovalAnswer:
    """The person's choice; `message` goes back to the model with a denial."""

    choice: Choice
    message: str | None = None
    reason: str = "answered by the user"

    @property
    def allowed(self) -> bool:
        return self.choice != "deny"

    def to_json(self) -> dict[str, Any]:
        return {"choice": self.choice, "message": self.message, "reason": self.reason}


def denied(reason: str) -> ApprovalAnswer:
    """A deny nobody chose: no approver, a timeout, a cancel, a malformed answer."""
    return ApprovalAnswer("deny", None, reason)


POLL_SECONDS = 0.1


def await_answer(
    future: concurrent.futures.Future[Any],
    *,
    timeout: float,
    cancelled: Callable[[], bool],
    parse: Callable[[Any], ApprovalAnswer],
    withdraw: Callable[[], object],
    who: str,
) -> ApprovalAnswer:
    """The person's answer to a question a face sent (`future`), waited for on the tool call's thread.

    Fail closed, and say why: the call cancelled meanwhile, no answer by `timeout` seconds (then
    `withdraw` takes the question down), or `who` answering with an error are all a deny.
    """
    deadline = time.monotonic() + timeout
    while True:
        if cancelled():
            withdraw()
            return denied("the call was cancelled while waiting for an answer: treated as deny")
        left = deadline - time.monotonic()
        if left <= 0:
            withdraw()
            return denied(f"no answer within {timeout:g} s: treated as deny")
        try:
            raw = future.result(timeout=min(POLL_SECONDS, left))
        except TimeoutError:  # concurrent.futures.TimeoutError is this builtin since Python 3.11
            continue
        except Exception as exc:  # the client answered with an error, or the request was dropped
            return denied(f"{who} answered with an error ({exc}): treated as deny")
        return parse(raw)


MAX_MESSAGE_CHARS = 4000


def parse_answer(raw: Any, who: str = "the editor") -> ApprovalAnswer:
    """A client's JSON answer; anything but `{"choice": <one of four>, "message"?: str}` is deny."""
    if not isinstance(raw, Mapping):
        return denied(f"{who}'s answer was not an object ({type(raw).__name__}): treated as deny")
    choice = raw.get("choice")
    if choice not in CHOICES:
        return denied(f"{who} answered {choice!r}, not one of {', '.join(CHOICES)}: treated as deny")
    message = raw.get("message")
    if message is not None and not isinstance(message, str):
        message = None
    if message is not None:
        message = message.strip()[:MAX_MESSAGE_CHARS] or None
    return ApprovalAnswer(choice, message)


def choice_for_title(title: Any) -> ApprovalAnswer:
    """A `window/showMessageRequest` action title back to a choice (none, or unknown: deny)."""
    for choice, text in TITLES.items():
        if title == text:
            return ApprovalAnswer(choice)
    return denied("the question was dismissed without an answer: treated as deny")


Approver = Callable[[ApprovalRequest, threading.Event], ApprovalAnswer]
"""Asks the person and waits (at most `request.timeout`; `cancel` set means stop asking: deny)."""


class SessionAllowances:
    """What the person allowed "for this session": argument prefixes, until the session ends."""

    def __init__(self) -> None:
        self._patterns: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()

    def add(self, patterns: Sequence[tuple[str, ...]]) -> None:
        with self._lock:
            self._patterns.update(p for p in patterns if p)

    def covers(self, argv: Sequence[str]) -> bool:
        forms = {tuple(argv), tuple(git_plain(argv))}
        with self._lock:
            return any(words[: len(p)] == p for p in self._patterns for words in forms)

    def to_json(self) -> list[list[str]]:
        with self._lock:
            return [list(p) for p in sorted(self._patterns)]


@dataclass
class RequestIds:
    """`ap-<pid>-<n>`: unique within a process, readable in the audit log."""

    _counter: Any = field(default_factory=itertools.count)

    def next(self) -> str:
        return f"ap-{os.getpid():x}-{next(self._counter)}"
