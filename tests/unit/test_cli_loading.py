"""`tether` fails loudly when one of its command modules cannot import (it used to vanish quietly)."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import pytest

from tether import cli


def test_every_command_is_registered() -> None:
    parser = cli.build_parser()
    actions = [a for a in parser._actions if a.dest == "command"]
    names = set(actions[0].choices or {})  # type: ignore[arg-type]
    assert {"check", "run", "tool", "sandbox", "log", "checkpoints", "rollback", "doctor", "serve"} <= names


def test_a_broken_command_module_stops_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def broken(name: str, *args: Any) -> Any:
        if name == "tether.cli.check":
            raise ImportError("simulated: a dependency of `tether check` is missing")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ImportError, match="simulated"):
        cli.build_parser()


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices or {})


def test_a_command_parses_the_same_with_only_its_own_module() -> None:
    """`main` builds only the module named like the command (a cold-start saving); every command
    must still parse exactly as with the whole parser, including those another module defines."""
    full = _commands(cli.build_parser())
    assert len(full) > 10
    for name in sorted(full):
        sub = _commands(cli._parser_for([name]))
        assert name in sub, name
        assert sub[name].format_help() == full[name].format_help(), name
    assert set(_commands(cli._parser_for(["check"]))) == {"check"}
