"""Configuration: the user config and `.tether/config.toml`, validated and merged.

Why two files with different powers: the workspace is what the agent edits and what a hostile
repository controls. A repository must never be able to allow commands for its own agent, choose the
sandbox, add hooks or point the model client elsewhere. So the user config (platformdirs, e.g.
`~/.config/tether/config.toml`) may set everything, and the project config may only *narrow*: add
deny rules and protected paths, lower limits, turn checkpoints' exclusions on. Keys that would widen
are ignored with a warning the user sees, never silently applied.

Keys follow the seed's `tool_safety` block where they overlap (`git_enabled`, `command_whitelist`,
`command_timeout`, `firejail_enabled`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import platformdirs

from tether.core.policy.settings import PolicySettings
from tether.errors import ConfigError

SandboxBackend = Literal["auto", "bubblewrap", "firejail", "landlock", "none"]
SANDBOX_BACKENDS: tuple[SandboxBackend, ...] = ("auto", "bubblewrap", "firejail", "landlock", "none")
Verbosity = Literal["silent", "normal", "verbose", "debug"]

MAX_COMMAND_TIMEOUT = 600
DEFAULT_MODEL = "claude-sonnet-5-5"


@dataclass(frozen=True)
class SandboxSettings:
    backend: SandboxBackend = "auto"
    command_timeout: float = 30.0
    max_output_bytes: int = 500_000
    max_parallel: int = 2
    env_passthrough: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckpointSettings:
    enabled: bool = True
    max_file_bytes: int = 5_000_000
    time_budget_seconds: float = 10.0
    exclude: tuple[str, ...] = ()
    keep_count: int = 200
    keep_days: float = 30.0


@dataclass(frozen=True)
class Transform:
    """Rewrite rule applied to a bash command before validation (seed 002 "Command Transformations")."""

    match: str
    append: str = ""
    description: str = ""


@dataclass(frozen=True)
class Hook:
    """A user-configured PreToolUse/PostToolUse command; JSON on stdin, non-zero exit vetoes."""

    command: tuple[str, ...]
    timeout: float = 10.0
    tools: tuple[str, ...] = ()  # empty = every tool


@dataclass(frozen=True)
class HookSettings:
    pre_tool_use: tuple[Hook, ...] = ()
    post_tool_use: tuple[Hook, ...] = ()


@dataclass(frozen=True)
class AgentSettings:
    model: str = DEFAULT_MODEL
    max_tokens: int = 4096
    temperature: float | None = None
    system_prompt: str | None = None
    max_cost: float | None = None
    verbosity: Verbosity = "normal"
    prune_old: int | None = None
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None


@dataclass(frozen=True)
class EffectiveConfig:
    """Everything every part of Tether reads, after validation and the narrowing merge."""

    policy: PolicySettings = field(default_factory=PolicySettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    transforms: tuple[Transform, ...] = ()
    permissions: str | None = None  # default session permissions (user config only)
    warnings: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def user_config_path() -> Path:
    """`$TETHER_CONFIG` if set, else the platform's user config dir (honours XDG_CONFIG_HOME)."""
    explicit = os.environ.get("TETHER_CONFIG")
    if explicit:
        return Path(explicit)
    return Path(platformdirs.user_config_dir("tether")) / "config.toml"


def user_state_dir() -> Path:
    """Where shadow repositories and caches live (honours XDG_STATE_HOME)."""
    return Path(platformdirs.user_state_dir("tether"))


def project_config_path(workspace: Path) -> Path:
    return workspace / ".tether" / "config.toml"


def load_config(workspace: Path | None, *, user_path: Path | None = None) -> EffectiveConfig:
    """Read, validate and merge both config files; a missing file means defaults."""
    user_file = user_path if user_path is not None else user_config_path()
    user = _read_toml(user_file)
    project_file = project_config_path(workspace) if workspace is not None else None
    project = _read_toml(project_file) if project_file is not None else {}
    config = _apply(EffectiveConfig(), user, str(user_file), trusted=True)
    config = _apply(config, project, str(project_file), trusted=False)
    sources = tuple(str(p) for p in (user_file, project_file) if p is not None and p.is_file())
    return replace(config, sources=sources)


def config_from_mappings(
    user: Mapping[str, Any], project: Mapping[str, Any] | None = None
) -> EffectiveConfig:
    """Same merge as `load_config` from in-memory tables (initializationOptions, tests)."""
    config = _apply(EffectiveConfig(), user, "<user settings>", trusted=True)
    return _apply(config, project or {}, "<project settings>", trusted=False)


def _read_toml(path: Path | None) -> dict[str, Any]:
    if path is None or not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from exc


# --- validation helpers ------------------------------------------------------------------------


