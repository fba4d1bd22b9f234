"""Programs refused by name, with the reason and what to do instead (seed 002's blocked list).

A name here is only a better message: a program missing from every table is refused anyway. Only
a *user* rule (`command_whitelist` / `[policy] allow` in the user config) can allow one of these,
and only for the argv prefix it names.
"""

from __future__ import annotations

_FILES = (
    "creates, moves or deletes files, which command mode leaves to the edit tools",
    "use the write_file/edit_file tools, or workspace mode (`--permissions workspace`: any program "
    "runs in the sandbox, after a checkpoint)",
)
_NET = ("reaches the network", "network access is not available to the agent")
_SHELL = (
    "runs arbitrary code through a shell or interpreter",
    "run a specific allowed command instead of a shell or an inline script",
)
_WRAP = (
    "runs another command, which would hide it from the policy",
    "run the command directly; the sandbox already applies a timeout",
)
_PRIV = ("changes privileges", "privilege changes are never available to the agent")
_PAGER = (
    "is interactive and can run shell commands",
    "use the read_file tool, or `cat`/`head`/`sed -n 'N,Mp'` to read a file",
)
_SYSTEM = ("changes the system or other processes", "ask the user to do this")

BLOCKED: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        [
            "rm",
            "rmdir",
            "mv",
            "cp",
            "ln",
            "chmod",
            "chown",
            "chgrp",
            "tee",
            "dd",
            "truncate",
            "shred",
            "install",
            "mkfifo",
            "mknod",
            "unlink",
            "touch",
            "mkdir",
            "patch",
        ],
        _FILES,
    ),
    **dict.fromkeys(
        [
            "curl",
            "wget",
            "nc",
            "ncat",
            "netcat",
            "socat",
            "ssh",
            "scp",
            "sftp",
            "rsync",
            "ftp",
            "telnet",
            "ping",
            "dig",
            "nslookup",
        ],
        _NET,
    ),
    **dict.fromkeys(
        [
            "sh",
            "bash",
            "zsh",
            "dash",
            "ksh",
            "fish",
            "csh",
            "tcsh",
            "busybox",
            "perl",
            "ruby",
            "php",
            "lua",
            "awk",
            "gawk",
            "mawk",
            "nawk",
            "tclsh",
            "expect",
            "osascript",
            "jshell",
            "irb",
        ],
        _SHELL,
    ),
    **dict.fromkeys(
        [
            "env",
            "xargs",
            "timeout",
            "nohup",
            "nice",
            "ionice",
            "stdbuf",
            "setsid",
            "exec",
            "eval",
            "source",
            ".",
            "command",
            "builtin",
            "time",
            "watch",
            "strace",
            "ltrace",
            "gdb",
            "script",
            "unbuffer",
            "parallel",
            "flock",
            "chroot",
            "unshare",
            "nsenter",
            "firejail",
            "bwrap",
        ],
        _WRAP,
    ),
    **dict.fromkeys(["sudo", "su", "doas", "pkexec", "runuser"], _PRIV),
    **dict.fromkeys(
        [
            "less",
            "more",
            "most",
            "pg",
            "vi",
            "vim",
            "nvim",
            "view",
            "nano",
            "emacs",
            "ed",
            "ex",
            "man",
            "info",
        ],
        _PAGER,
    ),
    **dict.fromkeys(
        [
            "kill",
            "pkill",
            "killall",
            "shutdown",
            "reboot",
            "halt",
            "poweroff",
            "crontab",
            "at",
            "systemctl",
            "service",
            "mount",
            "umount",
            "docker",
            "podman",
            "kubectl",
            "open",
            "xdg-open",
        ],
        _SYSTEM,
    ),
}

NEVER_IN_WORKSPACE: frozenset[str] = frozenset(
    [name for name, (why, _) in BLOCKED.items() if why in (_NET[0], _PRIV[0], _SYSTEM[0])]
    + ["chroot", "unshare", "nsenter", "firejail", "bwrap", "eval", "exec", "source", "."]
)
"""Refused even in workspace mode, where any other program runs in the sandbox: the network (no
allowlist yet), privilege, the system and other processes, leaving the sandbox, and the shell
builtins that run text nobody reviewed."""
