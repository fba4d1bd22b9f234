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
from collections import Counter
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
# One log file per bash process: a pipeline's members run at once, and printf's writes of two
# processes appending to one file could interleave (a record torn in two made this test flaky).
PRELUDE = "".join(
    f"{name}() {{ printf '%s\\0' {name} \"$@\" $'\\1' >> \"$LOG.$BASHPID\"; }}\n" for name in PROGRAMS
)
WORD = st.text(alphabet=st.sampled_from(list("ab-=.,:/'\"\\ #@%+{}xy012$")), min_size=1, max_size=10)
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
    for stale in workspace.glob(".argv.log.*"):
        stale.unlink()
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", PRELUDE + command],
        cwd=workspace,
        env={"LOG": str(log), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    logged = b"".join(f.read_bytes() for f in sorted(workspace.glob(".argv.log.*")))
    records = logged.split(b"\x01\x00")[:-1]
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
        'grep -E "foo$" x',
        'echo "$" "a$"b "a$"\'$x\' "\\$"',
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
    assume("||" not in command)  # the right side of `||` does not run when the left succeeds
    (tmp_path / "x").write_text("")
    (tmp_path / "y").write_text("")
    decision = decide(command, "command", tmp_path, PolicySettings())
    assume(decision.allowed)
    ran, _ = _bash_run(command, tmp_path)
    # The security property: bash ran nothing we did not check. (It may run *less*: a redirect it
    # cannot open, `> dir/` or `< missing`, skips that command, and its error may land in a file.)
    assert not Counter(ran) - Counter(s.argv for s in decision.segments), command


# --- redirects: bash must send each command's stdout/stderr where the policy thinks ------------

FD_PRELUDE = "".join(
    f'{name}() {{ local f="$LOGDIR/$BASHPID.$RANDOM$RANDOM"; printf \'%s\\0\' {name} "$@" >"$f"; '
    f'readlink /proc/self/fd/3 3>&1 >>"$f"; readlink /proc/self/fd/4 4>&2 >>"$f"; }}\n'
    for name in PROGRAMS
)
REDIRECTS = st.sampled_from(
    [" > o1", " >> o2", " 2> e1", " 2>&1", " &> o3", " >&2", " 2>/dev/null", " > /dev/null", " 1> o4"]
)


def _expected_fds(redirects: tuple[tuple[str, str], ...], workspace: Path) -> tuple[str, str]:
    """Simulate bash's left-to-right redirections: where fd 1 and fd 2 end up."""
    fd = {1: "other", 2: "other"}
    for op, target in redirects:
        path = target if target.startswith("/") else str(workspace / target)
        if op in (">", ">>", "1>", "1>>"):
            fd[1] = path
        elif op in ("2>", "2>>"):
            fd[2] = path
        elif op in ("&>", "&>>"):
            fd[1] = fd[2] = path
        elif op == "2>&1" or (op == "2>&" and target == "1"):
            fd[2] = fd[1]
        elif op in (">&", "1>&"):
            fd[1] = fd[2]
    return fd[1], fd[2]


def _bash_fds(command: str, workspace: Path) -> list[tuple[tuple[str, ...], str, str]]:
    logdir = workspace / ".fdlog"
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir()
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", FD_PRELUDE + command],
        cwd=workspace,
        env={"LOGDIR": str(logdir), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    out = []
    for record in logdir.iterdir():
        argv_part, _, rest = record.read_bytes().rpartition(b"\x00")
        fd1, fd2 = [*rest.decode().splitlines(), "", ""][:2]
        norm = [p if p.startswith(str(workspace)) or p == "/dev/null" else "other" for p in (fd1, fd2)]
        out.append((tuple(argv_part.decode().split("\x00")), norm[0], norm[1]))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from(PROGRAMS), st.lists(REDIRECTS, max_size=2)), min_size=1, max_size=3),
    st.lists(st.sampled_from([" | ", " && ", " ; "]), min_size=2, max_size=2),
)
def test_redirects_bind_where_bash_binds_them(
    tmp_path: Path, segments: list[tuple[str, list[str]]], seps: list[str]
) -> None:
    ws = tmp_path.resolve()
    parts = [f"{name} s{i}" + "".join(redirects) for i, (name, redirects) in enumerate(segments)]
    command = parts[0] + "".join(sep + part for sep, part in zip(seps, parts[1:], strict=False))
    decision = decide(command, "command", ws, PolicySettings())
    assume(decision.allowed)
    ours = sorted(
        (s.argv, *_expected_fds(tuple((r.op, r.target) for r in s.redirects), ws)) for s in decision.segments
    )
    assert ours == sorted(_bash_fds(command, ws)), command
