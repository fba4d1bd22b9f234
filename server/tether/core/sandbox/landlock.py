"""Landlock backend: in-kernel confinement for machines where namespaces are not allowed.

Landlock is allow-list only and hierarchical: a right granted on a directory holds for everything
beneath it, and nothing can be carved out below. So the plan grants rights path by path, walking
around what must stay closed — secret home paths get no read right, and protected workspace paths
get no write right (their ancestors get read only, their siblings get everything). Consequences,
documented for users: new top-level entries of the workspace cannot be created and existing ones
cannot be renamed or deleted (their contents can be edited freely); names inside a masked
directory can be listed but not read.

Network: TCP bind/connect denied with ABI ≥ 4 (no rules = no port allowed). Signals and abstract
unix sockets are scoped to the sandbox with ABI ≥ 6. UDP and named unix sockets are NOT covered by
Landlock: a machine with a docker socket should use bubblewrap or firejail.

The syscalls are made by our own stdlib-only helper (`_landlock_helper.py`), not the PyPI
`landlock` package: that package (1.0.0.dev5) has no network or scope rules (its ruleset struct
only has `handled_access_fs`), and its wrappers report failure whenever errno is non-zero, even
after a successful call. The access-right values are the kernel's (linux/landlock.h).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

from tether.core.sandbox.base import Runner, RunRequest, RunResult
from tether.core.sandbox.env import request_env
from tether.core.sandbox.process import Spawn, StartMarker, run_spawn
from tether.core.sandbox.profile import ensure_confinable, is_within, masked_paths
from tether.errors import SandboxUnavailable

HELPER = Path(__file__).with_name("_landlock_helper.py")

# Rights (linux/landlock.h); kept numeric so the helper and the plan agree without imports.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE = 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
_DEV_WRITABLE = ("/dev/null", "/dev/zero", "/dev/full")


@lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when unsupported or disabled."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        version = int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def handled_fs(abi: int) -> int:
    rights = 0
    for i in range(13):
        rights |= 1 << i
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights  # IOCTL_DEV left unhandled: isatty() on /dev/null must keep working


def file_mask(abi: int) -> int:
    return EXECUTE | WRITE_FILE | READ_FILE | (TRUNCATE if abi >= 3 else 0)


def plan_rules(
    workspace: Path,
    protected: tuple[Path, ...],
    masked: list[Path],
    tmpdir: Path,
    abi: int,
    *,
    read_only_workspace: bool = False,
    hidden: tuple[Path, ...] = (),
) -> list[tuple[str, int]]:
    """(path, rights) pairs: read everywhere but masked paths, write in workspace and tmp only.

    `hidden` (the workspace's secret files, and what its secret-named links reach, which may lie
    outside it) get no right at all; since a right on a directory holds for everything below it,
    their ancestors get only the right to list (`READ_DIR`) and every other entry beneath gets its
    own rule.
    """
    full = handled_fs(abi)
    rules: list[tuple[str, int]] = []
    secret = [p for p in hidden if is_within(p, workspace)]
    closed = [m for m in [*masked, *hidden] if m != Path("/")]
    _carve(Path("/"), READ, READ_DIR, closed, rules)
    if read_only_workspace:
        if secret:
            _carve(workspace, READ, READ_DIR, secret, rules)
        else:
            rules.append((str(workspace), READ))
        rules.append((str(tmpdir), full))
        rules += [(dev, READ_FILE | WRITE_FILE) for dev in _DEV_WRITABLE if os.path.exists(dev)]
        return rules
    ws_closed = [p if p.is_absolute() else workspace / p for p in protected]
    ws_closed = [p for p in ws_closed if is_within(p, workspace)] + secret
    if ws_closed:
        _carve(workspace, full, READ_DIR if secret else READ, ws_closed, rules)
    else:
        rules.append((str(workspace), full))
    rules.append((str(tmpdir), full))
    rules += [(dev, READ_FILE | WRITE_FILE) for dev in _DEV_WRITABLE if os.path.exists(dev)]
    return rules


def _carve(
    root: Path, grant: int, ancestor_grant: int, closed: list[Path], rules: list[tuple[str, int]]
) -> None:
    """Grant `grant` on everything under `root` except `closed` paths (and ancestors get less)."""
    if root in closed:
        return
    if not any(is_within(c, root) for c in closed):
        rules.append((str(root), grant))
        return
    rules.append((str(root), ancestor_grant))
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue  # never grant through a link: its target decides (and may be outside)
        _carve(Path(entry.path), grant, ancestor_grant, closed, rules)


_PR_SET_DUMPABLE = 4


def make_self_undumpable() -> None:
    """Keep /proc/<tether>/environ (API keys) and /proc/<tether>/fd from sandboxed commands.

    Landlock has no PID namespace, and on the kernels we tested its ptrace scoping does not stop a
    same-user process from reading another's /proc/<pid>/environ. A non-dumpable process's /proc
    files need CAP_SYS_PTRACE, which the helper drops. Side effect: no core dumps of Tether, and
    debuggers need that capability to attach.
    """
    libc = ctypes.CDLL(None, use_errno=True)  # idempotent and cheap: done before every run
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise SandboxUnavailable(
            f"landlock: cannot protect Tether's own /proc entries: {os.strerror(ctypes.get_errno())}"
        )


def _stop_helper(pid: int) -> None:
    """SIGTERM: the helper kills every descendant (it is their subreaper), then exits."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is not None:
            return
        time.sleep(0.01)


class LandlockRunner(Runner):
    name = "landlock"

    def __init__(self) -> None:
        self.abi = landlock_abi()
        if self.abi < 1:
            raise SandboxUnavailable("landlock: not supported or disabled in this kernel")

    def run(self, request: RunRequest, cancel: threading.Event | None = None) -> RunResult:
        ensure_confinable(request.workspace, request.cwd)
        make_self_undumpable()
        tmpdir = Path(tempfile.mkdtemp(prefix="tether-sandbox-"))
        try:
            env = request_env(request, scratch=str(tmpdir))  # no private /tmp here: its own folder
            env["TMPDIR"] = str(tmpdir)
            spec = {
                "abi": self.abi,
                "handled_fs": handled_fs(self.abi),
                "handled_net": (NET_BIND_TCP | NET_CONNECT_TCP) if self.abi >= 4 else 0,
                "scoped": (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if self.abi >= 6 else 0,
                "file_mask": file_mask(self.abi),
                "rules": plan_rules(
                    request.workspace,
                    request.protected,
                    masked_paths(),
                    tmpdir,
                    self.abi,
                    read_only_workspace=request.read_only_workspace,
                    hidden=request.masked,
                ),
                "argv": list(request.command_argv()),
                "cwd": str(request.cwd),
                "parent": os.getpid(),
            }
            fd = os.memfd_create("tether-landlock-spec", 0)  # inheritable only via pass_fds
            try:
                with StartMarker() as marker:
                    spec["started_fd"] = marker.write_fd
                    os.write(fd, json.dumps(spec).encode())
                    os.lseek(fd, 0, os.SEEK_SET)
                    spawn = Spawn(
                        argv=[sys.executable, "-I", "-S", str(HELPER), str(fd)],
                        env=env,
                        cwd=request.cwd,
                        backend=self.name,
                        pass_fds=(fd,),
                        stop_tree=_stop_helper,
                        marker=marker,
                    )
                    result = run_spawn(spawn, request, cancel)
                    if not marker.started() and not (result.timed_out or result.cancelled):
                        raise SandboxUnavailable(
                            f"landlock could not confine the command: {result.stderr.strip()[:500]}"
                        )
            finally:
                os.close(fd)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        return result
