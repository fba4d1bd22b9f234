"""Command arguments: exactly one JSON object, checked field by field with readable messages.

pygls 2 would structure typed handler parameters itself, but a parameter with a default is still a
required *positional* argument there, and its messages name Python classes. Our commands take one
object, so we validate it here and every message names the command and the JSON key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tether.lsp.errors import ParamsError

MAX_ARGUMENT_CHARS = 4_000_000
"""Total characters of strings in one argument; the gate refuses tool input above the same size."""


def one_object(command: str, args: Sequence[Any]) -> Args:
    """The single object argument (`[]` counts as `{}`); ParamsError for anything else."""
    if len(args) == 0:
        return Args(command, {})
    if len(args) > 1:
        raise ParamsError(f"{command} takes exactly one argument, a JSON object; got {len(args)} arguments")
    value = args[0]
    if not isinstance(value, Mapping):
        raise ParamsError(f"{command} takes one JSON object as its argument, not {_kind(value)}")
    size = _chars(value)
    if size > MAX_ARGUMENT_CHARS:
        raise ParamsError(
            f"{command}: the argument is too large ({size:,} characters; the limit is "
            f"{MAX_ARGUMENT_CHARS:,}); send smaller pieces"
        )
    return Args(command, dict(value))


class Args:
    """Typed access to one command's argument object; `done()` rejects unknown keys."""

    def __init__(self, command: str, data: dict[str, Any]) -> None:
        self.command = command
        self._data = data
        self._seen: set[str] = set()

    def _get(self, key: str, required: bool) -> Any:
        self._seen.add(key)
        value = self._data.get(key)
        if value is None and required:
            raise ParamsError(f"{self.command}: `{key}` is required")
        return value

    def _wrong(self, key: str, expected: str, value: Any) -> ParamsError:
        return ParamsError(f"{self.command}: `{key}` must be {expected}, not {_kind(value)}")

    def string(self, key: str, *, required: bool = False, max_chars: int | None = None) -> str | None:
        value = self._get(key, required)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._wrong(key, "a string", value)
        if max_chars is not None and len(value) > max_chars:
            raise ParamsError(
                f"{self.command}: `{key}` is too long ({len(value):,} characters; max {max_chars:,})"
            )
        return value

    def required_string(self, key: str, *, max_chars: int | None = None) -> str:
        value = self.string(key, required=True, max_chars=max_chars)
        assert value is not None
        if not value.strip():
            raise ParamsError(f"{self.command}: `{key}` is empty")
        return value

    def integer(self, key: str, *, low: int, high: int | None = None) -> int | None:
        value = self._get(key, False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, "an integer", value)
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ParamsError(f"{self.command}: `{key}` must be {bound}, got {value}")
        return value

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self._get(key, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._wrong(key, "true or false", value)
        return value

    def obj(self, key: str, *, required: bool = False) -> dict[str, Any] | None:
        value = self._get(key, required)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self._wrong(key, "a JSON object", value)
        return dict(value)

    def hunks(self, key: str = "hunks") -> list[int] | None:
        """A non-empty list of 1-based hunk indices, or None (the whole proposal)."""
        value = self._get(key, False)
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise ParamsError(f"{self.command}: `{key}` must be a non-empty list of hunk numbers (1-based)")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or item < 1:
                raise ParamsError(f"{self.command}: `{key}` must hold hunk numbers >= 1, found {item!r}")
        return sorted(set(value))

    def done(self) -> None:
        unknown = sorted(set(self._data) - self._seen)
        if unknown:
            names = ", ".join(f"`{k}`" for k in unknown[:5])
            raise ParamsError(f"{self.command}: unknown key(s) {names}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _chars(value: Any) -> int:
    """Characters in all strings (keys too) of a JSON value, stopping early past the limit."""
    total = 0
    stack = [value]
    while stack and total <= MAX_ARGUMENT_CHARS:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            total += len(item)
            stack.extend(item)
    return total
