"""Landlock helper, run as `python -I -S _landlock_helper.py FD`: confine self, run, reap all.

A separate process (not preexec_fn) because it must outlive the exec: it is the child subreaper
that finds every descendant the command left behind — including ones that called setsid() to leave
the process group — and kills them when the command returns, is timed out (SIGTERM) or cancelled.
Stdlib only: it runs with -I -S for a fast start and must not import Tether.

Spec (JSON on FD): {"abi", "handled_fs", "handled_net", "scoped", "file_mask",
"rules": [[path, rights], ...], "argv": [...], "cwd": str}.
"""

import contextlib
import ctypes
import errno
import json
import os
import signal
import sys
from typing import Any, NoReturn

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
RULE_PATH_BENEATH = 1


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel struct is __attribute__((packed))
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def fail(message: str) -> NoReturn:
    os.write(2, f"tether-landlock: {message}\n".encode())
    os._exit(125)


def check(result: int, what: str) -> int:
    if result < 0:
        fail(f"{what} failed: {os.strerror(ctypes.get_errno())}")
    return result


def confine(spec: dict[str, Any]) -> None:
    abi = spec["abi"]
    attr = RulesetAttr(spec["handled_fs"], spec["handled_net"], spec["scoped"])
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
        "landlock_create_ruleset",
    )
    for path, granted in spec["rules"]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # vanished since the plan was made: nothing to grant
        try:
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            rights = granted if is_dir else granted & spec["file_mask"]
            beneath = PathBeneathAttr(rights, fd)
            check(
                libc.syscall(
                    SYS_ADD_RULE,
                    ctypes.c_int(ruleset),
                    ctypes.c_int(RULE_PATH_BENEATH),
                    ctypes.byref(beneath),
                    ctypes.c_uint32(0),
                ),
                f"landlock_add_rule({path})",
            )
        finally:
            os.close(fd)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    drop_capabilities()
    check(
        libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self"
    )
    os.close(ruleset)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Landlock does not stop a root process from loading a kernel module or changing sysctls.

    So, as bwrap and firejail do, every capability goes: bounding set, ambient set, then the
    effective/permitted/inheritable sets (with NO_NEW_PRIVS, nothing can bring them back).
    """
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the kernel's last capability
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def children() -> set[int]:
    found: set[int] = set()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children") as fh:
                found.update(int(p) for p in fh.read().split())
        except OSError:
            pass
    return found


def reap_all() -> None:
    """Kill every remaining descendant: orphans re-parent to us (subreaper) until none are left."""
    while True:
        pids = children()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, _ = os.waitpid(-1, 0 if pids else os.WNOHANG)
        except ChildProcessError:
            return
        if not pids and pid == 0:
            return


def on_term(signum: int, frame: object) -> None:
    reap_all()
    os._exit(128 + signal.SIGKILL)


def main() -> None:
    with os.fdopen(int(sys.argv[1]), "rb") as fh:
        spec = json.loads(fh.read())
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != spec["parent"]:
        os._exit(125)  # Tether died before we could arm the death signal
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(CHILD_SUBREAPER)")
    confine(spec)
    # Confinement is in place: tell Tether, so a later failure is the command's, not the sandbox's.
    os.write(spec["started_fd"], b"x")
    os.close(spec["started_fd"])
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.chdir(spec["cwd"])
            os.execvp(spec["argv"][0], spec["argv"])
        except OSError as exc:
            os.write(2, f"{spec['argv'][0]}: {exc.strerror}\n".encode())
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    _, status = os.waitpid(pid, 0)
    reap_all()
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
