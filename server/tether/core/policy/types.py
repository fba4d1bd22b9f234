"""The values the policy hands back: segments, decisions and the denial signal.

Why frozen dataclasses: a `Decision` travels from the policy through the gate into the audit log,
the LSP and the model's tool result; nobody downstream may "fix up" a verdict on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["read", "command", "workspace"]
MODES: tuple[Mode, ...] = ("read", "command", "workspace")
"""The ladder: read < command (the allowlist) < workspace (any program, in the sandbox)."""

Verdict = Literal["allow", "ask", "deny"]
"""What the policy answers; *ask* means a person decides (docs/policy.md, "Ask")."""


@dataclass(frozen=True)
class Redirect:
    """One redirection as bash will perform it: `op` is the operator with its fd (`2>`, `>>`, `2>&1`)."""

    op: str
    target: str


@dataclass(frozen=True)
class Segment:
    """One simple command of a pipeline or list: its argv after quote removal, and its redirects."""

    argv: tuple[str, ...]
    redirects: tuple[Redirect, ...] = ()


@dataclass(frozen=True)
class Ask:
    """One segment of a command that needs a person, and why."""

    argv: tuple[str, ...]
    rule: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class Decision:
    """The verdict on one command.

    `rule` names the rule that decided (an id from `rules.RULES`; `allowed` or `allowed.user_rule`
    when allowed). `needs_shell` is True when the command only means what we checked if bash runs
    it (pipelines, lists, redirects, unquoted globs or tilde); otherwise `segments[0].argv` can be
    exec'd directly. `allowed_commands` lists what the mode allows, for the model's error message.

    An *ask* is `allowed=False` with `asks` listing only the segments that need a person (so a
    caller that knows nothing of asking refuses: fail closed); `verdict` says which it is.
    """

    allowed: bool
    rule: str
    reason: str
    suggestion: str | None = None
    segments: tuple[Segment, ...] = ()
    needs_shell: bool = False
    program: str | None = None
    allowed_commands: tuple[str, ...] = field(default=(), repr=False)
    asks: tuple[Ask, ...] = ()

    @property
    def verdict(self) -> Verdict:
        if self.allowed:
            return "allow"
        return "ask" if self.asks else "deny"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "allowed": self.allowed,
            "verdict": self.verdict,
            "rule": self.rule,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "segments": [list(s.argv) for s in self.segments],
            "needs_shell": self.needs_shell,
        }
        if self.asks:
            out["ask"] = [a.to_json() for a in self.asks]
        return out

    def error_payload(self) -> dict[str, Any]:
        """The seed-002 error shape the model receives when a command is refused."""
        if self.rule.startswith("command.") and self.program:
            error = f"Command '{self.program}' is not in the allowed list"
            if self.rule != "command.unknown":
                error += f": {self.reason}"
        else:
            error = self.reason
        return {
            "ok": False,
            "error": error,
            "rule": self.rule,
            "allowed_commands": list(self.allowed_commands),
            "suggestion": self.suggestion or "",
        }


class Deny(Exception):
    """Raised inside the policy to stop at the first unsafe thing; `decide` turns it into a Decision.

    Never escapes the package: the public functions always return a value.
    """

    def __init__(self, rule: str, reason: str, suggestion: str | None = None, program: str | None = None):
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
        self.suggestion = suggestion
        self.program = program
