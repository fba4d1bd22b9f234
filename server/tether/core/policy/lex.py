"""Quote removal for one shell word, done the way bash does it, refusing anything ambiguous.

Why our own lexer when tree-sitter already tokenised the word: tree-sitter is an error-tolerant
highlighting grammar, not bash. We let it find the *structure* (commands, pipes, lists, redirects)
and then re-read every argument's raw text with bash's quoting rules ourselves, so the argv we
check is the argv bash will build. Whatever could make the two disagree — an unquoted `$`, a
backtick, a line continuation, a metacharacter inside a "word", brace expansion, a tilde after `=`
— is refused instead of guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tether.core.policy.types import Deny

_GLOB_CHARS = frozenset("*?[")
_METACHARS = frozenset(" \t\n;&|<>()")
_DQ_ESCAPABLE = frozenset('$`"\\')


@dataclass(frozen=True)
class Word:
    """One argument after quote removal.

    `pattern` is a glob pattern matching a *superset* of what bash's pathname expansion of the
    word can match (quoted glob characters escaped, bracket expressions widened, so
    no dialect difference between bash and Python's `fnmatch` can hide a match); it is only
    meaningful when `glob` is True. `tilde` means the word starts with an unquoted `~` or `~/`
    that bash will replace with $HOME. `plain` means no quoting or escaping was used at all.
    """

    value: str
    pattern: str
    glob: bool = False
    tilde: bool = False
    plain: bool = True


def _glob_escape(ch: str) -> str:
    return f"[{ch}]" if ch in _GLOB_CHARS or ch == "]" else ch


def _superset_pattern(tokens: list[tuple[str, bool]]) -> str:
    """Join lexed characters into a glob pattern matching a superset of bash's matches.

    Bracket expressions have dialects (`[!x]`, `[^x]`, `[]x]`, `[[:alpha:]]`) that Python's
    fnmatch and bash read differently; a bracket can never match `/`, so from an unquoted `[` to
    the end of its path component we simply match anything (`*`).
    """
    out: list[str] = []
    i = 0
    while i < len(tokens):
        ch, special = tokens[i]
        if special and ch == "[":
            out.append("*")
            while i < len(tokens) and tokens[i][0] != "/":
                i += 1
            continue
        out.append(ch if special and ch in "*?" else _glob_escape(ch))
        i += 1
    return "".join(out)


_PLAIN = re.compile(r"[A-Za-z0-9_./,:+@%=^-]+\Z")


def unquote(raw: str) -> Word:
    """Quote-remove `raw` (the exact source text of one shell word) or raise `Deny`."""
    if _PLAIN.match(raw):  # fast path: nothing bash would treat specially
        return Word(value=raw, pattern="")
    if raw.startswith("#"):  # bash would start a comment here; tree-sitter thought it a word
        raise Deny("syntax.comment", "a word starting with `#` begins a comment in bash")
    out: list[str] = []
    pat: list[tuple[str, bool]] = []
    glob = False
    plain = True
    brace_open = False
    brace_risky = False
    i = 0
    n = len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= n:
                raise Deny("syntax.escape", "a trailing backslash is ambiguous")
            nxt = raw[i + 1]
            if nxt == "\n":
                raise Deny(
                    "syntax.line_continuation", "line continuations (backslash-newline) are not allowed"
                )
            out.append(nxt)
            pat.append((nxt, False))
            plain = False
            i += 2
            continue
        if ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                raise Deny("syntax.parse_error", "unterminated single quote")
            text = raw[i + 1 : end]
            out.append(text)
            pat.extend((c, False) for c in text)
            plain = False
            i = end + 1
            continue
        if ch == '"':
            i = _double_quoted(raw, i + 1, out, pat)
            plain = False
            continue
        if ch == "$":
            raise Deny(
                "syntax.expansion",
                "`$` (parameter, arithmetic or command expansion, `$'…'` quoting) is not allowed",
                "write the literal value, or quote it in single quotes if you meant a `$`",
            )
        if ch == "`":
            raise Deny("syntax.command_substitution", "backtick command substitution is not allowed")
        if ch in _METACHARS:
            raise Deny("syntax.unexpected", f"unexpected unquoted {ch!r} inside a word")
        if ch == "~":
            prev = raw[i - 1] if i > 0 else ""
            if i > 0 and prev in "=:":
                raise Deny(
                    "syntax.tilde",
                    "an unquoted `~` after `=` or `:` may be expanded by bash",
                    "quote it or write the full path",
                )
        if ch == "{":
            brace_open = True
        elif (brace_open and ch == ",") or (brace_open and ch == "." and raw.startswith("..", i)):
            brace_risky = True
        if ch in _GLOB_CHARS:
            glob = True
        out.append(ch)
        pat.append((ch, ch in "*?[]"))
        i += 1
    if brace_risky:
        raise Deny(
            "syntax.brace_expansion",
            "brace expansion (`{a,b}`, `{1..3}`) is not allowed",
            "write each word out, or quote the braces",
        )
    value = "".join(out)
    tilde = raw == "~" or raw.startswith("~/")
    if raw.startswith("~") and not tilde:
        raise Deny(
            "syntax.tilde",
            "only `~` and `~/…` are understood; `~user`, `~+` and `~-` are not allowed",
            "write the full path",
        )
    return Word(
        value=value, pattern=_superset_pattern(pat) if glob else "", glob=glob, tilde=tilde, plain=plain
    )


def _double_quoted(raw: str, i: int, out: list[str], pat: list[tuple[str, bool]]) -> int:
    """Consume a double-quoted string starting after its opening quote; return the index after it."""
    n = len(raw)
    while i < n:
        ch = raw[i]
        if ch == '"':
            return i + 1
        if ch == "\\" and i + 1 < n:
            nxt = raw[i + 1]
            if nxt == "\n":
                raise Deny(
                    "syntax.line_continuation", "line continuations (backslash-newline) are not allowed"
                )
            if nxt in _DQ_ESCAPABLE:
                out.append(nxt)
                pat.append((nxt, False))
            else:
                out.append("\\" + nxt)
                pat.extend((("\\", False), (nxt, False)))
            i += 2
            continue
        if ch == "$" and raw.startswith('"', i + 1):  # `"foo$"`: literal to bash
            out.append(ch)
            pat.append((ch, False))
            i += 1
            continue
        if ch == "$":
            raise Deny(
                "syntax.expansion",
                "`$` expansions inside double quotes are not allowed",
                "use single quotes for literal text",
            )
        if ch == "`":
            raise Deny("syntax.command_substitution", "backtick command substitution is not allowed")
        out.append(ch)
        pat.append((ch, False))
        i += 1
    raise Deny("syntax.parse_error", "unterminated double quote")
