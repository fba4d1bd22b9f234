"""Property tests: the policy never raises, fails closed on parse errors, and agrees with bash.

`decide` must return a Decision for *any* string (it is fed by a model); an input tree-sitter
flags with an error must be denied; an allowed simple command's argv must be what bash builds.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tether.core.policy import PolicySettings, check_path, decide, decide_argv
from tether.core.policy.parse import parse

SETTINGS = PolicySettings()
WS = Path(__file__).resolve().parent  # any existing directory; nothing is written
SHELLISH = st.text(
    alphabet=st.sampled_from([*list("ls -ag'\"\\$`(){}[]<>|&;!#~*?=:/.\n\t 0129xyz"), "\r", "\x00", "é"]),
    max_size=40,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_never_raises_on_any_text(command: str) -> None:
    for mode in ("read", "command"):
        decision = decide(command, mode, WS, SETTINGS)  # type: ignore[arg-type]
        assert decision.rule != "internal.error", decision.reason
        assert isinstance(decision.reason, str)


@settings(max_examples=600, deadline=None)
@given(SHELLISH)
def test_never_raises_on_shell_metacharacters(command: str) -> None:
    decision = decide(command, "command", WS, SETTINGS)
    assert decision.rule != "internal.error", decision.reason
    decision.to_json()
    decision.error_payload()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=6))
def test_decide_argv_never_raises(argv: list[str]) -> None:
    decision = decide_argv(argv, "read", WS, SETTINGS)
    assert decision.rule != "internal.error", decision.reason


@settings(max_examples=600, deadline=None)
@given(SHELLISH)
def test_parse_errors_are_denied(command: str) -> None:
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        return
    assume(parse(source).root_node.has_error)
    assert not decide(command, "command", WS, SETTINGS).allowed


def test_megabyte_input_is_denied_quickly() -> None:
    decision = decide("ls " + "a" * 2_000_000, "read", WS, SETTINGS)
    assert decision.rule == "input.too_long"


WORD_CHARS = st.text(alphabet=st.sampled_from(list("ab-=.,:/'\"\\ *?[]{}~#@%+")), min_size=1, max_size=12)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(WORD_CHARS)
def test_allowed_echo_argv_matches_bash(tmp_path: Path, text: str) -> None:
    """Differential: whenever we allow `echo TEXT`, bash splits and unquotes TEXT as we did."""
    decision = decide(f"echo {text}", "read", tmp_path, SETTINGS)
    # printf with no argument still prints one empty string, so compare only non-empty argv
    assume(decision.allowed and not decision.needs_shell and len(decision.segments[0].argv) > 1)
    out = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", f"printf '%s\\0' {text}"],
        capture_output=True,
        cwd=tmp_path,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert list(decision.segments[0].argv[1:]) == out.stdout.decode().split("\0")[:-1]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.booleans())
def test_check_path_never_raises(raw: str, write: bool) -> None:
    result = check_path(raw, WS, write=write, settings=SETTINGS)
    assert result.ok is (result.path is not None)
    if result.ok:
        assert result.path is not None
        assert result.path.is_relative_to(WS)


def test_check_path_survives_an_overlong_name() -> None:
    assert check_path("a" * 5000 + "/b", WS, write=True, settings=SETTINGS).ok
