"""Configuration: the user config and `.tether/config.toml`, validated and merged.

Why layers with different powers: the workspace is what the agent edits and what a hostile
repository controls. A repository must never be able to allow commands for its own agent, choose the
sandbox, add hooks or point the model client elsewhere. So the user config (platformdirs, e.g.
`~/.config/tether/config.toml`) may set everything, and the project config may only *narrow*: add
deny rules and protected paths, lower limits, turn checkpoints' exclusions on. Keys that would widen
are ignored with a warning the user sees, never silently applied. An administrator's managed file
(`managed_config_path()`) is read after the user config and overrides it.

Keys follow the seed's `tool_safety` block where they overlap (`git_enabled`, `command_whitelist`,
`command_timeout`, `firejail_enabled`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import platformdirs

from tether.core.network.rules import PRESETS, NetworkSettings, normalize_host, unknown_presets
from tether.core.policy.ruleset import (
    Layer,
    Rule,
    RuleError,
    RuleSource,
    command_argvs,
    example_failures,
    rule_from_table,
)
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
    regenerated: tuple[str, ...] = ()
    """More directory names whose ignored copies are build outputs (checkpoint/regenerated.py)."""
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
class ApprovalSettings:
    timeout: float = 300.0
    """Seconds a question waits for the person; then it is a deny."""


@dataclass(frozen=True)
class EffectiveConfig:
    """Everything every part of Tether reads, after validation and the narrowing merge."""

    policy: PolicySettings = field(default_factory=PolicySettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
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


def managed_config_path() -> Path:
    """The administrator's file (`$TETHER_MANAGED_CONFIG`, else /etc/tether/managed.toml).

    Read after the user config, so its settings override the user's, and its deny and ask rules
    cannot be loosened by any layer (the strictest matching rule wins).
    """
    return Path(os.environ.get("TETHER_MANAGED_CONFIG") or "/etc/tether/managed.toml")


def load_config(workspace: Path | None, *, user_path: Path | None = None) -> EffectiveConfig:
    """Read, validate and merge the config files (user, managed, project); a missing file is empty."""
    config = EffectiveConfig()
    layers = _layers(workspace, user_path)
    for path, layer in layers:
        raw, rule_lines = _read_toml(path)
        trusted = layer != "project"
        config = _apply(config, raw, str(path), trusted=trusted, layer=layer, rule_lines=rule_lines)
    sources = tuple(str(p) for p, _ in layers if p is not None and p.is_file())
    policy = replace(config.policy, network_enabled=config.network.enabled)
    return replace(config, sources=sources, policy=policy)


def _layers(workspace: Path | None, user_path: Path | None) -> tuple[tuple[Path | None, Layer], ...]:
    """The config files in the order they fold: user, then managed (overrides), then project."""
    return (
        (user_path if user_path is not None else user_config_path(), "user"),
        (managed_config_path(), "managed"),
        (project_config_path(workspace) if workspace is not None else None, "project"),
    )


@dataclass(frozen=True)
class RuleReport:
    """One `[[rules]]` table checked on its own (`tether rules test`): where, what, what failed."""

    source: str
    layer: Layer
    pattern: str
    decision: str
    examples: int
    failures: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "layer": self.layer,
            "pattern": self.pattern,
            "decision": self.decision,
            "examples": self.examples,
            "failures": list(self.failures),
            "ok": not self.failures,
        }


def rule_reports(workspace: Path | None, *, user_path: Path | None = None) -> list[RuleReport]:
    """Every rule of every layer checked one by one, so one broken rule does not hide the others
    (loading stops at the first)."""
    reports: list[RuleReport] = []
    for path, layer in _layers(workspace, user_path):
        try:
            raw, lines = _read_toml(path)
        except ConfigError as exc:
            reports.append(RuleReport(str(path), layer, "", "", 0, (str(exc),)))
            continue
        tables = raw.get("rules", [])
        for index, table in enumerate(tables if isinstance(tables, list) else [tables]):
            source = RuleSource(layer, str(path), lines[index] if index < len(lines) else None)
            try:
                rule = rule_from_table(table, source)
            except RuleError as exc:
                reports.append(RuleReport(str(source), layer, "", "", 0, (str(exc),)))
                continue
            failures = tuple(example_failures(rule, command_argvs))
            if layer == "project" and rule.decision == "allow":
                failures += ("ignored: the project may only add ask and deny rules",)
            examples = len(rule.match) + len(rule.not_match)
            text = rule.pattern_text
            reports.append(RuleReport(str(source), layer, text, rule.decision, examples, failures))
    return reports


def config_from_mappings(
    user: Mapping[str, Any], project: Mapping[str, Any] | None = None
) -> EffectiveConfig:
    """Same merge as `load_config` from in-memory tables (initializationOptions, tests)."""
    config = _apply(EffectiveConfig(), user, "<user settings>", trusted=True)
    return _apply(config, project or {}, "<project settings>", trusted=False, layer="project")


_RULES_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*rules[ \t]*\]\]", re.MULTILINE)


def _read_toml(path: Path | None) -> tuple[dict[str, Any], tuple[int, ...]]:
    """The file's tables, and the line of each `[[rules]]` header (tomllib keeps no positions)."""
    if path is None or not path.is_file():
        return {}, ()
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from exc
    lines = tuple(text.count("\n", 0, m.start()) + 1 for m in _RULES_HEADER.finditer(text))
    return data, lines


