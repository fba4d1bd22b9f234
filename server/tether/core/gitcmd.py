"""The one place where Tether runs git for checkpoints.

Why a chokepoint: git reads configuration, hooks, attributes and environment variables from many
places, and several of them can run arbitrary programs (fsmonitor, hooks, clean/smudge filters,
pagers) or change what bytes are stored (autocrlf, eol attributes). Every checkpoint command goes
through `Git.run`, which

* drops every inherited `GIT_*` variable (a hook or a parent git could have set `GIT_DIR`,
  `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`, ...), and sets our own: `LC_ALL=C`,
  `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_ATTR_NOSYSTEM=1`, no prompts;
* passes fixed `-c` flags (no gc, no fsmonitor, no hooks, no autocrlf, no attributes file, no
  pager, no signing) that override anything a repository-local config could say;
* names the author and committer explicitly, so the user's identity config is never needed;
* translates failures into `CheckpointError` with git's own message.

The checkpoint store is a separate git directory (see `tether.core.checkpoints.store`), so the
user's `.git/config` is never read here at all; the fixed flags are a second line of defence.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import CheckpointError

FIXED_CONFIG: tuple[str, ...] = (
    "gc.auto=0",
    "maintenance.auto=false",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.attributesFile=/dev/null",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.ignoreCase=false",
    # which names git refuses to store: `tether.core.gitnames` holds the same rule
    "core.protectNTFS=true",
    "core.protectHFS=false",
    "core.quotePath=false",
    "core.pager=cat",
    "core.splitIndex=false",
    "core.untrackedCache=false",
    "core.sparseCheckout=false",
    "core.logAllRefUpdates=false",
    "color.ui=false",
    "commit.gpgSign=false",
    "log.showSignature=false",
    "i18n.commitEncoding=UTF-8",
    "advice.addEmbeddedRepo=false",
    "advice.addIgnoredFile=false",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "status.renames=false",
    "diff.renames=false",
    "diff.ignoreSubmodules=dirty",
    "protocol.allow=never",
)

IDENTITY = {
    "GIT_AUTHOR_NAME": "Tether",
    "GIT_AUTHOR_EMAIL": "tether@localhost",
    "GIT_COMMITTER_NAME": "Tether",
    "GIT_COMMITTER_EMAIL": "tether@localhost",
}


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without any `GIT_*` variable, plus our fixed ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "LC_ALL": "C",
            "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            # glibc gives freed memory back to the system at once by default; `fast-import` and
            # bulk check-in allocate and free a buffer per object, and spent 0.6 of 0.87 s in brk()
            # on 20,000 files. Keeping 16 MiB at the top of the heap: 0.23 s.
            "MALLOC_TOP_PAD_": str(16 * 1024 * 1024),
        }
    )
    env.update(IDENTITY)
    if extra:
        env.update(extra)
    return env


# A loose object is written through a temporary file in its fan-out directory (`objects/ab/`).
# Maintenance runs beside checkpoints without their lock (Checkpoints.pack_objects), and its
# `prune` removes fan-out directories it empties: git recreates a missing one once, and a prune in
# between fails the write with this message, before the command changed the index or a ref: it
# runs again.
_LOST_FANOUT_DIR = b"unable to create temporary file: No such file or directory"
_ATTEMPTS = 3


@dataclass(frozen=True)
class GitResult:
    """Raw bytes of one git run: paths may contain newlines, so nothing is decoded here."""

    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def err_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


@dataclass(frozen=True)
class Git:
    """A git directory + work tree + private index, and the only way to run git on them."""

    git_dir: Path
    work_tree: Path | None = None
    index_file: Path | None = None
    extra_config: tuple[str, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def argv(self, args: Sequence[str]) -> list[str]:
        argv = ["git", "--no-pager", f"--git-dir={self.git_dir}"]
        if self.work_tree is not None:
            argv.append(f"--work-tree={self.work_tree}")
        for item in (*FIXED_CONFIG, *self.extra_config):
            argv += ["-c", item]
        argv += list(args)
        return argv

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = clean_env(self.extra_env)
        if self.index_file is not None:
            env["GIT_INDEX_FILE"] = str(self.index_file)
        if extra:
            env.update(extra)
        return env

    def _cwd(self) -> Path:
        cwd = self.work_tree if self.work_tree is not None else self.git_dir
        return cwd if cwd.is_dir() else cwd.parent

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = None,
    ) -> GitResult:
        """Run git and return its output; raise `CheckpointError` for any exit code not in ok_codes,
        or when it runs longer than `timeout` (a repository the agent made can hold a FIFO where git
        reads its config or index: git would wait for a writer forever)."""
        argv = self.argv(args)
        cwd = self._cwd()
        try:
            for _attempt in range(_ATTEMPTS):
                proc = subprocess.run(
                    argv,
                    input=input,
                    capture_output=True,
                    env=self.env(env),
                    cwd=cwd,
                    check=False,
                    timeout=timeout,
                )
                if proc.returncode == 0 or _LOST_FANOUT_DIR not in proc.stderr:
                    break
        except subprocess.TimeoutExpired as exc:
            raise CheckpointError(
                f"git {args[0]} in {self.git_dir} did not finish within {timeout:g} s"
            ) from exc
        except FileNotFoundError as exc:
            raise CheckpointError("git is not installed or not on PATH; checkpoints need git") from exc
        except OSError as exc:
            raise CheckpointError(f"could not run git: {exc.strerror or exc}") from exc
        result = GitResult(tuple(args), proc.returncode, proc.stdout, proc.stderr)
        if proc.returncode not in ok_codes:
            raise CheckpointError(f"git {args[0]} failed (exit {proc.returncode}): {result.err_text}")
        return result

    def feed(self, *args: str, chunks: Iterable[bytes]) -> GitResult:
        """Run git with `chunks` streamed to its standard input, for input too big to hold in memory
        (a `fast-import` of a whole work tree). If producing a chunk raises, git is killed before it
        reads an end of input, so nothing half-written is ever taken for whole."""
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    self.argv(args),
                    bufsize=1 << 20,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=self.env(),
                    cwd=self._cwd(),
                )
            except OSError as exc:
                raise CheckpointError(f"could not run git: {exc.strerror or exc}") from exc
            assert proc.stdin is not None
            try:
                for chunk in chunks:
                    proc.stdin.write(chunk)
                proc.stdin.close()
            except BrokenPipeError:
                pass  # git stopped reading: its exit code and message say why
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            returncode = proc.wait()
            err.seek(0)
            result = GitResult(tuple(args), returncode, b"", err.read())
        if returncode != 0:
            raise CheckpointError(f"git {args[0]} failed (exit {returncode}): {result.err_text}")
        return result

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-lived git (e.g. `cat-file --batch`) for streaming; the caller closes it."""
        cwd = self._cwd()
        try:
            return subprocess.Popen(
                self.argv(args),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env(),
                cwd=cwd,
            )
        except OSError as exc:
            raise CheckpointError(f"could not run git: {exc.strerror or exc}") from exc


