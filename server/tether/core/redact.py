"""Secret redaction for everything written to the audit log.

Why here and pure: the audit log records tool inputs and outputs verbatim (commands, file content,
environment dumps), and a log that leaks an API key is worse than no log. Redaction is a pure
function over JSON-like values, so it is tested as a table of inputs and cannot fail on I/O.

Two layers: string patterns (well-known token shapes, bearer/basic credentials, passwords in URLs,
PEM private keys, `NAME=value` where NAME looks like a secret), and mapping keys (a dict key named
like a secret has its whole value replaced). False positives are accepted; leaks are not.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

MARK = "[REDACTED]"

_RE_CASE_EXTRAS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))
"""İ, ı and ſ, which `re` takes for i and s without `str.lower` making them so (`str.replace` each:
`str.translate` looks every character up and takes 100 times longer)."""


def _fold(text: str) -> str:
    """`text` in lower case, character for character: where a case-insensitive `re` pattern would
    match an ASCII letter, the folded text has that letter in lower case, at the same offset.

    Why: `(?i)` makes `re` try a match at every position (about 50 ms for a 400 KB file), while a
    lower-case pattern searched in the folded copy finds the same matches at the same offsets 20
    times faster, and the text around them is then taken from the original. `str.lower` keeps the
    length of every character but İ, and a case-insensitive ASCII letter also matches İ, ı, ſ and
    the Kelvin sign; `tests/unit/test_redact.py` checks both over all of Unicode.
    """
    if not text.isascii():
        for special, letter in _RE_CASE_EXTRAS:
            text = text.replace(special, letter)
    return text.lower()


# Secret-ish words inside a variable, key or flag name, searched in the folded text (any case).
# Matched on their own and the name is grown around them by hand: a regex with an unbounded name
# prefix backtracks quadratically on long runs like `x-x-x-x-...` or `token-token-...`; names are
# capped at 64 characters on each side.
_KEYWORD = re.compile(
    r"(?:secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
    r"|credential|auth[_\-]?token|session[_\-]?id|cookie|token(?!s\b|izer|ize|_count|_limit|s_))"
)
_MAX_NAME = 64
_NAME_CHAR_SET = string.ascii_letters + string.digits + "_.-"
"""The characters of a name: matched forward by `_NAME_CHARS`, stripped backward by `str.rstrip` (in
C: a Python loop over them took 0.7 s on 500 KB of `token`)."""
_NAME_CHARS = re.compile(f"[{re.escape(_NAME_CHAR_SET)}]{{0,{_MAX_NAME}}}")
_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&]+)"
_ASSIGN = re.compile(rf"[\"']?[ \t]*[:=][ \t]*{_VALUE}")
_FLAG_VALUE = re.compile(rf"[ \t]+{_VALUE}")
_NOT_SECRET_KEYS = frozenset({"max_tokens", "tokens", "input_tokens", "output_tokens", "token_count"})

CREDENTIAL_MARK = "[REDACTED credential]"
"""What the model sees in place of a credential; an edit that contains it is refused (tools/edit)."""

_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL
)


def _at_word_start(prefixes: tuple[str, ...], rest: str) -> re.Pattern[str]:
    r"""`\b(?:prefix|...)rest`, with each `\b` checked behind its prefix instead of before it.

    Why: a pattern that starts with `\b` gives `re` nothing to search for, so it tries a match at
    every position (about 8 ms per pattern on a 400 KB file); one that starts with a literal skips
    from one place the literal could start to the next (0.1 ms). The match is the same: a look-behind
    from the prefix's end sees `\b` at its start.
    """
    branches = "|".join(f"{re.escape(p)}(?<=\\b{re.escape(p)})" for p in prefixes)
    return re.compile(f"(?:{branches}){rest}")


_CREDENTIALS: tuple[re.Pattern[str], ...] = (
    _at_word_start(("sk-ant-",), r"[A-Za-z0-9_\-]{8,}"),  # Anthropic
    _at_word_start(("sk-",), r"(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI / Stripe style
    # AWS key id
    _at_word_start(("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"), r"[A-Z0-9]{16}\b"),
    _at_word_start(("ghp", "gho", "ghu", "ghs", "ghr"), r"_[A-Za-z0-9]{30,}\b"),  # GitHub tokens
    _at_word_start(("github_pat_",), r"[A-Za-z0-9_]{20,}"),
    _at_word_start(("glpat-",), r"[A-Za-z0-9_\-]{20,}"),  # GitLab
    _at_word_start(("xox",), r"[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    _at_word_start(("AIza",), r"[0-9A-Za-z_\-]{35}"),  # Google API key
)
"""High-confidence credential formats: a private-key block or a provider's key prefix. These, and only
these, are also removed from what the model reads (`redact_credentials`)."""

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_PEM, f"-----BEGIN PRIVATE KEY----- {MARK} -----END PRIVATE KEY-----"),
    *((pattern, MARK) for pattern in _CREDENTIALS),
    (_at_word_start(("eyJ",), r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"), MARK),  # JWT
)
"""Case-sensitive shapes, replaced in the text itself."""

_FOLDED_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Authorization: Bearer xxx / Basic xxx / token xxx
    ("", _at_word_start(("bearer", "basic", "token"), r"(\s+)([a-z0-9\-._~+/]{8,}=*)")),
    # scheme://user:password@host
    ("://", re.compile(r"([a-z](?<=\b[a-z])[a-z0-9+.\-]{0,30}://[^/\s:@]*:)([^@\s/]+)@")),
)
"""Shapes in any case, matched in the folded text (`_fold`): group 2 is the secret, everything else
is kept as the original text has it. The string is a literal that every match contains, so a text
without it is not searched at all."""


def redact_credentials(value: Any) -> tuple[Any, int]:
    """A copy of a JSON-like value with high-confidence credentials replaced by `CREDENTIAL_MARK`,
    and how many were replaced.

    Why a second, narrower redaction: this one runs on what goes to the model (tool results), where
    the audit log's broad heuristics (`NAME=value`) would alter ordinary source code. A private key
    or a provider key in a file or a command's output is never what the model needs.
    """
    if isinstance(value, str):
        count = 0
        text, n = _PEM.subn(f"-----BEGIN PRIVATE KEY----- {CREDENTIAL_MARK} -----END PRIVATE KEY-----", value)
        count += n
        for pattern in _CREDENTIALS:
            text, n = pattern.subn(CREDENTIAL_MARK, text)
            count += n
        return text, count
    if isinstance(value, Mapping):
        total = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[str(key)], n = redact_credentials(item)
            total += n
        return out, total
    if isinstance(value, list | tuple):
        pairs = [redact_credentials(item) for item in value]
        return [item for item, _ in pairs], sum(n for _, n in pairs)
    return value, 0


def _redact_assignments(text: str) -> str:
    """`NAME=value`, `NAME: value`, `"NAME": "value"`, `--NAME value` where NAME looks secret."""
    folded = _fold(text)
    out: list[str] = []
    pos = 0
    search_from = 0
    while True:
        m = _KEYWORD.search(folded, search_from)
        if m is None:
            break
        name_end = _NAME_CHARS.match(text, m.end()).end()  # type: ignore[union-attr]
        floor = max(pos, m.start() - _MAX_NAME)
        start = floor + len(text[floor : m.start()].rstrip(_NAME_CHAR_SET))
        name = text[start:name_end]
        value = None
        if name.lstrip("-").lower() not in _NOT_SECRET_KEYS:
            assign = _ASSIGN.match(text, name_end)
            if assign is not None:
                value = assign.span(1)
            elif name.startswith("--"):
                flag = _FLAG_VALUE.match(text, name_end)
                if flag is not None:
                    value = flag.span(1)
        if value is None:
            search_from = m.end()
            continue
        out.append(text[pos : value[0]])
        out.append(MARK)
        pos = search_from = value[1]
    out.append(text[pos:])
    return "".join(out)


def _redact_folded(text: str, needed: str, pattern: re.Pattern[str]) -> str:
    """`text` with the secret (group 2) of each match of `pattern` in `_fold(text)` replaced."""
    if needed not in text:
        return text
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(_fold(text)):
        out += (text[pos : m.start(2)], MARK)
        pos = m.end(2)
    out.append(text[pos:])
    return "".join(out)


def redact_text(text: str) -> str:
    """Replace every secret-looking substring of text with `[REDACTED]` (linear time)."""
    text = _redact_assignments(text)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    for needed, folded_pattern in _FOLDED_PATTERNS:
        text = _redact_folded(text, needed, folded_pattern)
    return text


def is_secret_key(key: str) -> bool:
    """True for mapping keys whose value should never be logged (api_key, password, ...)."""
    return key.lower() not in _NOT_SECRET_KEYS and _KEYWORD.search(_fold(key)) is not None


def redact(value: Any) -> Any:
    """A copy of a JSON-like value with secrets replaced; non-JSON leaves become strings."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if is_secret_key(key) and v not in (None, "", True, False) and not isinstance(v, int | float):
                out[key] = MARK if not isinstance(v, Mapping | list | tuple) else redact_all(v)
            else:
                out[key] = redact(v)
        return out
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact_text(str(value))


def redact_all(value: Any) -> Any:
    """Every string leaf replaced: used below a key named like a secret."""
    if isinstance(value, Mapping):
        return {str(k): redact_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v) for v in value]
    return MARK if isinstance(value, str) else value


__all__ = ["CREDENTIAL_MARK", "MARK", "is_secret_key", "redact", "redact_credentials", "redact_text"]
