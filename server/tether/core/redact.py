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
from collections.abc import Mapping
from typing import Any

MARK = "[REDACTED]"

# Secret-ish words inside a variable, key or flag name. Matched on their own and the name is grown
# around them by hand: a regex with an unbounded name prefix backtracks quadratically on long runs
# like `x-x-x-x-...` or `token-token-...`; names are capped at 64 characters on each side.
_KEYWORD = re.compile(
    r"(?i)(?:secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
    r"|credential|auth[_\-]?token|session[_\-]?id|cookie|token(?!s\b|izer|ize|_count|_limit|s_))"
)
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-]{0,64}")
_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&]+)"
_ASSIGN = re.compile(rf"[\"']?[ \t]*[:=][ \t]*{_VALUE}")
_FLAG_VALUE = re.compile(rf"[ \t]+{_VALUE}")
_MAX_NAME = 64
_NOT_SECRET_KEYS = frozenset({"max_tokens", "tokens", "input_tokens", "output_tokens", "token_count"})

CREDENTIAL_MARK = "[REDACTED credential]"
"""What the model sees in place of a credential; an edit that contains it is refused (tools/edit)."""

_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL
)
_CREDENTIALS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),  # Anthropic
    re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI / Stripe style
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),  # AWS key id
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google API key
)
"""High-confidence credential formats: a private-key block or a provider's key prefix. These, and only
these, are also removed from what the model reads (`redact_credentials`)."""

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_PEM, f"-----BEGIN PRIVATE KEY----- {MARK} -----END PRIVATE KEY-----"),
    *((pattern, MARK) for pattern in _CREDENTIALS),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"), MARK),  # JWT
    # Authorization: Bearer xxx / Basic xxx / token xxx
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9\-._~+/]{8,}=*"), rf"\1\2{MARK}"),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://[^/\s:@]*:)([^@\s/]+)(@)"), rf"\1{MARK}\3"),
)


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


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in "_.-")


def _redact_assignments(text: str) -> str:
    """`NAME=value`, `NAME: value`, `"NAME": "value"`, `--NAME value` where NAME looks secret."""
    out: list[str] = []
    pos = 0
    search_from = 0
    while True:
        m = _KEYWORD.search(text, search_from)
        if m is None:
            break
        name_end = _NAME_CHARS.match(text, m.end()).end()  # type: ignore[union-attr]
        start = m.start()
        floor = max(pos, m.start() - _MAX_NAME)
        while start > floor and _is_name_char(text[start - 1]):
            start -= 1
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


def redact_text(text: str) -> str:
    """Replace every secret-looking substring of text with `[REDACTED]` (linear time)."""
    text = _redact_assignments(text)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def is_secret_key(key: str) -> bool:
    """True for mapping keys whose value should never be logged (api_key, password, ...)."""
    return key.lower() not in _NOT_SECRET_KEYS and _KEYWORD.search(key) is not None


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
