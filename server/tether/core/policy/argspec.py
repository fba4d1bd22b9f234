"""Argument schemas: which options a program may get, and what its other arguments are.

Why schemas and not blocklists: the dangerous options of `find`, `rg`, `sort`, `git` … are many and
new ones appear; an option that is not listed here is refused. Parsing follows getopt_long and
git's parse-options: combined short flags (`-rn`), attached values (`-A3`, `-ofile`,
`--max-count=3`), `--` ending options, and unambiguous long-option prefixes. A prefix is accepted
only when it names exactly one option among the allowed *and* the known-denied ones, so
`--upload-pa` is recognised as `--upload-pack` and refused rather than mistaken for something new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from tether.core.policy.types import Deny

Validator = Callable[[str], None]
# "text": anything; "path": a file read inside the workspace; "write": a file written (must not be
# protected); "nodeid": a pytest node id (its file part is a path); "int": a (possibly signed)
# number; or a function raising Deny.
Kind = Union[str, Validator]  # noqa: UP007 - a runtime alias

_NUMBER = re.compile(r"[+-]?\d+[KMGkmgbcw]?\Z")


@dataclass(frozen=True)
class Spec:
    """The options and operands one program (or git subcommand) accepts."""

    flags: frozenset[str] = frozenset()
    valued: Mapping[str, Kind] = field(default_factory=dict)
    optional: Mapping[str, Kind] = field(default_factory=dict)  # long options, value only via `=`
    short_optional: Mapping[str, Kind] = field(default_factory=dict)  # `-M50%`: value only attached
    denied: Mapping[str, str] = field(default_factory=dict)  # option -> why
    positional: Kind = "path"
    first_positional: Kind | None = None  # e.g. grep's pattern (unless -e/-f given)
    first_positional_unless: frozenset[str] = frozenset()
    max_positional: int | None = None
    numeric_flag: bool = False  # `head -20`, `grep -3`
    abbrev: bool = True
    name: str = ""


@dataclass
class Parsed:
    """What the schema found: operands and option values, sorted by how they must be checked."""

    options: list[str] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)
    read_paths: list[str] = field(default_factory=list)
    write_paths: list[str] = field(default_factory=list)
    values: list[tuple[str, str]] = field(default_factory=list)  # (option, value) pairs


def _known(spec: Spec) -> list[str]:
    return [*spec.flags, *spec.valued, *spec.optional, *spec.denied]


def resolve_long(name: str, spec: Spec) -> str:
    """The full long option `name` stands for, or Deny (unknown, ambiguous, or refused)."""
    if name in spec.denied:
        raise Deny("flag.denied", f"`{spec.name} {name}` is not allowed: {spec.denied[name]}")
    if name in spec.flags or name in spec.valued or name in spec.optional:
        return name
    if spec.abbrev:
        matches = sorted({o for o in _known(spec) if o.startswith("--") and o.startswith(name)})
        if len(matches) == 1:
            full = matches[0]
            if full in spec.denied:
                raise Deny(
                    "flag.denied",
                    f"`{spec.name} {name}` abbreviates `{full}`, which is not allowed: {spec.denied[full]}",
                )
            return full
        if len(matches) > 1:
            raise Deny(
                "flag.ambiguous",
                f"`{spec.name} {name}` is ambiguous ({', '.join(matches)})",
                "write the option in full",
            )
    raise _unknown(spec, name)


def _unknown(spec: Spec, option: str) -> Deny:
    return Deny(
        "flag.unknown",
        f"the option `{option}` of `{spec.name}` is not in the allowed list",
        f"add `{spec.name} {option}` to command_whitelist in your user config if it is safe",
    )


def _take(parsed: Parsed, spec: Spec, option: str, kind: Kind, value: str) -> None:
    parsed.options.append(option)
    parsed.values.append((option, value))
    check_value(parsed, spec, option, kind, value)


def check_value(parsed: Parsed, spec: Spec, what: str, kind: Kind, value: str) -> None:
    if kind == "text":
        return
    if kind == "path":
        parsed.read_paths.append(value)
    elif kind == "write":
        parsed.write_paths.append(value)
    elif kind == "nodeid":  # pytest: `tests/test_x.py::TestA::test_b[param]`
        parsed.read_paths.append(value.split("::", 1)[0])
    elif kind == "int":
        if not _NUMBER.match(value):
            raise Deny("flag.value", f"`{spec.name} {what}` expects a number, not {value!r}")
    elif callable(kind):
        kind(value)
    else:  # pragma: no cover - a typo in a schema table
        raise Deny("internal.schema", f"unknown value kind {kind!r} for {spec.name}")


def parse_args(args: Sequence[str], spec: Spec) -> Parsed:
    """Walk `args` (without the program name) against `spec`; raise Deny at the first bad one.

    Operands are classified once every option is known: getopt_long moves options ahead of
    operands, so in `grep .env -e x` the `-e` makes `.env` a file to read, not the pattern.
    """
    parsed = Parsed()
    operands: list[str] = []
    i = 0
    only_operands = False
    while i < len(args):
        arg = args[i]
        i += 1
        if only_operands or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        if arg == "--":
            only_operands = True
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            option = resolve_long(name, spec)
            if option in spec.flags:
                if eq:
                    raise Deny("flag.value", f"`{spec.name} {option}` takes no value")
                parsed.options.append(option)
            elif option in spec.valued:
                if not eq:
                    if i >= len(args):
                        raise Deny("flag.missing_value", f"`{spec.name} {option}` needs a value")
                    value = args[i]
                    i += 1
                _take(parsed, spec, option, spec.valued[option], value)
            elif eq:
                _take(parsed, spec, option, spec.optional[option], value)
            else:
                parsed.options.append(option)
            continue
        if spec.numeric_flag and arg[1:].isdigit():
            parsed.options.append("-NUM")
            continue
        i = _short_cluster(args, i, arg, parsed, spec)
    for operand in operands:
        _operand(parsed, spec, operand)
    return parsed


def _short_cluster(args: Sequence[str], i: int, arg: str, parsed: Parsed, spec: Spec) -> int:
    for j in range(1, len(arg)):
        option = "-" + arg[j]
        if option in spec.denied:
            raise Deny("flag.denied", f"`{spec.name} {option}` is not allowed: {spec.denied[option]}")
        if option in spec.flags:
            parsed.options.append(option)
            continue
        if option in spec.short_optional:
            if arg[j + 1 :]:
                _take(parsed, spec, option, spec.short_optional[option], arg[j + 1 :])
            else:
                parsed.options.append(option)
            return i
        if option in spec.valued:
            value = arg[j + 1 :]
            if not value:
                if i >= len(args):
                    raise Deny("flag.missing_value", f"`{spec.name} {option}` needs a value")
                value = args[i]
                i += 1
            _take(parsed, spec, option, spec.valued[option], value)
            return i
        raise _unknown(spec, option if len(arg) > 2 else arg)
    return i


def _operand(parsed: Parsed, spec: Spec, arg: str) -> None:
    if (
        not parsed.positionals
        and spec.first_positional is not None
        and not any(o in spec.first_positional_unless for o in parsed.options)
    ):
        parsed.positionals.append(arg)
        check_value(parsed, spec, "PATTERN", spec.first_positional, arg)
        return
    parsed.positionals.append(arg)
    limit = spec.max_positional
    if limit is not None and len(parsed.positionals) > limit:
        raise Deny("args.too_many", f"`{spec.name}` takes at most {limit} operand(s) here")
    if arg != "-":
        check_value(parsed, spec, "operand", spec.positional, arg)


def spec(
    name: str,
    flags: str | Sequence[str] = (),
    valued: Mapping[str, Kind] | None = None,
    **kw: object,
) -> Spec:
    """Build a Spec; `flags` may be a whitespace-separated string (`"-a -l --all"`)."""
    names = flags.split() if isinstance(flags, str) else list(flags)
    return Spec(name=name, flags=frozenset(names), valued=dict(valued or {}), **kw)  # type: ignore[arg-type]
