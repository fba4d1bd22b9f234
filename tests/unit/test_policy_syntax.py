"""Syntax rules: the node-type allowlist, quote removal and input checks, table-driven.

Each row is (command, expected rule). Rows for denials are the bypasses an attacker tries:
substitutions and expansions in every quoting context, quoting tricks in the command name,
line continuations, control and invisible characters, look-alike letters, parse errors that an
error-tolerant parser would otherwise paper over.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.core.policy import PolicySettings, decide

SETTINGS = PolicySettings()

DENIED_SYNTAX: list[tuple[str, str]] = [
    # substitutions and expansions, bare and inside double quotes
    ("ls $(rm -rf /)", "syntax.command_substitution"),
    ('ls "$(id)"', "syntax.command_substitution"),
    ("ls `id`", "syntax.command_substitution"),
    ('ls "`id`"', "syntax.command_substitution"),
    ("cat <(ls)", "syntax.process_substitution"),
    ("ls >(cat)", "syntax.process_substitution"),
    ("ls $HOME", "syntax.expansion"),
    ("ls ${HOME}", "syntax.expansion"),
    ('ls "$HOME"', "syntax.expansion"),
    ("echo ${x@P}", "syntax.expansion"),
    ('echo "${x@P}"', "syntax.expansion"),
    ("echo ${!x}", "syntax.expansion"),
    ("echo a$x", "syntax.expansion"),
    ('echo $"rm"', "syntax.expansion"),
    ("echo foo$", "syntax.expansion"),  # a lone `$` is literal in bash, but we do not guess
    ("echo $((1+2))", "syntax.arithmetic"),
    ("echo $[1+2]", "syntax.arithmetic"),
    ("echo $'\\x72m'", "syntax.ansi_c_quoting"),
    ("$'\\x72m' -rf x", "syntax.ansi_c_quoting"),
    # structure
    ("(ls)", "syntax.subshell"),
    ("{ ls; }", "syntax.group"),
    ("f() { ls; }; f", "syntax.function"),
    ("if true; then ls; fi", "syntax.control_flow"),
    ("for i in a; do ls; done", "syntax.control_flow"),
    ("while true; do ls; done", "syntax.control_flow"),
    ("until false; do ls; done", "syntax.control_flow"),
    ("case x in x) ls;; esac", "syntax.control_flow"),
    ("[[ -f x ]]", "syntax.control_flow"),
    ("! ls", "syntax.control_flow"),
    # here-documents: only `cmd <<'EOF' [> file]`, literal body, and where bash ends it
    ("cat <<EOF\n$(id)\nEOF", "syntax.heredoc"),  # unquoted: bash expands the body
    ("cat <<EOF\n`id`\nEOF", "syntax.heredoc"),
    ("cat <<EOF\n${HOME}\nEOF", "syntax.heredoc"),
    ("cat <<EOF\na\\tb\nEOF", "syntax.heredoc"),
    ("cat <<EOF | sh\nrm -rf /\nEOF", "syntax.heredoc"),
    ("cat <<EOF && rm -rf /\nx\nEOF", "syntax.heredoc"),
    ("cat <<EOF\nfoo\n EOF\nrm -rf /\nEOF", "syntax.parse_error"),  # ` EOF` does not end it
    ("cat <<EOF\nfoo\nEOF \nrm -rf /\nEOF", "syntax.parse_error"),
    ("cat <<EOF\nfoo\nEOFX\nrm -rf /\nEOF", "syntax.parse_error"),
    ('cat <<"EOF" <<X\na\nEOF\nb\nX', "syntax.parse_error"),
    ("cat <<EOF >x; rm -rf /\nx\nEOF", "syntax.parse_error"),
    ("cat <<EOF\nno end", "syntax.parse_error"),
    ("cat <<E'O'F\nx\nEOF", "syntax.parse_error"),
    ("python3 - <<EOF\nx\nEOF", "syntax.parse_error"),  # tree-sitter drops the `-`: caught
    ("cat <<'EOF' > /etc/cron.d/x\nx\nEOF", "path.outside_workspace"),
    ("cat <<'EOF' > .git/hooks/pre-commit\nx\nEOF", "path.protected"),
    ("cat <<< x", "syntax.herestring"),
    ("A=b ls", "syntax.assignment"),
    ("PAGER=sh git log", "syntax.assignment"),
    ("GIT_EXTERNAL_DIFF=sh git diff", "syntax.assignment"),
    ("A=b", "syntax.assignment"),
    ("export A=b", "syntax.assignment"),
    ("declare -x A=b", "syntax.assignment"),
    ("unset PATH", "syntax.assignment"),
    ("ls &", "syntax.background"),
    ("ls & rm x", "syntax.background"),
    ("ls |& cat", "syntax.pipe_stderr"),
    ("ls # comment", "syntax.comment"),
    ("echo {a,b}", "syntax.brace_expansion"),
    ("echo x{1..3}", "syntax.brace_expansion"),
    ("sed {-n,1p} x", "syntax.brace_expansion"),
    ("echo a=~/x", "syntax.tilde"),
    ("echo PATH:~/x", "syntax.tilde"),
    ("cat ~root/.ssh/id_rsa", "syntax.tilde"),
    ("cat ~+/x", "syntax.tilde"),
    ("ls > f arg", "syntax.redirect_position"),
    ("ls >\nls", "syntax.parse_error"),  # tree-sitter: `> ls`; bash: syntax error
    ("ls 2>\nfile", "syntax.parse_error"),
    ("ls 0>x", "syntax.ambiguous_redirect"),  # tree-sitter: argument `0`; bash: fd 0
    ("echo a 1>x 0>y", "syntax.redirect_position"),  # tree-sitter: `0` is a second target word
    ("ls {fd}>x", "syntax.ambiguous_redirect"),  # bash allocates an fd into $fd
    ("ls&&" * 300 + "ls", "input.too_complex"),
    # quoting and escaping in the command name
    ('"r"m x', "syntax.quoted_command_name"),
    ("'r'm x", "syntax.quoted_command_name"),
    ("\\rm x", "syntax.quoted_command_name"),
    ("r\\m x", "syntax.quoted_command_name"),
    ("r''m x", "syntax.quoted_command_name"),
    ('"ls" -la', "syntax.quoted_command_name"),
    ("$(echo rm) x", "syntax.command_substitution"),
    ("`echo rm` x", "syntax.command_substitution"),
    ("ls\\\n-la", "syntax.line_continuation"),
    ("echo a\\\nb", "syntax.line_continuation"),
    ("echo 'a\\\nb'", "syntax.line_continuation"),  # conservative: refused even where literal
    # parse errors: tree-sitter recovers, we do not
    ("ls 'unterminated", "syntax.parse_error"),
    ('ls "unterminated', "syntax.parse_error"),
    ("ls &&", "syntax.parse_error"),
    ("| ls", "syntax.parse_error"),
    ("ls |", "syntax.parse_error"),
    ("ls <> f", "syntax.parse_error"),
    ("echo !(x)", "syntax.parse_error"),
    ("ls )", "syntax.parse_error"),
    ("ls ;; ls", "syntax.unsupported"),
    # input checks
    ("", "input.empty"),
    ("   \n\t ", "input.empty"),
    ("ls\r-la", "input.control_char"),
    ("ls\rrm x", "input.control_char"),
    ("ls\x00rm", "input.control_char"),
    ("ls \x1b[2Jx", "input.control_char"),
    ("ls\u2028rm x", "input.control_char"),
    ("ls\u200b -la", "input.invisible_char"),
    ("ls \u202egnp.exe", "input.invisible_char"),
    ("ls \ud800", "input.invalid_unicode"),
    # look-alikes and paths in the command name
    ("ｌｓ", "command.non_ascii"),
    ("l\u0455 -la", "command.non_ascii"),  # Cyrillic dze
    ("ls\u00a0-la", "command.non_ascii"),  # NBSP is a word character to bash
    ("/bin/rm x", "command.path"),
    ("./rm x", "command.path"),
    (".venv/bin/python -c 1", "command.path"),
    ("ls* x", "command.name_chars"),
    (". x", "command.name_chars"),
]


@pytest.mark.parametrize(("command", "rule"), DENIED_SYNTAX)
def test_syntax_bypasses_are_denied(command: str, rule: str, tmp_path: Path) -> None:
    decision = decide(command, "command", tmp_path, SETTINGS)
    assert not decision.allowed
    assert decision.rule == rule, decision.reason
    assert decision.reason


HEREDOCS = [
    "cat <<'EOF' > notes.txt\nhi $HOME `id` $(id) \\t\nEOF",
    'cat <<"EOF" > notes.txt\n$(id)\nEOF',
    "cat <<EOF > notes.txt\nplain text, no expansion\nEOF",
    "cat << EOF >notes.txt\nx\nEOF",
    "cat <<-'EOF' > notes.txt\n\tindented\n\tEOF\nls",
    "cat <<'EOF'\nEOF\n",
    "pwd && cat <<'EOF' > notes.txt\nafter a list, it is the last command's\nEOF",
]


@pytest.mark.parametrize("command", HEREDOCS)
def test_a_literal_here_document_is_stdin_like_a_pipe(command: str, tmp_path: Path) -> None:
    decision = decide(command, "command", tmp_path, SETTINGS)
    assert decision.allowed, decision.reason
    assert decision.needs_shell
    assert ("cat",) in [segment.argv for segment in decision.segments]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_ends_the_allowed_here_documents_where_the_policy_does(tmp_path: Path) -> None:
    """The policy's reading checked against bash itself: the body is data, nothing else runs."""
    for command in HEREDOCS:
        probe = tmp_path / "ran"
        script = command.replace("notes.txt", str(tmp_path / "notes.txt"))
        run = subprocess.run(
            ["bash", "-c", script.replace("\nls", f"\ntouch {probe}")],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        assert run.returncode == 0, (command, run.stderr)
        assert "uid=" not in run.stdout
        assert probe.exists() == command.endswith("\nls")
        probe.unlink(missing_ok=True)


def test_too_long_input_is_denied(tmp_path: Path) -> None:
    settings = PolicySettings(max_command_length=50)
    assert decide("ls " + "a" * 47, "read", tmp_path, settings).allowed
    decision = decide("ls " + "a" * 48, "read", tmp_path, settings)
    assert (decision.allowed, decision.rule) == (False, "input.too_long")


def test_unknown_mode_is_denied(tmp_path: Path) -> None:
    decision = decide("ls", "write", tmp_path, SETTINGS)  # type: ignore[arg-type]
    assert (decision.allowed, decision.rule) == (False, "input.mode")


def test_non_string_command_is_denied(tmp_path: Path) -> None:
    decision = decide(b"ls", "read", tmp_path, SETTINGS)  # type: ignore[arg-type]
    assert (decision.allowed, decision.rule) == (False, "input.invalid")


ALLOWED_SHAPES: list[tuple[str, list[list[str]], bool]] = [
    ("ls -la", [["ls", "-la"]], False),
    ("ls\t-la", [["ls", "-la"]], False),
    ("ls -la;", [["ls", "-la"]], False),
    ("ls 'a b' \"c d\" e\\ f", [["ls", "a b", "c d", "e f"]], False),
    ("cat \"a\"'b'c", [["cat", "abc"]], False),
    ('echo "a\\"b\\\\c\\d"', [["echo", 'a"b\\c\\d']], False),
    ("echo 'it''s'", [["echo", "its"]], False),
    ('echo "it\'s"', [["echo", "it's"]], False),
    ("echo '$HOME' '`id`' '$(id)'", [["echo", "$HOME", "`id`", "$(id)"]], False),
    ('echo "\\$HOME"', [["echo", "$HOME"]], False),
    ("echo \\$HOME \\`id\\`", [["echo", "$HOME", "`id`"]], False),
    ("echo '{a,b}' x\\{a,b\\}", [["echo", "{a,b}", "x{a,b}"]], False),
    ("git show HEAD@{1}", [["git", "show", "HEAD@{1}"]], False),
    ("git log HEAD~3..HEAD", [["git", "log", "HEAD~3..HEAD"]], False),
    ("ls | head -3", [["ls"], ["head", "-3"]], True),
    ("ls && pwd || whoami; date", [["ls"], ["pwd"], ["whoami"], ["date"]], True),
    ("ls\npwd", [["ls"], ["pwd"]], True),
    ("ls 2>/dev/null", [["ls"]], True),
    ("ls *.md", [["ls", "*.md"]], True),
    ("ls ~", [["ls", "~"]], True),
]


@pytest.mark.parametrize(("command", "argvs", "needs_shell"), ALLOWED_SHAPES)
def test_allowed_shapes_give_bash_argv(
    command: str, argvs: list[list[str]], needs_shell: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # so `ls ~` stays inside the workspace
    decision = decide(command, "read", tmp_path, SETTINGS)
    assert decision.allowed, decision.reason
    assert [list(s.argv) for s in decision.segments] == argvs
    assert decision.needs_shell is needs_shell


WORDS = [
    "plain",
    "'single quoted'",
    '"double quoted"',
    "back\\ slash",
    "'mixed'\"quo\"tes",
    '"esc \\" \\\\ \\$ \\` \\a"',
    "\\'\\\"",
    "a\\*b",
    "'*'",
    "--opt=value",
    "-x",
    "'-' -- '--'",
    "x\\{a,b\\}",
    '"{a,b}"',
    "semi\\;colon",
    "p\\|ipe",
    "'#'hash",
    "a#b",
    "'tab\there'",
    '"new\nline"',
    "é'ü'\"ñ\"",
    "HEAD~1",
    "a=b",
    "'a=~/x'",
    "[x",
    "x]",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("word", WORDS)
def test_quote_removal_matches_real_bash(word: str, tmp_path: Path) -> None:
    """Differential check: our argv equals the argv bash builds from the same text."""
    decision = decide(f"echo {word}", "read", tmp_path, SETTINGS)
    assert decision.allowed, decision.reason
    ours = list(decision.segments[0].argv[1:])
    out = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", f"printf '%s\\0' {word}"],
        capture_output=True,
        cwd=tmp_path,  # empty: globs match nothing, as in our expansion
        check=True,
        timeout=30,
    )
    theirs = out.stdout.decode().split("\0")[:-1]
    assert ours == theirs