# --- validation helpers ------------------------------------------------------------------------


class _Reader:
    """Pops typed values from one table and names the file and key in every error."""

    def __init__(
        self, table: Mapping[str, Any], where: str, *, layer: Layer = "user", rule_lines: Sequence[int] = ()
    ) -> None:
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
        self.table = dict(table)
        self.where = where
        self.layer: Layer = layer
        self.rule_lines = tuple(rule_lines)
        """The line of each `[[rules]]` header, in order: rule errors and sources name them."""

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


# --- the keys, declared once ----------------------------------------------------------------------

Trust = Literal["any", "user", "narrow_min", "strict_rules", "safety_on", "safety_max"]
"""Who may set a key: any layer; only the user config (`user`); any layer, but a layer the
repository controls only lowers it (`narrow_min`, for limits), adds only ask and deny rules
(`strict_rules`), only turns a safety net on (`safety_on`: checkpoints) or only raises what it keeps
(`safety_max`: the file size checkpoints take, how long they are kept)."""

Read = Callable[["_Reader", str], Any]


@dataclass(frozen=True)
class Key:
    """One config key: where it lives in TOML, where it goes, its type and bounds, and who may set it.

    `append` keys add to what lower layers set (lists of rules and paths). A reader returning None
    means "no change" (`firejail_enabled = false`). `warn_as` names the key in the warning when a
    whole table is user-only (`hooks`).
    """

    table: str | None
    name: str
    section: str
    field: str
    read: Read
    trust: Trust = "any"
    append: bool = False
    warn_as: str | None = None

    @property
    def dotted(self) -> str:
        return self.warn_as or (f"{self.table}.{self.name}" if self.table else self.name)


def _bool(r: _Reader, key: str) -> bool:
    return r.bool_(key)


def _strings(r: _Reader, key: str) -> tuple[str, ...]:
    return r.strings(key)


def _text(r: _Reader, key: str) -> str:
    return r.string(key)


def _number(minimum: float, maximum: float | None = None) -> Read:
    return lambda r, key: r.number(key, minimum=minimum, maximum=maximum)


def _integer(minimum: int, maximum: int | None = None) -> Read:
    return lambda r, key: r.integer(key, minimum=minimum, maximum=maximum)


def _choice(*choices: str) -> Read:
    return lambda r, key: r.string(key, choices)


def _firejail_flag(r: _Reader, key: str) -> str | None:
    """The seed's `firejail_enabled = true` means `[sandbox] backend = "firejail"`."""
    return "firejail" if r.bool_(key) else None


def _permission_words(r: _Reader, key: str) -> str:
    from tether.core.permissions import parse_permissions

    value = r.string(key)
    try:
        parse_permissions(value)  # validate now, with the file named on error
    except ConfigError as exc:
        raise ConfigError(f"{r.where}: {exc}") from None
    return value


def _transforms(r: _Reader, key: str) -> tuple[Transform, ...]:
    parsed = []
    for i, item in enumerate(r.tables(key)):
        tr = _Reader(item, f"{r.where} [[transforms]] #{i + 1}")
        match = tr.string("match")
        append = tr.string("append") if tr.has("append") else ""
        description = tr.string("description") if tr.has("description") else ""
        tr.finish()
        parsed.append(Transform(match=match, append=append, description=description))
    return tuple(parsed)


