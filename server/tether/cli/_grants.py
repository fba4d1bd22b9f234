"""One-use grants from `tether hook claude-code --sandbox` to `tether hook run`.

Why a grant: the hook judges a Bash command and answers Claude Code with a rewritten command that
runs it in Tether's sandbox. When the verdict was *ask*, Claude Code asks you; the rewritten
command only runs if you said yes. The runner must then run that command, and only that command,
without asking again — and nothing else may claim the same approval. So the hook writes what it
judged (command, directory, mode, verdict) under a random name in Tether's user state folder,
which sandboxed commands cannot see, and the runner claims it once: a rename, so two runners
racing for one grant cannot both win. Grants expire: a question you never answered must not stay
usable.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tether.core.config import user_state_dir

GRANT_SECONDS = 3600.0
"""How long a grant waits for Claude Code to run it (a question may wait for you that long)."""
_ID_CHARS = frozenset("0123456789abcdef")


class GrantError(Exception):
    """No usable grant: unknown, already used, expired, or not for this command."""


@dataclass(frozen=True)
class Grant:
    command: str
    workspace: str
    directory: str
    """Where Claude Code's shell is, relative to the workspace (`.` for its root)."""
    mode: str
    verdict: str
    """`allow`, or `ask` when Claude Code asked you before running it."""
    created: float
    timeout: float
    """Seconds: Claude Code's own limit for this Bash call."""


def grants_dir() -> Path:
    return user_state_dir() / "hook-grants"


def issue(grant: Grant, folder: Path | None = None) -> str:
    """Write `grant` under a new random id (readable by this user only) and return the id."""
    where = folder or grants_dir()
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    _forget_expired(where, grant.created)
    grant_id = secrets.token_hex(16)
    fd = os.open(where / f"{grant_id}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(grant), out)
    return grant_id


def claim(grant_id: str, folder: Path | None = None, *, now: float | None = None) -> Grant:
    """Take the grant: after this call nobody else can (GrantError when there is none to take)."""
    if len(grant_id) != 32 or not set(grant_id) <= _ID_CHARS:
        raise GrantError(f"{grant_id!r} is not a grant id")
    where = folder or grants_dir()
    path = where / f"{grant_id}.json"
    taken = where / f"{grant_id}.taken-{os.getpid()}"
    try:
        os.rename(path, taken)
    except FileNotFoundError:
        raise GrantError("no such grant: it was used, it expired, or the hook never issued it") from None
    except OSError as exc:  # the state folder is not a folder, not writable, read-only…
        raise GrantError(f"the grant could not be taken ({exc.strerror}: {exc.filename})") from None
    try:
        data = json.loads(taken.read_text(encoding="utf-8"))
        grant = Grant(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise GrantError(f"the grant could not be read ({exc})") from None
    finally:
        taken.unlink(missing_ok=True)
    if not _well_formed(grant):
        raise GrantError("the grant is malformed")
    if (now if now is not None else time.time()) - grant.created > GRANT_SECONDS:
        raise GrantError(f"the grant expired (older than {GRANT_SECONDS / 60:g} minutes)")
    return grant


def _well_formed(grant: Grant) -> bool:
    texts = (grant.command, grant.workspace, grant.directory, grant.mode, grant.verdict)
    numbers = (grant.created, grant.timeout)
    return (
        all(isinstance(t, str) for t in texts)
        and all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers)
        and grant.mode in ("read", "command", "workspace")
        and grant.verdict in ("allow", "ask")
    )


def _forget_expired(folder: Path, now: float) -> None:
    """Grants nobody ran (a question you declined): removed once expired, as each new one is made."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > GRANT_SECONDS:
                    os.unlink(entry.path)
