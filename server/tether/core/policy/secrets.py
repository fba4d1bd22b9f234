"""Secret files: the paths whose content must never reach the model, by name, at any depth.

Why a list of names and not a content scan: whatever the agent reads goes to the model provider and
into conversation files. A name is known before anything is read, so every layer can act on it the
same way: the policy refuses a command naming one, the file tools refuse or skip it, and the
sandbox hides it from every program (which matters once any program may run: `python3 -c
"print(open('.env').read())"` names nothing).

Patterns are gitignore-like and case-insensitive (`.ENV` is the same file on a case-insensitive
file system): a plain name (`.env`, `*.pem`) matches a file of that name anywhere, a trailing `/`
(`.ssh/`) matches a directory and everything in it, a `/` inside (`.docker/config.json`) matches
that many trailing path components. The user extends the list (`[secrets] paths`), the
project may only add to it, and `[secrets] allow` (user config) lets exact workspace paths through.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    ".aws/",
    ".ssh/",
    ".gnupg/",
    ".docker/config.json",
    "*.kdbx",
    "credentials*.json",
    "secrets.*",
)
"""What every user gets (docs/secrets.md); `[secrets] paths` adds to it, nothing removes from it."""

NOT_SECRET_NAMES: frozenset[str] = frozenset({".env.example", ".env.sample", ".env.template"})
"""Templates that document the variables without their values: meant to be read and committed."""

_PUBLIC_SUFFIXES = (".pub",)  # `id_ed25519.pub` is a public key


@dataclass(frozen=True)
class SecretSettings:
    patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    allowed: frozenset[str] = field(default_factory=frozenset)
    """Workspace-relative paths the user let through (`[secrets] allow`, or approved for a session)."""


@functools.lru_cache(maxsize=8192)
def secret_pattern(relpath: str, settings: SecretSettings) -> str | None:
    """The pattern that makes the workspace-relative `relpath` a secret, or None.

    `relpath` uses `/`; `.`, empty and `..` components are ignored (callers resolve paths first).
    Cached: every path of every command is checked against every pattern, and the same few paths
    come back all the time (a pure function of its arguments).
    """
    parts = [p for p in relpath.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or relpath.strip("/") in settings.allowed or "/".join(parts) in settings.allowed:
        return None
    lowered = [p.lower() for p in parts]
    for pattern in settings.patterns:
        if _matches(lowered, pattern.lower()):
            return pattern
    return None


def _matches(parts: list[str], pattern: str) -> bool:
    """A directory pattern (`.ssh/`) matches any component; any other pattern matches the path's
    last components (`.env` is a file named `.env` at any depth, not a virtualenv directory
    called `.env` that holds the file)."""
    words = [w for w in pattern.strip("/").split("/") if w]
    if not words:
        return False
    if pattern.endswith("/"):
        return any(
            all(_name_matches(n, w) for n, w in zip(parts[start : start + len(words)], words, strict=True))
            for start in range(len(parts) - len(words) + 1)
        )
    if len(parts) < len(words):
        return False
    return all(_name_matches(n, w) for n, w in zip(parts[-len(words) :], words, strict=True))


def _name_matches(name: str, word: str) -> bool:
    if name in NOT_SECRET_NAMES:
        return False
    if not fnmatch.fnmatchcase(name, word):
        return False
    return not (word.startswith("id_") and name.endswith(_PUBLIC_SUFFIXES))


def secret_globs(settings: SecretSettings) -> list[str]:
    """The patterns as ripgrep globs matching the files they cover at any depth."""
    return [f"**/{p.strip('/')}/**" if p.endswith("/") else f"**/{p}" for p in settings.patterns]


def how_to_allow(relpath: str) -> str:
    """The sentence every refusal ends with: what the person can do about it."""
    return (
        f"if the agent really needs {relpath}, the user can allow it for this session (VS Code: "
        f'"Tether: Allow Secret File…", Neovim: `:AgentAllowSecret {relpath}`, any client: LSP '
        f'`tether.allowSecret`) or always (`[secrets] allow = ["{relpath}"]` '
        "in the user config; docs/secrets.md); its content will then reach the model"
    )


def merge_patterns(base: Iterable[str], extra: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*base, *extra]))
