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

_SECRET_NAME = (
    r"(?:[A-Za-z0-9_.\-]*(?:secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|apikey|access[_\-]?key"
    r"|private[_\-]?key|client[_\-]?secret|credential|auth[_\-]?token|session[_\-]?id|cookie"
    r"|token(?!s\b|izer|ize|_count|_limit|s_)))[A-Za-z0-9_.\-]*"
)
_KEY_RE = re.compile(rf"^{_SECRET_NAME}$", re.IGNORECASE)
_NOT_SECRET_KEYS = frozenset({"max_tokens", "tokens", "input_tokens", "output_tokens", "token_count"})

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys (whole block; an unterminated block to the end of the string)
    (
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)",
            re.DOTALL,
        ),
        f"-----BEGIN PRIVATE KEY----- {MARK} -----END PRIVATE KEY-----",
    ),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), MARK),  # Anthropic
    (re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"), MARK),  # OpenAI / Stripe style
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"), MARK),  # AWS key id
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), MARK),  # GitHub tokens
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), MARK),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), MARK),  # GitLab
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), MARK),  # Slack
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), MARK),  # Google API key
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"), MARK),  # JWT
    # Authorization: Bearer xxx / Basic xxx / token xxx
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9\-._~+/]{8,}=*"), rf"\1\2{MARK}"),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)(@)"), rf"\1{MARK}\3"),
    # NAME=value, NAME: value, "NAME": "value", --NAME value is handled by the key layer of argv
    (
        re.compile(rf"(?i)(\b{_SECRET_NAME}[\"']?\s*(?:=|:)\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&]+)"),
        rf"\1{MARK}",
    ),
    # --password value / --token value on a command line
    (
        re.compile(rf"(?i)(--{_SECRET_NAME}\s+)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"';&]+)"),
        rf"\1{MARK}",
    ),
)


def redact_text(text: str) -> str:
    """Replace every secret-looking substring of text with `[REDACTED]`."""
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def is_secret_key(key: str) -> bool:
    """True for mapping keys whose value should never be logged (api_key, password, ...)."""
    return key.lower() not in _NOT_SECRET_KEYS and bool(_KEY_RE.match(key))


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


__all__ = ["MARK", "is_secret_key", "redact", "redact_text"]
