"""Strict input checking and path resolution shared by the file, search and git tools.

Why validate against the very schema sent to the model: the schema is the contract; checking a
hand-written copy would let the two drift. Only the JSON-schema subset the tools use is supported
(object with properties/required/additionalProperties false; string, integer, boolean, array of
strings; enum, minimum, maximum, maxLength, maxItems), and anything else in a schema is a bug here.

Paths go through the policy's `check_path` (NUL bytes, traversal, symlinks, outside the workspace,
protected paths when writing). If the policy module is missing (it is developed in parallel), a
stricter local check is used so the tools still fail closed.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from tether.core.approvals import ApprovalNeed
from tether.core.permissions import Permission
from tether.core.policy.settings import PolicySettings
from tether.core.tools.base import ToolOutcome, ToolSpec
from tether.errors import PolicyDenied, TetherError, ToolInputError

MAX_INPUT_BYTES = 12 * 1024 * 1024
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = "null" if value is None else type(value).__name__
    return f"{kind} {text}"


def validate(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Check `args` against `spec.input_schema`; return a plain dict or raise ToolInputError."""
    name = spec.name
    if not isinstance(args, Mapping):
        raise ToolInputError(f"{name}: input must be a JSON object, not {_describe(args)}")
    try:
        size = len(json.dumps(args, default=str))
    except (TypeError, ValueError) as exc:
        raise ToolInputError(f"{name}: input is not JSON-serialisable: {exc}") from exc
    if size > MAX_INPUT_BYTES:
        raise ToolInputError(
            f"{name}: input is too large ({size} bytes; the limit is {MAX_INPUT_BYTES} bytes)"
        )
    schema = spec.input_schema
    props: Mapping[str, Any] = schema.get("properties", {})
    unknown = sorted(k for k in args if k not in props)
    if unknown:
        raise ToolInputError(
            f"{name}: unknown field(s) {', '.join(map(repr, unknown))}; allowed fields: {', '.join(props)}"
        )
    for key in schema.get("required", []):
        if key not in args or args[key] is None:
            raise ToolInputError(f"{name}: `{key}` is required")
    out: dict[str, Any] = {}
    for key, value in args.items():
        if value is None and key not in schema.get("required", []):
            continue  # JSON null for an optional field means "not given"
        out[key] = _check_value(name, key, props[key], value)
    return out


def _check_value(tool: str, key: str, prop: Mapping[str, Any], value: Any) -> Any:
    kind = prop.get("type")
    if kind not in _TYPES:
        raise ToolInputError(f"{tool}: schema of `{key}` uses unsupported type {kind!r}")
    ok = isinstance(value, _TYPES[kind])
    if kind == "integer" and isinstance(value, bool):
        ok = False
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    if not ok:
        article = "an" if kind[0] in "aeiou" else "a"
        raise ToolInputError(f"{tool}: `{key}` must be {article} {kind}, not {_describe(value)}")
    if "enum" in prop and value not in prop["enum"]:
        choices = ", ".join(repr(c) for c in prop["enum"])
        raise ToolInputError(f"{tool}: `{key}` must be one of {choices}, not {_describe(value)}")
    if kind == "integer":
        if "minimum" in prop and value < prop["minimum"]:
            raise ToolInputError(f"{tool}: `{key}` must be >= {prop['minimum']}, not {value}")
        if "maximum" in prop and value > prop["maximum"]:
            raise ToolInputError(f"{tool}: `{key}` must be <= {prop['maximum']}, not {value}")
    if kind == "string":
        if "maxLength" in prop and len(value) > prop["maxLength"]:
            raise ToolInputError(
                f"{tool}: `{key}` is too long ({len(value)} characters; the limit is {prop['maxLength']})"
            )
        if prop.get("minLength", 0) > len(value):
            raise ToolInputError(f"{tool}: `{key}` must not be empty")
    if kind == "array":
        items = prop.get("items", {})
        if "maxItems" in prop and len(value) > prop["maxItems"]:
            raise ToolInputError(f"{tool}: `{key}` has too many items (limit {prop['maxItems']})")
        value = [_check_value(tool, f"{key}[{i}]", items, v) for i, v in enumerate(value)]
    return value


