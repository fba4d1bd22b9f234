"""Firejail backend: the seed's plan, for machines with firejail but no usable bubblewrap.

Flags: `--noprofile --private-tmp --private-dev --noroot --net=none --whitelist=<workspace>` (seed),
plus a read-only root (`--read-only=/` then `--read-write=<workspace>`; without it, as root, the
home directory stays writable), all capabilities dropped, no new privileges, `--quiet`. Secret home
paths and host daemon sockets under /run are blacklisted. Costs ≈ 30 ms per spawn.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from functools import lru_cache
from pathlib import Path

from tether.core.sandbox.base import Runner, RunRequest, RunResult
from tether.core.sandbox.env import request_env
from tether.core.sandbox.process import Spawn, StartMarker, run_spawn
from tether.core.sandbox.profile import (
    ensure_confinable,
    held_in_place,
    is_within,
    masked_paths,
    pinned_protected,
    tool_dirs_in_private_tmp,
)
from tether.errors import SandboxUnavailable

_VERSION = re.compile(r"firejail version (\S+)")


@lru_cache(maxsize=1)
def find_firejail() -> tuple[str, str] | None:
    path = shutil.which("firejail")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(out.stdout)
    return path, match.group(1) if match else "unknown"


def _path_arg(path: Path) -> str:
    """Firejail splits some options on commas: refuse paths it would misread instead of guessing."""
    text = str(path)
    if "," in text or "\n" in text:
        raise SandboxUnavailable(f"firejail: cannot express the path {text!r} safely (comma or newline)")
    return text


def firejail_args(
    request: RunRequest,
    protected: tuple[Path, ...],
    binary: str,
    marker: StartMarker | None = None,
    *,
    tool_dirs: tuple[Path, ...] = (),
) -> list[str]:
    ws = _path_arg(request.workspace)
    args = [
        binary,
        "--noprofile",
        "--quiet",
        "--private-tmp",
        "--private-dev",
        "--noroot",
        "--net=none",
        "--caps.drop=all",
        "--nonewprivs",
        "--deterministic-exit-code",
        "--keep-var-tmp",  # else a workspace under /var/tmp would be hidden (it is read-only anyway)
        f"--whitelist={ws}",
        "--read-only=/",
    ]
    # The whitelist bind of the workspace is writable whatever `--read-only=/` says: say it again.
    args.append(f"--read-only={ws}" if request.read_only_workspace else f"--read-write={ws}")
    # Mount points cannot be renamed away (see profile.py). `--read-write` alone mounts nothing on a
    # path that is already writable: made read-only (a mount point), then writable again.
    for path in held_in_place(
        request.workspace, protected, request.masked, read_only=request.read_only_workspace
    ):
        args += [f"--read-only={_path_arg(path)}", f"--read-write={_path_arg(path)}"]
    args += [f"--read-only={_path_arg(p)}" for p in protected]
    for path in tool_dirs:  # PATH directories under /tmp, hidden by --private-tmp: back, read-only
        args += [f"--whitelist={_path_arg(path)}", f"--read-only={_path_arg(path)}"]
    for path in masked_paths():
        if is_within(path, Path("/tmp")) or is_within(request.workspace, path):
            continue
        args.append(f"--blacklist={_path_arg(path)}")
    args += [f"--blacklist={_path_arg(p)}" for p in request.masked]  # workspace secrets: unreadable
    # Host daemon sockets (docker, dbus, …): connect() works on a read-only mount, so hide them.
    # /run/firejail itself must stay: firejail keeps its own state there.
    try:
        entries = sorted(os.listdir("/run"))
    except OSError:
        entries = []
    args += [f"--blacklist=/run/{e}" for e in entries if e != "firejail" and "," not in e]
    if marker is not None:
        args.append(f"--keep-fd={marker.write_fd}")  # firejail closes inherited descriptors otherwise
    args.append("--")
    command = list(request.command_argv())
    # firejail waits for every process in its namespace: the wrapper reports when the command itself
    # is done, and Tether then stops the sandbox (`--deterministic-shutdown` costs ~100 ms a run)
    args += marker.shell_prefix(command, report_exit=True) if marker is not None else command
    return args


def _stop_firejail(pid: int) -> None:
    """SIGTERM lets firejail tear its PID namespace down; a SIGKILL follows from the caller."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is not None:
            return
        time.sleep(0.02)


class FirejailRunner(Runner):
    name = "firejail"

    def __init__(self) -> None:
        found = find_firejail()
        if found is None:
            raise SandboxUnavailable("firejail: not installed (apt-get install firejail)")
        self.binary, self.version = found

    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        ensure_confinable(request.workspace, request.cwd)
        env = request_env(request)
        protected = () if request.read_only_workspace else request.protected
        with pinned_protected(request.workspace, protected) as pinned, StartMarker() as marker:
            tool_dirs = tuple(tool_dirs_in_private_tmp(env["PATH"], request.workspace))
            args = firejail_args(
                request,
                pinned.paths,
                self.binary,
                marker,
                tool_dirs=tool_dirs,
            )
            spawn = Spawn(
                argv=args,
                env=env,
                cwd=request.cwd,
                backend=self.name,
                stop_tree=_stop_firejail,
                marker=marker,
            )
            result = run_spawn(spawn, request, cancel)
            if not marker.started() and not (result.timed_out or result.cancelled):
                raise SandboxUnavailable(
                    f"firejail could not set up the sandbox: {result.stderr.strip()[:500]}"
                )
        return result