class _Reader:
    """Pops typed values from one table and names the file and key in every error."""

    def __init__(self, table: Mapping[str, Any], where: str) -> None:
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
        self.table = dict(table)
        self.where = where

    def _err(self, key: str, expected: str) -> ConfigError:
        value = self.table[key]
        return ConfigError(
            f"{self.where}: `{key}` should be {expected}, not {type(value).__name__} {value!r}"
        )

    def has(self, key: str) -> bool:
        return key in self.table

    def bool_(self, key: str) -> bool:
        value = self.table.pop(key)
        if not isinstance(value, bool):
            self.table[key] = value
            raise self._err(key, "true or false")
        return value

    def number(self, key: str, *, minimum: float, maximum: float | None = None) -> float:
        value = self.table.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._err(key, "a number")
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
            raise ConfigError(f"{self.where}: `{key}` should be {bound}, not {value}")
        self.table.pop(key)
        return float(value)

    def integer(self, key: str, *, minimum: int, maximum: int | None = None) -> int:
        value = self.table.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._err(key, "an integer")
        return int(self.number(key, minimum=minimum, maximum=maximum))

    def string(self, key: str, choices: tuple[str, ...] | None = None) -> str:
        value = self.table.get(key)
        if not isinstance(value, str):
            raise self._err(key, "a string")
        if choices is not None and value not in choices:
            raise ConfigError(f"{self.where}: `{key}` should be one of {', '.join(choices)}, not {value!r}")
        self.table.pop(key)
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._err(key, "a list of strings")
        self.table.pop(key)
        return tuple(value)

    def tables(self, key: str) -> list[Mapping[str, Any]]:
        value = self.table.get(key)
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self._err(key, "a list of tables")
        self.table.pop(key)
        return list(value)

    def subtable(self, key: str) -> _Reader:
        value = self.table.pop(key)
        return _Reader(value, f"{self.where} [{key}]")

    def finish(self) -> None:
        if self.table:
            keys = ", ".join(sorted(self.table))
            raise ConfigError(f"{self.where}: unknown key(s): {keys}")


