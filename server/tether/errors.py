"""The one exception family of Tether, translated at the boundaries.

Third-party errors (GitPython, anthropic, OS errors) are converted into these where they come in;
the LSP layer alone converts them into JSON-RPC errors, and the CLI alone into exit codes.

    TetherError
    ├── ConfigError            a config file or option is invalid (message names the key and file)
    ├── ToolInputError         a tool call's input does not match its schema
    ├── PolicyDenied           the policy refused a command or a path (carries the Decision)
    ├── SandboxError           the sandbox could not run a command
    │   ├── SandboxUnavailable the configured backend cannot start here (fail closed)
    │   └── CommandTimeout     the command exceeded its time limit (its tree was killed)
    ├── CheckpointError        a snapshot or rollback could not be done safely
    │   └── CheckpointRefused  the repository is in a state we will not snapshot (merge, bare, …)
    ├── ProposalError          a proposal id or hunk selection is wrong
    │   └── ProposalStale      the file moved on and the proposal no longer applies cleanly
    └── AgentError             the model API failed (message says what to do)

Usage::

    try:
        gate.call("bash_command", {...})
    except TetherError as exc:
        show(str(exc))
"""

from __future__ import annotations

from typing import Any


class TetherError(Exception):
    """Base of every error Tether raises on purpose; `str(exc)` is meant for the user."""


class ConfigError(TetherError):
    """A configuration file or option is invalid."""


class ToolInputError(TetherError):
    """A tool call's input is malformed (wrong type, missing field, unknown tool)."""


class PolicyDenied(TetherError):
    """The policy refused the call; `decision` holds the rule, reason and suggestion."""

    def __init__(self, message: str, decision: Any = None) -> None:
        super().__init__(message)
        self.decision = decision


class SandboxError(TetherError):
    """The sandbox failed to run a command."""


class SandboxUnavailable(SandboxError):
    """The configured sandbox backend cannot start on this machine; nothing was run."""


class CommandTimeout(SandboxError):
    """A command ran past its timeout and its whole process tree was killed."""


class CheckpointError(TetherError):
    """A checkpoint or rollback could not be completed safely; the tree was left as it was."""


class CheckpointRefused(CheckpointError):
    """The repository is in a state (mid-merge, bare, unreadable) that we refuse to snapshot."""


class ProposalError(TetherError):
    """A proposal id or hunk selection does not exist or is in the wrong state."""


class ProposalStale(ProposalError):
    """The file changed since the proposal and its hunks no longer apply cleanly."""


class AgentError(TetherError):
    """The model API call failed; the message says what the user can do about it."""


__all__ = [
    "AgentError",
    "CheckpointError",
    "CheckpointRefused",
    "CommandTimeout",
    "ConfigError",
    "PolicyDenied",
    "ProposalError",
    "ProposalStale",
    "SandboxError",
    "SandboxUnavailable",
    "TetherError",
    "ToolInputError",
]
