"""initializationOptions and command arguments: typed, defaulted, readable errors (tether.lsp)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.core import config as core_config
from tether.lsp import options as lsp_options
from tether.lsp.errors import ParamsError
from tether.lsp.options import InitOptions, parse_options
from tether.lsp.params import MAX_ARGUMENT_CHARS, one_object


def test_constants_match_the_config_module() -> None:
    assert lsp_options.MAX_COMMAND_TIMEOUT == core_config.MAX_COMMAND_TIMEOUT
    assert lsp_options.SANDBOX_BACKENDS == core_config.SANDBOX_BACKENDS


def test_valid_options() -> None:
    options, errors = parse_options(
        {
            "permissions": "write,read",
            "sandbox": "bubblewrap",
            "commandTimeout": 12,
            "model": "claude-x",
            "maxCost": 0.5,
            "apiKey": "sk-secret-value",
        }
    )
    assert errors == []
    assert options.permissions == "read,write"
    assert options.sandbox == "bubblewrap"
    assert options.command_timeout == 12.0
    assert options.max_cost == 0.5
    assert "sk-secret-value" not in repr(options)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ([], "must be an object"),
        ({"permissions": "root"}, "permissions: unknown permission 'root'"),
        ({"permissions": 3}, "permissions: expected a string, got a number"),
        ({"sandbox": "docker"}, "sandbox: must be one of"),
        ({"commandTimeout": 0}, "commandTimeout: must be between 1 and 600"),
        ({"commandTimeout": True}, "commandTimeout: expected a number, got a boolean"),
        ({"commandTimeout": float("nan")}, "commandTimeout: must be between"),
        ({"maxCost": -1}, "maxCost: must be at least 0"),
        ({"model": "two words"}, "model: must be a model id"),
        ({"apiKey": "  "}, "apiKey: is empty"),
        ({"colour": "blue"}, "unknown option 'colour'"),
    ],
)
def test_invalid_options_fall_back_to_defaults(raw: Any, fragment: str) -> None:
    options, errors = parse_options(raw)
    assert options == InitOptions()
    assert len(errors) == 1
    assert fragment in errors[0]


def test_options_become_the_sessions_face_overrides() -> None:
    options, errors = parse_options({"permissions": "write,read", "readOnly": True, "sandbox": "firejail"})
    assert errors == []
    overrides = options.overrides()
    assert overrides.permissions == "read,write"
    assert overrides.read_only is True
    assert overrides.sandbox == "firejail"


def test_one_object() -> None:
    assert one_object("c", []).command == "c"
    with pytest.raises(ParamsError, match="exactly one argument"):
        one_object("c", [{}, {}])
    with pytest.raises(ParamsError, match="not a list"):
        one_object("c", [[1]])
    with pytest.raises(ParamsError, match="too large"):
        one_object("c", [{"a": ["x" * 1000] * (MAX_ARGUMENT_CHARS // 1000 + 1)}])


def test_args_typed_access() -> None:
    args = one_object("tether.accept", [{"id": "p-1", "hunks": [3, 1, 3], "review": True}])
    assert args.required_string("id") == "p-1"
    assert args.hunks() == [1, 3]
    assert args.boolean("review") is True
    args.done()
    extra = one_object("tether.accept", [{"id": "p-1", "hunk": [1]}])
    extra.required_string("id")
    with pytest.raises(ParamsError, match="unknown key"):
        extra.done()
    with pytest.raises(ParamsError, match="must be an integer, not a number"):
        one_object("c", [{"n": 1.5}]).integer("n", low=1)
