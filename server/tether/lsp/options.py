"""`initializationOptions`: parsed once into typed, defaulted settings.

Why parse by hand instead of structuring with cattrs: every field is a scalar, and the messages must
name the camelCase key the user typed in their editor settings. Invalid values are never fatal: each
one is reported (`window/showMessage`, once) and its default is used, like jedi-language-server does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.core.permissions import format_permissions, parse_permissions
from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.core.session import FaceOverrides

# Kept equal to tether.core.config's values (checked by tests/unit/test_lsp_options.py): importing
# the config module here would put TOML and the policy tables on the server's start-up path.
MAX_COMMAND_TIMEOUT = 600
SANDBOX_BACKENDS = ("auto", "bubblewrap", "firejail", "landlock", "none")

KNOWN_KEYS = (
    "permissions",
    "sandbox",
    "commandTimeout",
    "model",
    "maxCost",
    "apiKey",
    "readOnly",
    "approvals",
    "chat",
)


@dataclass(frozen=True)
class InitOptions:
    """What the editor passed; `None` means "not given: use the config file's value"."""

    permissions: str | None = None
    """Canonical permission words (`none`, `read,write`, `all`) for the session."""
    sandbox: str | None = None
    """Sandbox backend; `none` only takes effect when the user config also says `none`."""
    command_timeout: float | None = None
    """Seconds, 1–600."""
    model: str | None = None
    """Claude model id for `tether.ask`."""
    max_cost: float | None = None
    """Dollars per agent turn."""
    api_key: str | None = field(default=None, repr=False)
    """Anthropic API key, from the editor's secret store. Never logged (repr=False)."""
    read_only: bool = False
    """The editor's workspace is untrusted: no permissions, and nothing may change files."""
    approvals: bool = False
    """The client answers `tether/approve` requests (else questions go through showMessageRequest)."""
    chat: bool = False
    """The client shows agent turns as they run: it receives `tether/turn` notifications."""

    def overrides(self) -> FaceOverrides:
        """These options as the session's face overrides (`tether.core.session`)."""
        from tether.core.session import FaceOverrides

        return FaceOverrides(
            permissions=self.permissions,
            sandbox=self.sandbox,  # type: ignore[arg-type]  # validated by _sandbox
            command_timeout=self.command_timeout,
            model=self.model,
            max_cost=self.max_cost,
            api_key=self.api_key,
            read_only=self.read_only,
        )


def parse_options(raw: Any) -> tuple[InitOptions, list[str]]:
    """Parse the raw JSON value; returns the options and one readable error per rejected key."""
    if raw is None:
        return InitOptions(), []
    if not isinstance(raw, Mapping):
        return InitOptions(), [f"initializationOptions must be an object, not {_kind(raw)}"]
    errors: list[str] = []
    values: dict[str, Any] = {}
    for key in raw:
        if key not in KNOWN_KEYS:
            errors.append(f"unknown option {key!r} (known: {', '.join(KNOWN_KEYS)})")
    for key, parse in _PARSERS.items():
        if key not in raw or raw[key] is None:
            continue
        try:
            values[_FIELDS[key]] = parse(raw[key])
        except ValueError as exc:
            errors.append(f"{key}: {exc}")
    return InitOptions(**values), errors


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {_kind(value)}")
    return value


def _number(value: Any, low: float, high: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {_kind(value)}")
    if math.isnan(value) or value < low or (high is not None and value > high):
        bound = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise ValueError(f"must be {bound}, got {value!r}")
    return float(value)


def _permissions(value: Any) -> str:
    try:
        return format_permissions(parse_permissions(_string(value)))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {_kind(value)}")
    return value


def _sandbox(value: Any) -> str:
    text = _string(value)
    if text not in SANDBOX_BACKENDS:
        raise ValueError(f"must be one of {', '.join(SANDBOX_BACKENDS)}, got {text!r}")
    return text


def _model(value: Any) -> str:
    text = _string(value).strip()
    if not text or len(text) > 200 or any(c.isspace() for c in text):
        raise ValueError("must be a model id such as 'claude-sonnet-5-5'")
    return text


def _api_key(value: Any) -> str:
    text = _string(value).strip()
    if not text:
        raise ValueError("is empty")
    return text


_PARSERS = {
    "permissions": _permissions,
    "sandbox": _sandbox,
    "commandTimeout": lambda v: _number(v, 1, MAX_COMMAND_TIMEOUT),
    "model": _model,
    "maxCost": lambda v: _number(v, 0, None),
    "apiKey": _api_key,
    "readOnly": _boolean,
    "approvals": _boolean,
    "chat": _boolean,
}
_FIELDS = {
    "permissions": "permissions",
    "sandbox": "sandbox",
    "commandTimeout": "command_timeout",
    "model": "model",
    "maxCost": "max_cost",
    "apiKey": "api_key",
    "readOnly": "read_only",
    "approvals": "approvals",
    "chat": "chat",
}
