"""What a known program looks like to the policy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tether.core.policy.argspec import Parsed, Spec, parse_args
from tether.core.policy.types import Deny, Mode

Checker = Callable[[Sequence[str], Mode], Parsed]

READ_AND_COMMAND: frozenset[Mode] = frozenset({"read", "command"})
COMMAND_ONLY: frozenset[Mode] = frozenset({"command"})


@dataclass(frozen=True)
class Program:
    """`check(args, mode)` validates the arguments (without argv[0]) or raises Deny.

    `modes` says where the program may run at all; `check` may narrow further per mode (e.g.
    `python --version` in read mode, `python -m pytest` only in command mode).
    """

    name: str
    modes: frozenset[Mode]
    check: Checker
    summary: str = ""


def simple(spec: Spec, summary: str = "", modes: frozenset[Mode] = READ_AND_COMMAND) -> Program:
    """A program whose whole command line is described by one Spec."""

    def check(args: Sequence[str], mode: Mode) -> Parsed:
        return parse_args(args, spec)

    return Program(name=spec.name, modes=modes, check=check, summary=summary)


def version_only(name: str, *flags: str) -> Program:
    """A program allowed only to print its version (`node --version`, `rustc -V`)."""
    allowed = set(flags or ("--version",))

    def check(args: Sequence[str], mode: Mode) -> Parsed:
        if len(args) == 1 and args[0] in allowed:
            return Parsed(options=[args[0]])
        raise Deny(
            "command.version_only",
            f"only `{name} {' | '.join(sorted(allowed))}` is allowed",
            f"add `{name} …` to command_whitelist in your user config to allow more",
            program=name,
        )

    return Program(name=name, modes=READ_AND_COMMAND, check=check, summary="version query only")


def no_operands(value: str) -> None:
    raise Deny("args.unexpected", f"unexpected argument {value!r}")
