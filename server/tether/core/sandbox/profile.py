"""The confinement profile every backend enforces, as data: what is masked, what stays read-only.

Kept apart from the backends so bubblewrap, firejail and landlock cannot drift: one list of secret
home paths, one way to pin protected workspace paths that do not exist yet.
"""

from __future__ import annotations

import os
import pwd
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from tether.errors import SandboxError

# Relative to a home directory: credentials and configuration a command must never read.
MASKED_HOME_ENTRIES = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker",
    ".kube",
    ".azure",
    ".pypirc",
    ".npmrc",
    ".vault-token",
    ".password-store",
    ".terraform.d",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/tether",
    ".config/git/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".local/state/tether",
    ".local/share/tether",
)


def home_dirs() -> list[Path]:
    """$HOME and the passwd home of the current user (they differ under sudo and in tests)."""
    homes: list[Path] = []
    env_home = os.environ.get("HOME")
    if env_home:
        homes.append(Path(env_home))
    with suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    unique: list[Path] = []
    for h in homes:
        if h.is_absolute() and h not in unique:
            unique.append(h)
    return unique


def masked_paths() -> list[Path]:
    """Existing secret paths to hide: the home entries above plus Tether's own config and state."""
    candidates: list[Path] = []
    for home in home_dirs():
        candidates.extend(home / entry for entry in MASKED_HOME_ENTRIES)
    candidates.append(Path(platformdirs.user_config_dir("tether")))
    candidates.append(Path(platformdirs.user_state_dir("tether")))
    tether_config = os.environ.get("TETHER_CONFIG")
    if tether_config:
        candidates.append(Path(tether_config))
    seen: list[Path] = []
    for path in candidates:
        if os.path.lexists(path) and path not in seen:
            seen.append(path)
    return seen


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_workspace(request_workspace: Path, cwd: Path) -> str | None:
    """Why this workspace cannot be confined safely, or None.

    A writable workspace that is `/`, contains a home directory (shell startup files, autostart
    entries: code that runs later, outside any sandbox) or lies inside a masked secret directory
    would turn "write the workspace" into an escape, so those are refused outright.
    """
    ws = Path(os.path.realpath(request_workspace))
    if ws == Path("/"):
        return "the workspace is the root directory"
    for home in home_dirs():
        real_home = Path(os.path.realpath(home))
        if real_home != Path("/") and is_within(real_home, ws):
            return f"the workspace {ws} contains the home directory {real_home}; use a project directory"
    for masked in masked_paths():
        if is_within(ws, Path(os.path.realpath(masked))):
            return f"the workspace {ws} is inside the protected secret path {masked}"
    if not is_within(Path(os.path.realpath(cwd)), ws):
        return f"the working directory {cwd} is outside the workspace {ws}"
    return None


def ensure_confinable(workspace: Path, cwd: Path) -> None:
    """Raise SandboxError (nothing runs) when `check_workspace` finds a reason."""
    reason = check_workspace(workspace, cwd)
    if reason is not None:
        raise SandboxError(f"refusing to run: {reason}")


@dataclass(frozen=True)
class Pinned:
    """Protected paths ready to mount read-only: all exist (some as placeholders we created)."""

    paths: tuple[Path, ...]
    placeholders: tuple[Path, ...]


_lock = threading.Lock()
_placeholders: dict[Path, tuple[int, int, int]] = {}  # path -> (dev, ino, refcount)


@contextmanager
def pinned_protected(workspace: Path, protected: tuple[Path, ...]) -> Iterator[Pinned]:
    """Make every protected path exist so it can be bound read-only, and clean up afterwards.

    A path that does not exist yet cannot be a mount point, yet creating it must fail inside the
    sandbox. So its first missing ancestor gets an empty placeholder file for the run (bound
    read-only: neither writable nor replaceable by a directory), and is removed afterwards if it is
    still the empty file we made. Placeholders are shared between concurrent runs by refcount.
    """
    paths: list[Path] = []
    made: list[Path] = []
    try:
        for raw in protected:
            target = _anchor(workspace, raw)
            if target is None:
                continue
            try:
                if _acquire_placeholder(target):
                    made.append(target)
            except OSError as exc:
                # Without the placeholder the path could be created: refuse rather than run.
                raise SandboxError(
                    f"refusing to run: cannot pin the protected path {target}: {exc.strerror}"
                ) from exc
            if target not in paths:
                paths.append(target)
        yield Pinned(tuple(paths), tuple(made))
    finally:
        for path in made:
            _release_placeholder(path)


def placeholder_excludes(workspace: Path, placeholders: tuple[Path, ...]) -> list[str]:
    """gitignore patterns (anchored at the repository top) matching exactly our placeholders."""
    top = next((d for d in (workspace, *workspace.parents) if (d / ".git").exists()), None)
    if top is None:
        return []
    patterns = []
    for path in placeholders:
        rel = path.relative_to(top).as_posix()
        # Escape gitignore metacharacters so a name is matched literally.
        escaped = "".join("\\" + ch if ch in "*?[]!#\\ " else ch for ch in rel)
        patterns.append("/" + escaped)
    return patterns


def _anchor(workspace: Path, raw: Path) -> Path | None:
    """The path to pin for `raw`: itself if it exists, else its first missing ancestor."""
    path = Path(os.path.normpath(raw if raw.is_absolute() else workspace / raw))
    if not is_within(path, workspace) or path == workspace:
        return None
    rel = path.relative_to(workspace)
    current = workspace
    for part in rel.parts:
        current = current / part
        if not os.path.lexists(current):
            return current
        if current != path and not stat.S_ISDIR(os.lstat(current).st_mode):
            return current  # a file where a directory would be: pinning it blocks the rest
    return path


def _acquire_placeholder(path: Path) -> bool:
    """Ensure `path` exists; True when it is (a reference to) a placeholder of ours."""
    with _lock:
        known = _placeholders.get(path)
        st = _lstat(path)
        if known is not None:
            if st is not None and (st.st_dev, st.st_ino) == known[:2]:
                _placeholders[path] = (known[0], known[1], known[2] + 1)
                return True
            del _placeholders[path]
        if st is not None:
            return False
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
        except FileExistsError:
            return False  # appeared meanwhile (another process): it exists, bind it as it is
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        _placeholders[path] = (st.st_dev, st.st_ino, 1)
        return True


def _release_placeholder(path: Path) -> None:
    with _lock:
        known = _placeholders.get(path)
        if known is None:
            return
        dev, ino, count = known
        if count > 1:
            _placeholders[path] = (dev, ino, count - 1)
            return
        del _placeholders[path]
        st = _lstat(path)
        # Only our untouched empty file is removed: anything else now there belongs to someone.
        if st is not None and (st.st_dev, st.st_ino) == (dev, ino) and st.st_size == 0:
            with suppress(OSError):
                os.unlink(path)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