def head_commit(repo_dir: Path) -> str | None:
    """The commit a nested repository has checked out, if any (else git cannot record it as a
    gitlink, and its files must not be taken for ours). Read through the chokepoint, so the nested
    repository's hooks and fsmonitor never run."""
    probe = Git(git_dir=repo_dir / ".git")
    try:
        result = probe.run("rev-parse", "--verify", "-q", "HEAD^{commit}", ok_codes=(0, 1, 128))
    except CheckpointError:
        return None
    return result.stdout.decode("ascii", "replace").strip() if result.returncode == 0 else None


class BlobReader:
    """`git cat-file --batch`, one object at a time, so big rollbacks stream instead of buffering."""

    def __init__(self, git: Git) -> None:
        self._proc = git.popen("cat-file", "--batch")

    def read(self, sha: str) -> bytes:
        proc = self._proc
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(sha.encode("ascii") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline()
        parts = header.split()
        if len(parts) != 3:
            raise CheckpointError(f"checkpoint object {sha} is missing or unreadable ({header!r})")
        size = int(parts[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)  # trailing newline
        if len(data) != size:
            raise CheckpointError(f"checkpoint object {sha} was truncated")
        return data

    def close(self) -> None:
        proc = self._proc
        if proc.stdin is not None:
            proc.stdin.close()
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
