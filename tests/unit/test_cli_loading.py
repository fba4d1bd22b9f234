"""`tether` fails loudly when one of its command modules cannot import (it used to vanish quietly)."""

from __future__ import annotations

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
