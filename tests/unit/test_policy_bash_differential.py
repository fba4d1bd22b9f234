"""Differential fuzzing against real bash: for every command the policy allows, bash must run
exactly the simple commands, with exactly the argv, that the policy checked.

Each allowed program is replaced by a shell function that logs its argv (functions take
precedence over builtins and binaries), so bash itself tells us how it split the command into
segments and words. A mismatch would mean tree-sitter and bash disagree — the class of bug that
turns a parser-based policy into a bypass.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tether.core.policy import PolicySettings, decide

# Hundreds of real bash processes per run: marked slow (deselect with -m "not slow").
pytestmark = [
    pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed"),
    pytest.mark.slow,
]

PROGRAMS = ("ls", "cat", "echo", "head", "wc", "grep", "pwd")
PRELUDE = "".join(f"{name}() {{ printf '%s\\0' {name} \"$@\" $'\\1' >> \"$LOG\"; }}\n" for name in PROGRAMS)
WORD = st.text(alphabet=st.sampled_from(list("ab-=.,:/'\"\\ #@%+{}xy012")), min_size=1, max_size=10)
SEGMENT = st.tuples(
    st.sampled_from(PROGRAMS),
    st.lists(WORD, max_size=3),
    st.sampled_from(
        ["", " 2>/dev/null", " > out.txt", " >> log.txt 2>&1", " 2> err.txt", ">out.txt", "2>err.txt", "1>o"]
    ),
)
SEPARATORS = st.sampled_from([" ; ", ";", " && ", "&&", " | ", "|", "\n", " ;\n"])


def _bash_argvs(command: str, workspace: Path) -> list[tuple[str, ...]]:
    return _bash_run(command, workspace)[0]


def _bash_run(command: str, workspace: Path) -> tuple[list[tuple[str, ...]], str]:
    """The argv of every simple command bash ran, and bash's own stderr."""
    log = workspace / ".argv.log"
    log.write_bytes(b"")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", PRELUDE + command],
        cwd=workspace,
        env={"LOG": str(log), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    records = log.read_bytes().split(b"\x01\x00")[:-1]
    return [tuple(r.decode().split("\x00")[:-1]) for r in records], proc.stderr.decode(errors="replace")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENT, min_size=1, max_size=3), st.lists(SEPARATORS, min_size=2, max_size=2))
def test_bash_runs_what_the_policy_checked(
    tmp_path: Path, segments: list[tuple[str, list[str], str]], seps: list[str]
) -> None:
    parts = [" ".join([name, *words]) + redirect for name, words, redirect in segments]
    command = parts[0]
    for sep, part in zip(seps, parts[1:], strict=False):
        command += sep + part
    decision = decide(command, "command", tmp_path, PolicySettings())
    assume(decision.allowed)
    ours = sorted(s.argv for s in decision.segments)
    theirs = sorted(_bash_argvs(command, tmp_path))
    assert ours == theirs, command


@pytest.mark.parametrize(
    "command",
    [
        "echo a;echo b",
        "echo 'a;b' \"c|d\" e\\&f",
        "cat x|wc -l",
        "ls&&pwd",
        "echo a\necho 'b\nc'",
        "grep -e '#x' y",
        "echo a#b '#c' \\#d",
        "echo '' \"\" x",
        "echo {x} 'a{b,c}' a\\{b,c\\}",
        "echo -- -n '-e' \"--\"",
    ],
)
def test_known_tricky_commands_agree_with_bash(command: str, tmp_path: Path) -> None:
    decision = decide(command, "command", tmp_path, PolicySettings())
    assert decision.allowed, decision.reason
    assert sorted(s.argv for s in decision.segments) == sorted(_bash_argvs(command, tmp_path))


TOKENS = st.sampled_from(
    [
        "ls",
        "echo",
        "cat",
        "wc",
        " ",
        " ",
        " ",
        " ",
        ";",
        "&&",
        "|",
        " | ",
        "; ",
        ">",
        ">>",
        "2>",
        "&>",
        "<",
        "2>&1",
        ">&2",
        "0",
        "1",
        "2",
        "x",
        "y",
        "x",
        "y",
        "'",
        '"',
        "\\",
        "{",
        "}",
        "#",
        "\n",
        "-n",
        "=",
        "a b",
        "$",
        "(",
        "&",
        ",",
        "..",
        "/",
        "-",
        "--",
    ]
)


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(st.sampled_from(["ls", "echo", "cat", "wc"]), st.lists(TOKENS, min_size=1, max_size=12))
def test_random_token_soup_agrees_with_bash(tmp_path: Path, program: str, tokens: list[str]) -> None:
    """Raw token soup (operators, quotes, digits next to redirects, …): whatever we allow, bash
    must run as the same simple commands with the same argv."""
    command = program + " " + "".join(tokens)
    (tmp_path / "x").write_text("")
    (tmp_path / "y").write_text("")
    decision = decide(command, "command", tmp_path, PolicySettings())
    assume(decision.allowed)
    ran, stderr = _bash_run(command, tmp_path)
    # A redirect bash cannot open (`> dir/`, `< missing`) skips that command: not a parse difference.
    assume(not any(m in stderr for m in ("No such file", "Is a directory", "Not a directory")))
    assert sorted(s.argv for s in decision.segments) == sorted(ran), command
