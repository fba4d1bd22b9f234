"""The confinement profile every backend enforces, as data: what is masked, what stays read-only.

Kept apart from the backends so bubblewrap, firejail and landlock cannot drift: one list of secret
home paths, one way to pin protected workspace paths that do not exist yet.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from tether.core.lockfiles import lock_file
from tether.core.placeholders import (
    PLACEHOLDER_XATTR,
    forget_placeholders,
    is_marked_placeholder,
    record_placeholders,
    recorded_placeholders,
)
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


def tool_dirs_in_private_tmp(path_value: str, workspace: Path) -> list[Path]:
    """PATH directories that the sandbox's private /tmp would hide, to bind back read-only.

    A virtualenv under /tmp (a CI checkout, a scratch clone) must keep working inside the sandbox:
    otherwise `python3` there silently becomes another interpreter without the project's packages.
    For a virtualenv's `bin/` the whole environment is bound (its `lib/` holds the packages).
    """
    tmp = Path("/tmp")
    found: list[Path] = []
    for entry in path_value.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        real = Path(os.path.realpath(entry))
        if not is_within(real, tmp) or real == tmp or not real.is_dir():
            continue
        root = real.parent if (real.parent / "pyvenv.cfg").is_file() else real
        if is_within(root, workspace) or is_within(workspace, root) or root in found:
            continue  # the workspace bind covers it (or it would cover the workspace)
        found.append(root)
    return found


def parents_to_pin(workspace: Path, protected: tuple[Path, ...]) -> list[Path]:
    """Directories between the workspace and each protected path, shallowest first.

    A read-only mount guards a place, not a name: `mv node_modules x` carries the mount of
    `node_modules/.bin` along, and a fresh `node_modules/.bin` is then free to write. A mount point
    cannot be renamed or removed (EBUSY), so the namespaced backends mount each of these directories
    on itself (still writable), before the protected paths: a later bind would cover their mounts.
    """
    found: set[Path] = set()
    for path in protected:
        if is_within(path, workspace):
            found.update(p for p in path.parents if p != workspace and is_within(p, workspace))
    return sorted(found, key=lambda p: (len(p.parts), p))


def held_in_place(
    workspace: Path, protected: tuple[Path, ...], masked: tuple[Path, ...], *, read_only: bool
) -> list[Path]:
    """`parents_to_pin` of the protected paths and of the hidden secrets: a mask is a mount too, and
    `mv .docker cfg` would carry `.docker/config.json`'s along; renamed, the file would no longer be
    a secret by its name for the next call. None for a read-only workspace: nothing can be renamed
    there, and a pin is a writable mount."""
    return [] if read_only else parents_to_pin(workspace, (*protected, *masked))


def is_within(path: Path, root: Path) -> bool:
    """`path == root or root in path.parents`, by comparing parts: the sandbox checks each of its
    55 protected paths against others, and pathlib's `parents` compares Path objects one by one
    (a tenth of a protected run's own time went there)."""
    return path.parts[: len(root.parts)] == root.parts and path.is_absolute() == root.is_absolute()


def check_workspace(request_workspace: Path, cwd: Path) -> str | None:
    """Why this workspace cannot be confined safely, or None.

    A writable workspace that is `/`, contains a home directory (shell startup files, autostart
    entries: code that runs later, outside any sandbox) or lies inside a masked secret directory
    would turn "write the workspace" into an escape, so those are refused outright. So is a
    workspace given as a relative path or through a symbolic link: the protected paths are found
    under the resolved root, and the backends bind the path as given, so none would be pinned.
    """
    ws = request_workspace
    if os.path.realpath(ws) != str(ws):  # a relative path resolves to an absolute one: refused too
        return (
            f"the workspace {ws} is not an absolute path with its symbolic links resolved, "
            "so its protected paths could not be pinned (a bug in the caller: please report it)"
        )
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


def _lock_path(workspace: Path) -> Path:
    """One lock file per workspace, shared by every Tether process of this user."""
    try:
        return lock_file(str(workspace))
    except OSError as exc:
        raise SandboxError("refusing to run: no writable directory for the sandbox's workspace lock") from exc


@contextmanager
def pinned_protected(workspace: Path, protected: tuple[Path, ...]) -> Iterator[Pinned]:
    """Make every protected path exist so it can be bound read-only, and clean up afterwards.

    A path that does not exist yet cannot be a mount point, yet creating it must fail inside the
    sandbox. So its first missing ancestor gets an empty placeholder file for the run (bound
    read-only: neither writable nor replaceable by a directory), marked with an xattr.

    Runs in the same workspace — threads or other Tether processes — share placeholders: each run
    holds a shared flock on the workspace's lock file, and only a run that can then take the lock
    exclusively (nobody else is running) removes them. Removing a placeholder another sandbox still
    uses would detach that sandbox's mount. A crash leaves marked placeholders behind; the next run
    adopts and removes them. Only empty, marked (or self-made, when the filesystem has no xattrs)
    regular files are ever removed, so a user's file is never deleted.
    """
    lock_fd = os.open(_lock_path(workspace), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    made: dict[Path, tuple[int, int]] = {}  # created by this run: (dev, ino)
    paths: dict[Path, None] = {}  # in order, each once
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_SH)
        for raw in protected:
            target = placeholder_anchor(workspace, raw)
            if target is None or target in paths:
                continue
            if os.path.islink(target):  # (False on errors: pinning below then reports them)
                # A mount lands on the link's target and cannot keep the link itself in place: a
                # command could swap `.envrc -> ~/x` for a file of its own. Refuse, and say how out.
                raise SandboxError(
                    f"refusing to run a command that can write: the protected path "
                    f"{target.relative_to(workspace)} is a symbolic link (to {os.readlink(target)}), which "
                    "the sandbox cannot keep in place. Replace the link with the file or directory "
                    "itself; read-only commands still run."
                )
            paths[target] = None
        missing = [p for p in paths if not os.path.lexists(p)]
        absent = set(missing)
        adopted = [p for p in paths if p not in absent and _is_placeholder(p, made)]
        if missing or adopted:
            try:  # before any is made: a checkpoint taken meanwhile already leaves them out
                record_placeholders(workspace, [*missing, *adopted])
            except OSError as exc:
                raise SandboxError(f"refusing to run: cannot list the sandbox's placeholders: {exc}") from exc
        for target in missing:
            try:
                created = _create_placeholder(target)
            except OSError as exc:
                # Without the placeholder the path could be created: refuse rather than run.
                raise SandboxError(
                    f"refusing to run: cannot pin the protected path {target}: {exc.strerror}"
                ) from exc
            if created is not None:
                made[target] = created
        placeholders = tuple(p for p in paths if _is_placeholder(p, made))
        yield Pinned(tuple(paths), placeholders)
    finally:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass  # another run still uses the placeholders: the last one out removes them
        else:
            # ours, and every other run's (a read-only run, with none of its own, may be the last
            # out; a crashed run left its own behind)
            listed = {Path(p) for p in recorded_placeholders(workspace)}
            for path in sorted(listed.union(paths)):
                if _is_placeholder(path, made):
                    with suppress(OSError):
                        os.unlink(path)
            forget_placeholders(workspace)
        finally:
            os.close(lock_fd)  # also releases the flock


def _create_placeholder(path: Path) -> tuple[int, int] | None:
    """Create the empty placeholder; (dev, ino) when we made it, None when `path` already exists.

    Its path is in the registry before it exists, so a checkpoint taken meanwhile leaves it out
    even before it is marked (checkpoints skip a listed path while it is an empty file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return None
    try:
        with suppress(OSError):  # e.g. a filesystem without user xattrs: then only we remove it
            os.setxattr(fd, PLACEHOLDER_XATTR, b"1")  # needs write permission: before the chmod
        os.fchmod(fd, 0o444)
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def _is_placeholder(path: Path, made: dict[Path, tuple[int, int]]) -> bool:
    """An empty regular file that this very run created, or that is marked as ours."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    made_here = made.get(path) == (st.st_dev, st.st_ino)
    if made_here and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        return True
    return is_marked_placeholder(path, st)


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


def placeholder_anchor(workspace: Path, raw: Path) -> Path | None:
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
