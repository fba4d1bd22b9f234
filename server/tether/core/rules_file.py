"""Writing a rule into the user config: what "Always allow" does.

Why tomlkit: the user config is the person's file, with their comments, order and spacing. A
rule is appended as one more `[[rules]]` table and everything else stays byte for byte. The write
is atomic (a temp file renamed over the old one), and the new text is validated before it replaces
the old, so a failure can never leave the person with a half-written or unreadable config. Only
the user config is ever written: a rule in the project would be the repository allowing itself.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from tether.core.fsutil import FileProblem, atomic_write
from tether.core.policy.ruleset import Rule, RuleError, RuleSource, rule_from_table
from tether.errors import ConfigError


def rule_toml(rule: Rule) -> str:
    """The `[[rules]]` table exactly as it will be written (shown to the person before they choose)."""
    document = tomlkit.document()
    document.append("rules", _array_of(rule))
    return tomlkit.dumps(document)


def add_user_rule(rule: Rule, path: Path) -> tuple[Path, str, bool]:
    """Append `rule` to the user config at `path`; returns (path, the table's TOML, written?).

    A rule with the same pattern and decision already there is not written twice (`written` is
    False). ConfigError when the file cannot be parsed, read or written — then nothing changed.
    """
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise ConfigError(f"{path}: cannot add the rule, the file is unreadable: {exc}") from exc
    table = rule.to_table()
    existing = document.get("rules")
    if existing is not None and not isinstance(existing, list):
        raise ConfigError(f"{path}: `rules` is not a list of [[rules]] tables; the rule was not added")
    for entry in existing or []:
        if _same(entry, table):
            return path, rule_toml(rule), False
    if existing is None:
        document.append("rules", _array_of(rule))
    else:
        existing.append(_table(table))
    new_text = tomlkit.dumps(document)
    _validate(new_text, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, new_text.encode("utf-8"), path.parent, display=str(path))
    except (OSError, FileProblem) as exc:
        raise ConfigError(f"{path}: cannot write the rule: {exc}") from exc
    return path, rule_toml(rule), True


def _array_of(rule: Rule) -> tomlkit.items.AoT:
    array = tomlkit.aot()
    array.append(_table(rule.to_table()))
    return array


def _table(values: dict[str, Any]) -> tomlkit.items.Table:
    table = tomlkit.table()
    for key, value in values.items():
        table[key] = value
    return table


def _same(entry: Any, table: dict[str, Any]) -> bool:
    plain = entry.unwrap() if hasattr(entry, "unwrap") else entry
    return (
        isinstance(plain, dict)
        and plain.get("pattern") == table["pattern"]
        and plain.get("decision") == table["decision"]
    )


def _validate(text: str, path: Path) -> None:
    """The file must still parse, and every rule in it must still be a rule."""
    try:
        data = tomllib.loads(text)
        for raw in data.get("rules", []):
            rule_from_table(raw, RuleSource("user", str(path)))
    except (tomllib.TOMLDecodeError, RuleError) as exc:
        raise ConfigError(
            f"{path}: adding the rule would break the file ({exc}); nothing was written"
        ) from exc