def _rules(r: _Reader, key: str) -> tuple[Rule, ...]:
    """`[[rules]]` tables, each checked against its own examples (a failing example is an error)."""
    rules = []
    for index, table in enumerate(r.tables(key)):
        line = r.rule_lines[index] if index < len(r.rule_lines) else None
        source = RuleSource(r.layer, r.where, line)
        try:
            rule = rule_from_table(table, source)
        except RuleError as exc:
            raise ConfigError(str(exc)) from None
        failures = example_failures(rule, command_argvs)
        if failures:
            raise ConfigError(f"{source}: rule `{rule.pattern_text}`: " + "; ".join(failures))
        rules.append(rule)
    return tuple(rules)


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


def _domains(r: _Reader, key: str) -> tuple[str, ...]:
    """Domain names (`example.com`, `*.example.com`, `host:8080`), checked as the proxy reads them."""
    names = r.strings(key)
    for name in names:
        bare = name[2:] if name.startswith("*.") else name
        host, sep, port = bare.rpartition(":")
        checked = normalize_host(host if sep and port.isdigit() else bare)
        if not isinstance(checked, str):
            raise ConfigError(f"{r.where}: `{key}`: {checked.reason}")
    return names


def _presets(r: _Reader, key: str) -> tuple[str, ...]:
    names = r.strings(key)
    unknown = unknown_presets(names)
    if unknown:
        raise ConfigError(
            f"{r.where}: unknown network preset(s) {', '.join(unknown)}; known: {', '.join(PRESETS)}"
        )
    return names


_TIMEOUT = _number(1, MAX_COMMAND_TIMEOUT)

KEYS: tuple[Key, ...] = (
    # the seed's `tool_safety` block
    Key("tool_safety", "git_enabled", "checkpoints", "enabled", _bool, "safety_on"),
    Key("tool_safety", "command_whitelist", "policy", "extra_allowed", _strings, "user", append=True),
    Key("tool_safety", "command_timeout", "sandbox", "command_timeout", _TIMEOUT, "narrow_min"),
    Key("tool_safety", "firejail_enabled", "sandbox", "backend", _firejail_flag, "user"),
    # [policy]
    Key("policy", "deny", "policy", "denied", _strings, append=True),
    Key("policy", "protected_paths", "policy", "extra_protected", _strings, append=True),
    Key("policy", "allow", "policy", "extra_allowed", _strings, "user", append=True),
    Key(None, "rules", "policy", "rules", _rules, "strict_rules", append=True),
    # [secrets]: the project may add names (append), only the user may let a file through
    Key("secrets", "paths", "policy", "secret_patterns", _strings, append=True),
    Key("secrets", "allow", "policy", "secret_allowed", _strings, "user", append=True),
    # [sandbox]
    Key("sandbox", "backend", "sandbox", "backend", _choice(*SANDBOX_BACKENDS), "user"),
    Key("sandbox", "command_timeout", "sandbox", "command_timeout", _TIMEOUT, "narrow_min"),
    Key(
        "sandbox", "max_output_bytes", "sandbox", "max_output_bytes", _integer(1024, 64_000_000), "narrow_min"
    ),
    Key("sandbox", "max_parallel", "sandbox", "max_parallel", _integer(1, 32), "narrow_min"),
    Key("sandbox", "env_passthrough", "sandbox", "env_passthrough", _strings, "user", append=True),
    # [checkpoints]
    # [checkpoints]: what rollback can undo; the project may only make it undo more
    Key("checkpoints", "enabled", "checkpoints", "enabled", _bool, "safety_on"),
    Key("checkpoints", "max_file_bytes", "checkpoints", "max_file_bytes", _integer(0), "safety_max"),
    Key("checkpoints", "time_budget_seconds", "checkpoints", "time_budget_seconds", _number(0.1)),
    Key("checkpoints", "exclude", "checkpoints", "exclude", _strings, "user", append=True),
    Key("checkpoints", "regenerated", "checkpoints", "regenerated", _strings, "user", append=True),
    Key("checkpoints", "keep_count", "checkpoints", "keep_count", _integer(1), "safety_max"),
    Key("checkpoints", "keep_days", "checkpoints", "keep_days", _number(0.01), "safety_max"),
    # [hooks]: commands that run on every call, so only the user may add them
    Key("hooks", "pre_tool_use", "hooks", "pre_tool_use", _hooks, "user", True, "hooks"),
    Key("hooks", "post_tool_use", "hooks", "post_tool_use", _hooks, "user", True, "hooks"),
    # [agent]: the model you pay for and the instructions it follows are yours to choose
    Key("agent", "model", "agent", "model", _text, "user"),
    Key("agent", "max_tokens", "agent", "max_tokens", _integer(1, 200_000), "user"),
    Key("agent", "temperature", "agent", "temperature", _number(0, 1)),
    Key("agent", "system_prompt", "agent", "system_prompt", _text, "user"),
    Key("agent", "max_cost", "agent", "max_cost", _number(0), "narrow_min"),
    Key("agent", "verbosity", "agent", "verbosity", _choice("silent", "normal", "verbose", "debug")),
    Key("agent", "prune_old", "agent", "prune_old", _integer(1)),
    Key("agent", "api_key", "agent", "api_key", _text, "user"),
    Key("agent", "base_url", "agent", "base_url", _text, "user"),
    # [approvals]
    Key("approvals", "timeout_seconds", "approvals", "timeout", _number(1, 3600), "narrow_min"),
    # [network]: off unless the user allows domains; the project may only add denied domains
    Key("network", "allowed_domains", "network", "allowed_domains", _domains, "user", append=True),
    Key("network", "denied_domains", "network", "denied_domains", _domains, append=True),
    Key("network", "presets", "network", "presets", _presets, "user", append=True),
    Key("network", "allow_local_addresses", "network", "allow_local_addresses", _bool, "user"),
    # top level
    Key(None, "transforms", "", "transforms", _transforms, "user", append=True),
    Key(None, "permissions", "", "permissions", _permission_words, "user"),
)
"""Every key the config files accept, with its trust rule (tests/unit/test_config.py pins them)."""


