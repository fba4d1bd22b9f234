"""Helpers for the checkpoint, rollback and CLI tests: real git repositories, whole-tree fingerprints,
and `tether` run as a user runs it."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    proc = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def init_repo(path: Path, files: dict[str, str] | None = None, *, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for rel, content in (files or {}).items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    if commit and files:
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "initial")
    return path


def snapshot_files(repo: Path, commit: str) -> list[str]:
    """The paths a checkpoint of `repo` holds (files, symlinks, gitlinks), as `git ls-tree -r` names them."""
    store = repo / ".git" / "tether" / "store"
    return [
        p
        for p in git(repo, f"--git-dir={store}", "ls-tree", "-r", "-z", "--name-only", commit).split("\0")
        if p
    ]


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def listing(
    root: Path, *, skip_suffixes: tuple[str, ...] = (), skip_dirs: tuple[str, ...] = ()
) -> dict[str, tuple[str, str]]:
    """{path: (git mode, blob sha)} of every file and symlink, like `git ls-tree -r` sees them.

    `.git` (anywhere) and the top-level `.tether/` are left out; nested repositories are
    listed by their files (their `.git` is compared separately)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [
            d
            for d in dirnames
            if d != ".git"
            and not (rel_dir == "." and d == ".tether")
            and os.path.normpath(os.path.join(rel_dir, d)) not in skip_dirs
        ]
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                dirnames.remove(name)
                filenames.append(name)
        for name in filenames:
            if name == ".git":
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel.endswith(skip_suffixes) if skip_suffixes else False:
                continue
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("120000", blob_sha(os.fsencode(os.readlink(full))))
            else:
                with open(full, "rb") as fh:
                    data = fh.read()
                mode = "100755" if st.st_mode & 0o100 else "100644"
                out[rel] = (mode, blob_sha(data))
    return out


def fingerprint(files: dict[str, tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        mode, sha = files[path]
        h.update(os.fsencode(path) + b"\0" + mode.encode() + b"\0" + sha.encode() + b"\n")
    return h.hexdigest()


def dir_digest(path: Path) -> str:
    """Hash of every file (name, mode, bytes) under path: used for nested `.git` directories."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            h.update(os.fsencode(os.path.relpath(full, path)) + b"\0" + oct(st.st_mode).encode())
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


def user_git_state(repo: Path) -> dict[str, object]:
    """Everything of the user's git state a checkpoint or rollback must never change.

    Read with commands that never write the index (no `git status`)."""
    gd = repo / ".git"
    return {
        "HEAD_file": (gd / "HEAD").read_bytes(),
        "HEAD": git(repo, "rev-parse", "HEAD", check=False),
        "index": (gd / "index").read_bytes() if (gd / "index").exists() else None,
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "stash": git(repo, "stash", "list"),
        "config": (gd / "config").read_bytes(),
        "reflog": git(repo, "reflog", "--all", check=False),
        "logs": dir_digest(gd / "logs") if (gd / "logs").exists() else None,
        "hooks": dir_digest(gd / "hooks") if (gd / "hooks").exists() else None,
        "packed": (gd / "packed-refs").read_bytes() if (gd / "packed-refs").exists() else None,
    }


def tether(ws: Path, *args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`tether ARGS --workspace WS` as a process, with its own config/state dirs and no API key.

    The user config is `home/config/tether/config.toml`, the managed one `home/managed.toml`.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "ANTHROPIC_"))}
    env.update({"XDG_STATE_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config")})
    env["TETHER_MANAGED_CONFIG"] = str(home / "managed.toml")  # the machine's /etc/tether stays out
    return subprocess.run(
        [sys.executable, "-m", "tether", *args, "--workspace", str(ws)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def swap_for_a_fifo_once_looked_at(name: str, looker: str) -> Callable[..., os.stat_result]:
    """An `os.lstat` that, when the function `looker` looks at the file `name`, answers as the file
    was and then puts a FIFO in its place: the race between a look at a file and its read, made
    certain (install it with `monkeypatch.setattr(os, "lstat", ...)`)."""
    lstat = os.lstat

    def look_then_swap(path: str | bytes, *args: Any, **kwargs: Any) -> os.stat_result:
        seen = lstat(path, *args, **kwargs)
        if sys._getframe(1).f_code.co_name == looker and os.fsdecode(path).endswith(f"/{name}"):
            os.unlink(path)
            os.mkfifo(path)
        return seen

    return look_then_swap


def wait_or_feed_the_fifo(worker: threading.Thread, fifo: Path, what: str) -> None:
    """Join `worker`; if it is still stuck after 30 s (not a speed limit: a snapshot of two files
    waiting on a FIFO never returns by itself), let a writer come and go so it ends, and fail."""
    worker.join(30)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join()
        raise AssertionError(f"{what} waited for a writer on a FIFO that replaced a file")
