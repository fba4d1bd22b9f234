"""Redaction: each secret shape an agent's tool call could carry, and things that must survive."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.core.redact import (
    _FOLDED_PATTERNS,
    _KEYWORD,
    _NOT_SECRET_KEYS,
    _PATTERNS,
    MARK,
    _fold,
    _redact_folded,
    is_secret_key,
    redact,
    redact_text,
)

SECRETS = [
    ("export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf0123456789_-xyz", "sk-ant-api03"),
    ("key sk-ant-api03-AbCdEf0123456789 in text", "AbCdEf0123456789"),
    ("openai sk-proj-abcdefghijklmnopqrstuvwx", "sk-proj-abcdefghijklmnopqrstuvwx"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("token ghp_" + "a1B2" * 9, "a1B2a1B2"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG"),
    ("curl -H 'Authorization: Bearer eyJhbGciOi.payload.sig123'", "eyJhbGciOi"),
    ('curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA=="', "dXNlcjpwYXNzd29yZA"),
    ("git clone https://alice:hunter2@github.com/x/y.git", "hunter2"),
    ("postgres://app:s3cr3t@db:5432/prod", "s3cr3t"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk (truncated)", "b3BlbnNzaC1rZXk"),
    ("DB_PASSWORD=correct-horse", "correct-horse"),
    ('{"client_secret": "abc-123-def"}', "abc-123-def"),
    ("mysql --password s3cretpw -u root", "s3cretpw"),
    ("SLACK=xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
    ("GOOGLE=AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890"),
    ("auth_token: 'q1w2e3r4'", "q1w2e3r4"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secret_shapes_are_redacted(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert MARK in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096",
        "ls -la src/",
        "the tokenizer is fast",
        "https://github.com/owner/repo.git",
        "password reset flow documented in README",
    ],
)
def test_ordinary_text_survives(text: str) -> None:
    assert redact_text(text) == text


def test_text_around_a_private_key_survives() -> None:
    text = "before\n-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\nafter"
    out = redact_text(text)
    assert out.startswith("before\n")
    assert out.endswith("\nafter")
    assert "AAAA" not in out


def test_nested_structures_and_secret_keys() -> None:
    value = {
        "command": "echo $TOKEN",
        "env": {"API_KEY": "plain-value", "HOME": "/root", "nested": {"password": ["a", "b"]}},
        "max_tokens": 5,
        "list": ["Bearer abcdefghijklmnop", 3, None, True],
        "session_id": "abc",
    }
    out = redact(value)
    assert out["command"] == "echo $TOKEN"
    assert out["env"]["API_KEY"] == MARK
    assert out["env"]["HOME"] == "/root"
    assert out["env"]["nested"]["password"] == [MARK, MARK]
    assert out["max_tokens"] == 5
    assert out["list"] == [f"Bearer {MARK}", 3, None, True]
    assert out["session_id"] == MARK
    assert value["env"]["API_KEY"] == "plain-value", "the input must not be modified"


@pytest.mark.parametrize(
    ("key", "secret"),
    [("api_key", True), ("GITHUB_TOKEN", True), ("Password", True), ("max_tokens", False), ("path", False)],
)
def test_secret_key_names(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_non_json_values_become_redacted_strings() -> None:
    class Obj:
        def __str__(self) -> str:
            return "password=x1y2"

    assert redact({"v": Obj()}) == {"v": f"password={MARK}"}


@pytest.mark.parametrize(
    "chunk", ["x-", "token-", "password=", "bearer ", "a-b.c_", "-----BEGIN PRIVATE KEY-----", "sk-"]
)
def test_adversarial_large_inputs_finish(chunk: str) -> None:
    """Tool output can be 500 KB of anything; a backtracking regex would hang here (pytest-timeout)."""
    text = chunk * (200_000 // len(chunk))
    out = redact_text(text + " password=hunter2")
    assert "hunter2" not in out


def test_credentials_only_the_high_confidence_formats_are_redacted_for_the_model() -> None:
    from tether.core.redact import CREDENTIAL_MARK, redact_credentials

    source = (
        'API = "sk-ant-api03-' + "a" * 40 + '"\n'
        'password = "hunter2"\nTOKEN_NAME = "ghp_"  # a prefix alone is not a key\n'
        "key_id = 'AKIA" + "ABCDEFGHIJKLMNOP" + "'\n"
    )
    text, count = redact_credentials(source)
    assert count == 2
    assert text.count(CREDENTIAL_MARK) == 2
    assert 'password = "hunter2"' in text
    assert 'TOKEN_NAME = "ghp_"' in text
    nested, n = redact_credentials({"a": ["xoxb-" + "1" * 20, 3, None], "b": "plain"})
    assert n == 1
    assert nested == {"a": [CREDENTIAL_MARK, 3, None], "b": "plain"}


# --- the patterns as first written, and the faster ones that replaced them -------------------------
#
# `redact.py` searches the case-insensitive shapes in a lower-cased copy of the text and starts the
# others with their literal prefix (both about 20-60x faster on big files). These are the patterns as
# they were first written, with `(?i)` and a leading `\b`: the specification the fast ones must match
# at every offset of every text.

_KEYWORD_AS_WRITTEN = re.compile(
    r"(?i)(?:secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
    r"|credential|auth[_\-]?token|session[_\-]?id|cookie|token(?!s\b|izer|ize|_count|_limit|s_))"
)
_CASE_SENSITIVE_AS_WRITTEN = (
    r"\bsk-ant-[A-Za-z0-9_\-]{8,}",
    r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}",
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+",
)
_ANY_CASE_AS_WRITTEN = (
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9\-._~+/]{8,}=*"), rf"\1\2{MARK}"),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://[^/\s:@]*:)([^@\s/]+)(@)"), rf"\1{MARK}\3"),
)

_FRAGMENTS = [
    *("token", "TOKEN", "Token", "to\u212aen", "tokens", "tokenizer", "token_count", "s_", "izer"),
    *("secret", "ſecret", "SECRET", "passwd", "PassWord", "passphrase", "pwd", "api_key", "Api-Key"),
    *("apikey", "access-key", "private_key", "credential", "auth_token", "session_id", "sessİon", "cookie"),
    *("sk-ant-", "sk-", "proj-", "AKIA", "ASIA", "ghp", "gho", "_", "github_pat_", "glpat-", "xoxb-", "AIza"),
    *("eyJ", "bearer", "Bearer", "BASIC", "basıc", "https", "postgres", "://", "@", ":", "/", "=", "==", "."),
    *(" ", "\t", "\n", "'", '"', ",", ";", "&", "-", "~", "+", "x", "é", "İ", "ı", "ſ", "\u212a", "\u0307"),
    *("a1B2c3D4e5", "0123456789ABCDEF", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOP", "ZZZZ"),
]
_TEXTS = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=2), max_size=24).map("".join)


def _span(match: re.Match[str] | None) -> tuple[int, int] | None:
    return match.span() if match else None


def test_fold_keeps_every_offset_and_every_case_insensitive_letter() -> None:
    """Over all of Unicode: the folded text is as long as the text, and a character holds a given ASCII
    letter after folding exactly when a case-insensitive `re` pattern of that letter matches it."""
    everything = "".join(chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)
    folded = _fold(everything)
    assert len(folded) == len(everything)
    letters = {m.start() for m in re.finditer(r"(?i)[a-z]", everything)}
    assert letters == {i for i, ch in enumerate(folded) if "a" <= ch <= "z"}
    for i in letters:
        assert re.fullmatch(f"(?i){folded[i]}", everything[i]), (hex(ord(everything[i])), folded[i])
    for kind in (r"\w", r"\s"):  # `\b`, `\s` and the name characters see the same text
        assert [m.start() for m in re.finditer(kind, everything)] == [
            m.start() for m in re.finditer(kind, folded)
        ]


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_the_fast_patterns_match_where_the_patterns_as_written_do(text: str) -> None:
    folded = _fold(text)
    for start in range(len(text) + 1):
        assert _span(_KEYWORD.search(folded, start)) == _span(_KEYWORD_AS_WRITTEN.search(text, start))
    as_written = text
    for pattern in _CASE_SENSITIVE_AS_WRITTEN:
        as_written = re.sub(pattern, MARK, as_written)
    for any_case, repl in _ANY_CASE_AS_WRITTEN:
        as_written = any_case.sub(repl, as_written)
    fast = text
    for fast_pattern, fast_repl in _PATTERNS[1:]:  # [0] is the private-key block, unchanged
        fast = fast_pattern.sub(fast_repl, fast)
    for needed, folded_pattern in _FOLDED_PATTERNS:
        fast = _redact_folded(fast, needed, folded_pattern)
    assert fast == as_written
    assert is_secret_key(text) is (
        text.lower() not in _NOT_SECRET_KEYS and bool(_KEYWORD_AS_WRITTEN.search(text))
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("TO\u212aEN=abc123", "abc123"),  # the Kelvin sign is a K to a case-insensitive pattern
        ("ſecret: hunter2", "hunter2"),
        ("Authorization: BEARER İabcdefghij", "abcdefghij"),  # İ is one character longer in lower case
        ("İİİİ password=hunter2 İ", "hunter2"),
        ("HTTPS://alice:hunter2@example.com", "hunter2"),
    ],
)
def test_any_case_and_unicode_around_a_secret(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert out.count(MARK) == 1


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("--api-key sekrit", True),
        ("é--api-key sekrit", True),  # a name is ASCII letters, digits, `_`, `.` and `-`: é ends it
        ("x--api-key sekrit", False),  # `x--api-key` is not a flag
        ("x" * 70 + " --api-key sekrit", True),
        ("a" * 10 + "-" * 64 + "api-key sekrit", True),  # grown back 64 characters at most: `--…`
        ("a" * 62 + "--api-key sekrit", False),  # 64 characters back reach the `a`s
    ],
)
def test_a_name_is_grown_back_from_its_keyword_over_name_characters_only(text: str, redacted: bool) -> None:
    assert ("sekrit" not in redact_text(text)) is redacted