@dataclass
class Prepared:
    """The PreparedCall of the file, search and git tools.

    `dry_run`/`execute` never raise: the gate does not catch around them, so every Tether or OS
    error becomes a failed ToolOutcome whose text is the message (seed form `Error: ...`).
    """

    permission: Permission
    mutating: bool
    summary: str
    run: Callable[[], ToolOutcome]
    preview: Callable[[], ToolOutcome]
    decision: Mapping[str, Any] | None = None
    approval: ApprovalNeed | None = None

    def dry_run(self) -> ToolOutcome:
        return _guard(self.preview)

    def execute(self) -> ToolOutcome:
        return _guard(self.run)


def failure(message: str, **extra: Any) -> ToolOutcome:
    text = message if message.startswith("Error") else f"Error: {message}"
    return ToolOutcome(ok=False, result={"ok": False, "error": text, **extra}, text=text, error=text)


def _guard(fn: Callable[[], ToolOutcome]) -> ToolOutcome:
    try:
        return fn()
    except TetherError as exc:
        return failure(str(exc))
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return failure(f"Error: {exc.strerror or exc}{where}")
    except subprocess.TimeoutExpired as exc:
        return failure(f"Error: {Path(str(exc.cmd[0])).name} timed out after {exc.timeout:.0f}s")
    except Exception as exc:  # the gate does not catch here: a bug must become a loud result, not a crash
        return failure(f"Error: internal error in the tool ({type(exc).__name__}: {exc}); please report it")


@dataclass(frozen=True)
class ResolvedPath:
    """A path the policy accepted: absolute real path and the workspace-relative spelling."""

    path: Path
    rel: str


def _policy_check() -> Callable[..., Any] | None:
    try:
        module = importlib.import_module("tether.core.policy")
    except ImportError:
        return None
    fn: Callable[..., Any] | None = getattr(module, "check_path", None)
    return fn


def resolve(raw: str, workspace: Path, *, write: bool, settings: PolicySettings, tool: str) -> ResolvedPath:
    """Resolve and police a user/model-supplied path; PolicyDenied with the rule when refused."""
    check = _policy_check()
    if check is not None:
        verdict = check(raw, workspace, write=write, settings=settings)
        if not verdict.ok or verdict.path is None:
            raise PolicyDenied(
                f"{tool}: {verdict.reason}",
                decision={"allowed": False, "rule": verdict.rule, "reason": verdict.reason},
            )
        path = Path(verdict.path)
    else:
        path = _fallback_check(raw, workspace, write=write, tool=tool)
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:  # belt and braces, whatever the policy said
        raise PolicyDenied(
            f"{tool}: {raw!r} resolves outside the workspace",
            decision={"allowed": False, "rule": "path.outside", "reason": "outside the workspace"},
        )
    rel = real.relative_to(root).as_posix() if real != root else "."
    return ResolvedPath(path=real, rel=rel)


_PROTECTED_FALLBACK = (".git", ".tether", ".vscode", ".envrc", ".idea")


def _fallback_check(raw: str, workspace: Path, *, write: bool, tool: str) -> Path:
    def deny(rule: str, reason: str) -> PolicyDenied:
        return PolicyDenied(f"{tool}: {reason}", decision={"allowed": False, "rule": rule, "reason": reason})

    if "\x00" in raw:
        raise deny("path.nul", "path contains a NUL byte")
    if not raw.strip():
        raise deny("path.empty", "path is empty")
    root = Path(os.path.realpath(workspace))
    candidate = Path(raw) if os.path.isabs(raw) else root / raw
    real = Path(os.path.realpath(candidate))
    if real != root and root not in real.parents:
        raise deny("path.outside", f"{raw!r} is outside the workspace")
    if write:
        rel = PurePosixPath(real.relative_to(root).as_posix()) if real != root else PurePosixPath(".")
        if rel.parts and rel.parts[0] in _PROTECTED_FALLBACK:
            raise deny("path.protected", f"{raw!r} is a protected path ({rel.parts[0]})")
    return real
