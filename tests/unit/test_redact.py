"""Redaction: each secret shape an agent's tool call could carry, and things that must survive."""

from __future__ import annotations

import pytest

from tether.core.redact import MARK, is_secret_key, redact, redact_text

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