def _apply(
    base: EffectiveConfig,
    raw: Mapping[str, Any],
    where: str,
    *,
    trusted: bool,
    layer: Layer = "user",
    rule_lines: Sequence[int] = (),
) -> EffectiveConfig:
    """Validate one file against `KEYS` and fold it into `base` with each key's trust rule."""
    root = _Reader(raw, where, layer=layer, rule_lines=rule_lines)
    warnings = list(base.warnings)
    sections: dict[str, Any] = {
        name: getattr(base, name)
        for name in ("policy", "sandbox", "checkpoints", "hooks", "agent", "approvals", "network")
    }
    top: dict[str, Any] = {"transforms": base.transforms, "permissions": base.permissions}
    tables = {key.table for key in KEYS if key.table is not None}
    readers = {name: root.subtable(name) for name in sorted(tables) if root.has(name)}
    for key in KEYS:
        reader = root if key.table is None else readers.get(key.table)
        if reader is None or not reader.has(key.name):
            continue
        value = key.read(reader, key.name)  # validated even when it will be ignored
        if key.trust == "user" and not trusted:
            warnings.append(f"{where}: `{key.dotted}` is ignored: only the user config may set it")
            continue
        if key.trust == "strict_rules" and not trusted:
            for rule in value:
                if rule.decision == "allow":
                    warnings.append(
                        f"{rule.source}: the allow rule `{rule.pattern_text}` is ignored: the project "
                        "may only add ask and deny rules (allow rules belong in your user config)"
                    )
            value = tuple(rule for rule in value if rule.decision != "allow")
        current = top[key.field] if not key.section else getattr(sections[key.section], key.field)
        if not trusted and _weakens(key, current, value):
            warnings.append(
                f"{where}: `{key.dotted} = {value!r}` is ignored: only the user config may make "
                "checkpoints take or keep less"
            )
            continue
        merged = _fold(key, current, value, trusted=trusted)
        if merged is None:
            continue
        if not key.section:
            top[key.field] = merged
        else:
            sections[key.section] = replace(sections[key.section], **{key.field: merged})
    for reader in readers.values():
        reader.finish()
    root.finish()
    return EffectiveConfig(**sections, **top, warnings=tuple(warnings), sources=base.sources)


def _weakens(key: Key, current: Any, value: Any) -> bool:
    """Would this value from the repository make rollback undo less than the user's settings?"""
    if key.trust == "safety_on":
        return bool(current) and not value
    if key.trust == "safety_max":
        return value is not None and current is not None and value < current
    return False


def _fold(key: Key, current: Any, value: Any, *, trusted: bool) -> Any:
    if value is None:
        return None
    if key.trust == "narrow_min" and not trusted and current is not None:
        return min(current, value)
    if key.append:
        return tuple(current) + tuple(value)
    return value