def _apply(base: EffectiveConfig, raw: Mapping[str, Any], where: str, *, trusted: bool) -> EffectiveConfig:
    """Validate one file's tables and fold them into `base` (widening keys only when trusted)."""
    root = _Reader(raw, where)
    warnings = list(base.warnings)
    policy, sandbox, checkpoints = base.policy, base.sandbox, base.checkpoints
    hooks, agent, transforms, permissions = base.hooks, base.agent, base.transforms, base.permissions

    def user_only(key: str) -> bool:
        if trusted:
            return True
        warnings.append(f"{where}: `{key}` is ignored: only the user config may set it")
        return False

    if root.has("tool_safety"):
        ts = root.subtable("tool_safety")
        if ts.has("git_enabled"):
            enabled = ts.bool_("git_enabled")
            # A project may turn checkpoints off only for itself; that narrows nothing dangerous
            # but loses undo, so it is surfaced as a warning.
            checkpoints = replace(checkpoints, enabled=checkpoints.enabled and enabled)
        if ts.has("command_whitelist"):
            extra = ts.strings("command_whitelist")
            if user_only("tool_safety.command_whitelist"):
                policy = replace(policy, extra_allowed=policy.extra_allowed + extra)
        if ts.has("command_timeout"):
            timeout = ts.number("command_timeout", minimum=1, maximum=MAX_COMMAND_TIMEOUT)
            sandbox = replace(
                sandbox, command_timeout=timeout if trusted else min(timeout, sandbox.command_timeout)
            )
        if ts.has("firejail_enabled"):
            firejail = ts.bool_("firejail_enabled")
            if user_only("tool_safety.firejail_enabled") and firejail:
                sandbox = replace(sandbox, backend="firejail")
        ts.finish()

    if root.has("policy"):
        pt = root.subtable("policy")
        if pt.has("deny"):
            policy = replace(policy, denied=policy.denied + pt.strings("deny"))
        if pt.has("protected_paths"):
            policy = replace(policy, extra_protected=policy.extra_protected + pt.strings("protected_paths"))
        if pt.has("allow"):
            extra = pt.strings("allow")
            if user_only("policy.allow"):
                policy = replace(policy, extra_allowed=policy.extra_allowed + extra)
        pt.finish()

    if root.has("sandbox"):
        st = root.subtable("sandbox")
        if st.has("backend"):
            backend = st.string("backend", SANDBOX_BACKENDS)
            if user_only("sandbox.backend"):
                sandbox = replace(sandbox, backend=backend)  # type: ignore[arg-type]
        if st.has("command_timeout"):
            timeout = st.number("command_timeout", minimum=1, maximum=MAX_COMMAND_TIMEOUT)
            sandbox = replace(
                sandbox, command_timeout=timeout if trusted else min(timeout, sandbox.command_timeout)
            )
        if st.has("max_output_bytes"):
            cap = st.integer("max_output_bytes", minimum=1024, maximum=64_000_000)
            sandbox = replace(
                sandbox, max_output_bytes=cap if trusted else min(cap, sandbox.max_output_bytes)
            )
        if st.has("max_parallel"):
            par = st.integer("max_parallel", minimum=1, maximum=32)
            sandbox = replace(sandbox, max_parallel=par if trusted else min(par, sandbox.max_parallel))
        if st.has("env_passthrough"):
            names = st.strings("env_passthrough")
            if user_only("sandbox.env_passthrough"):
                sandbox = replace(sandbox, env_passthrough=sandbox.env_passthrough + names)
        st.finish()

    if root.has("checkpoints"):
        ct = root.subtable("checkpoints")
        if ct.has("enabled"):
            checkpoints = replace(checkpoints, enabled=checkpoints.enabled and ct.bool_("enabled"))
        if ct.has("max_file_bytes"):
            checkpoints = replace(checkpoints, max_file_bytes=ct.integer("max_file_bytes", minimum=0))
        if ct.has("time_budget_seconds"):
            checkpoints = replace(
                checkpoints, time_budget_seconds=ct.number("time_budget_seconds", minimum=0.1)
            )
        if ct.has("exclude"):
            checkpoints = replace(checkpoints, exclude=checkpoints.exclude + ct.strings("exclude"))
        if ct.has("keep_count"):
            checkpoints = replace(checkpoints, keep_count=ct.integer("keep_count", minimum=1))
        if ct.has("keep_days"):
            checkpoints = replace(checkpoints, keep_days=ct.number("keep_days", minimum=0.01))
        ct.finish()

    if root.has("transforms"):
        items = root.tables("transforms")
        if user_only("transforms"):
            parsed = []
            for i, item in enumerate(items):
                tr = _Reader(item, f"{where} [[transforms]] #{i + 1}")
                match = tr.string("match")
                append = tr.string("append") if tr.has("append") else ""
                description = tr.string("description") if tr.has("description") else ""
                tr.finish()
                parsed.append(Transform(match=match, append=append, description=description))
            transforms = transforms + tuple(parsed)

    if root.has("hooks"):
        ht = root.subtable("hooks")
        pre = _hooks(ht, "pre_tool_use") if ht.has("pre_tool_use") else ()
        post = _hooks(ht, "post_tool_use") if ht.has("post_tool_use") else ()
        ht.finish()
        if user_only("hooks"):
            hooks = HookSettings(hooks.pre_tool_use + pre, hooks.post_tool_use + post)

    if root.has("agent"):
        at = root.subtable("agent")
        changes: dict[str, Any] = {}
        if at.has("model"):
            changes["model"] = at.string("model")
        if at.has("max_tokens"):
            changes["max_tokens"] = at.integer("max_tokens", minimum=1, maximum=200_000)
        if at.has("temperature"):
            changes["temperature"] = at.number("temperature", minimum=0, maximum=1)
        if at.has("system_prompt"):
            changes["system_prompt"] = at.string("system_prompt")
        if at.has("max_cost"):
            cost = at.number("max_cost", minimum=0)
            changes["max_cost"] = cost if trusted or agent.max_cost is None else min(cost, agent.max_cost)
        if at.has("verbosity"):
            changes["verbosity"] = at.string("verbosity", ("silent", "normal", "verbose", "debug"))
        if at.has("prune_old"):
            changes["prune_old"] = at.integer("prune_old", minimum=1)
        for secret_key in ("api_key", "base_url"):
            if at.has(secret_key):
                value = at.string(secret_key)
                if user_only(f"agent.{secret_key}"):
                    changes[secret_key] = value
        at.finish()
        agent = replace(agent, **changes)

    if root.has("permissions"):
        value = root.string("permissions")
        if user_only("permissions"):
            from tether.core.permissions import parse_permissions

            parse_permissions(value)  # validate now, with the file named on error
            permissions = value

    root.finish()
    return EffectiveConfig(
        policy=policy,
        sandbox=sandbox,
        checkpoints=checkpoints,
        hooks=hooks,
        agent=agent,
        transforms=transforms,
        permissions=permissions,
        warnings=tuple(warnings),
        sources=base.sources,
    )


def _hooks(table: _Reader, key: str) -> tuple[Hook, ...]:
    parsed = []
    for i, item in enumerate(table.tables(key)):
        hr = _Reader(item, f"{table.where} {key} #{i + 1}")
        command = hr.strings("command")
        if not command:
            raise ConfigError(f"{hr.where}: `command` must not be empty")
        timeout = (
            hr.number("timeout", minimum=0.1, maximum=MAX_COMMAND_TIMEOUT) if hr.has("timeout") else 10.0
        )
        tools = hr.strings("tools") if hr.has("tools") else ()
        hr.finish()
        parsed.append(Hook(command=command, timeout=timeout, tools=tools))
    return tuple(parsed)
