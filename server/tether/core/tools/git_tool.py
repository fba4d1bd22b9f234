"""`git_operation` (seed 004): status, diff, add and commit — nothing else, and nothing the repo runs.

Why an allowlist of operations *and* flags: git has many ways to run programs or touch the network
(push, fetch, `--exec`, `-c`, `--upload-pack`, aliases). Only four operations and the listed flags
are accepted; every other argument is a path, checked by the policy and passed after `--`.

Why a hardened environment: a repository's own config (and `.gitattributes`) can name programs git
runs during *read* operations — `core.fsmonitor` on status, `diff.external` and textconv on diff,
clean filters on add/status, hooks on commit, a pager everywhere. The environment from
`tether.core.sandbox.env.hardened_git_env` overrides all of those at command-line scope (which beats
repository config), drops system and global config, and empties every filter/diff/merge driver the
repository defines. On top, `--no-pager`, `--no-ext-diff`, `--no-textconv` and `commit --no-verify`
are always passed. Tests run a hostile repository and assert no marker file appears.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.core.gitcmd import Git
from tether.core.gitlinks import gitlinks
from tether.core.policy.secrets import SecretSettings, secret_globs
from tether.core.sandbox.env import hardened_git_env
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.git_state import (
    new_submodule_entries,
    no_untracked_repository,
    put_back_entries,
    repository_lock,
)
from tether.core.tools.inputs import Prepared, resolve, validate
from tether.errors import CheckpointError, PolicyDenied, ToolInputError

OPERATIONS = ("status", "diff", "add", "commit")
FLAGS: dict[str, frozenset[str]] = {
    "status": frozenset(
        {"--short", "-s", "--porcelain", "--branch", "-b", "--untracked-files=no", "--untracked-files=all"}
    ),
    "diff": frozenset(
        {
            "--cached",
            "--staged",
            "--stat",
            "--name-only",
            "--name-status",
            "--shortstat",
            "--numstat",
            "--no-color",
        }
    ),
    "add": frozenset({"-A", "--all", "-u", "--update"}),
    "commit": frozenset({"-m", "--message"}),
}
GIT_TIMEOUT = 60.0
MAX_OUTPUT = 500_000

SPEC = ToolSpec(
    name="git_operation",
    description=(
        "Run a safe git operation in the workspace: status, diff, add or commit. args is a list of "
        "arguments (a string is split like a shell would). diff accepts --cached, --staged, --stat, "
        "--name-only, --name-status, --shortstat, --numstat, --no-color and paths; add accepts paths "
        "(or -A/-u); commit accepts only -m/--message. Hooks never run. push and anything else are "
        "refused."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": list(OPERATIONS)},
            "args": {"type": "array", "items": {"type": "string", "maxLength": 100_000}, "maxItems": 1000},
        },
        "required": ["operation"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class GitDecision:
    """A refusal in the shape the gate turns into the model's error (like the policy's Decision)."""

    reason: str
    rule: str
    suggestion: str
    allowed: tuple[str, ...] = field(default=OPERATIONS)

    def to_json(self) -> dict[str, Any]:
        return {"allowed": False, "rule": self.rule, "reason": self.reason, "suggestion": self.suggestion}

    def error_payload(self) -> dict[str, Any]:
        return {
            "ok": False,
            "error": self.reason,
            "rule": self.rule,
            "allowed_operations": list(OPERATIONS),
            "allowed": list(self.allowed),
            "suggestion": self.suggestion,
        }


def refuse(reason: str, rule: str, suggestion: str, allowed: tuple[str, ...] = OPERATIONS) -> PolicyDenied:
    return PolicyDenied(reason, decision=GitDecision(reason, rule, suggestion, allowed))


def git_env(workspace: Path) -> dict[str, str]:
    """Minimal environment + the hardened git config every git Tether runs gets."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_EDITOR": "false",
    }
    env.update(hardened_git_env(workspace))
    return env


def commit_identity(workspace: Path) -> dict[str, str]:
    """`GIT_AUTHOR_*`/`GIT_COMMITTER_*` for a commit git makes outside this tool (an approved
    `git commit` in the sandbox, where the user's global config is hidden too)."""
    git = shutil.which("git")
    return _identity(git, workspace, git_env(workspace)) if git is not None else {}


def _identity(git: str, workspace: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The user's name/email for commits: global config is hidden from git, so pass it explicitly.

    Only when the repository itself sets no identity (environment variables would override it).
    """
    extra: dict[str, str] = {}
    for key, names in (
        ("user.name", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
        ("user.email", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")),
    ):
        local = subprocess.run(
            [git, "config", "--get", key], cwd=workspace, capture_output=True, text=True, env=dict(env),
            timeout=10, check=False,
        )  # fmt: skip
        if local.stdout.strip():
            continue
        user_env = {
            "PATH": env["PATH"],
            "HOME": os.environ.get("HOME", "/nonexistent"),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        found = subprocess.run(
            [git, "config", "--global", "--get", key], capture_output=True, text=True, env=user_env,
            timeout=10, check=False, cwd="/",
        )  # fmt: skip
        value = found.stdout.strip()
        if value:
            for name in names:
                extra[name] = value
    return extra


def build_argv(operation: str, args: list[str], ctx: ToolContext) -> list[str]:
    """Check flags and paths; return git's arguments after `git` (without the binary)."""
    if operation not in OPERATIONS:
        raise refuse(
            f"git operation {operation!r} is not allowed",
            "git.operation",
            f"allowed operations: {', '.join(OPERATIONS)}",
        )
    allowed = FLAGS[operation]
    flags: list[str] = []
    paths: list[str] = []
    messages: list[str] = []
    after_dashdash = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if after_dashdash or not arg.startswith("-") or arg == "-":
            if operation == "commit":
                raise refuse(
                    f"git commit takes only -m/--message, not {arg!r}",
                    "git.commit_args",
                    "stage files with git_operation add, then commit with -m",
                    tuple(sorted(allowed)),
                )
            paths.append(arg)
            continue
        if arg == "--":
            after_dashdash = True
            continue
        if operation == "commit":
            if arg in ("-m", "--message"):
                if i >= len(args):
                    raise ToolInputError(f"git_operation: {arg} needs a message")
                messages.append(args[i])
                i += 1
                continue
            if arg.startswith("--message="):
                messages.append(arg.split("=", 1)[1])
                continue
            if arg.startswith("-m") and len(arg) > 2:
                messages.append(arg[2:])
                continue
        if arg not in allowed:
            raise refuse(
                f"git {operation} flag {arg!r} is not allowed",
                f"git.{operation}_flag",
                f"allowed flags for {operation}: {', '.join(sorted(allowed)) or 'none'}",
                tuple(sorted(allowed)),
            )
        flags.append(arg)

    rel_paths = []
    for raw in paths:
        target = resolve(
            raw, ctx.workspace, write=operation == "add", settings=ctx.config.policy, tool="git_operation"
        )
        rel_paths.append(target.rel)

    if operation == "status":
        return ["--no-pager", "--no-optional-locks", "status", *flags, "--", *rel_paths]
    if operation == "diff":
        return [
            "--no-pager",
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            *flags,
            "--",
            *(rel_paths or ["."]),
            *secret_exclusions(ctx.config.policy.secrets),
        ]
    if operation == "add":
        if not rel_paths and not flags:
            raise ToolInputError("git_operation: add needs paths (or -A / -u)")
        # Each name literally (the policy checked it: `*.env` must not become a pattern, nor `:(top)x`
        # a file outside a workspace below the repository's top), and the secret files excluded, so
        # that neither `-A` nor a folder ever stages `.env`: git would then print it to any reader.
        literal = [f":(literal){p}" for p in rel_paths or ["."]]
        return ["--no-pager", "add", *flags, "--", *literal, *secret_exclusions(ctx.config.policy.secrets)]
    if not messages or not any(m.strip() for m in messages):
        raise ToolInputError('git_operation: commit needs a message: args ["-m", "message"]')
    argv = ["--no-pager", "commit", "--no-verify", "--no-gpg-sign"]
    for message in messages:
        argv += ["-m", message]
    return argv


def _before_add(
    git: str, workspace: Path, env: Mapping[str, str], *, update_only: bool
) -> tuple[tuple[Path, Path, frozenset[str]] | None, str | None]:
    """The repository (its top, its git dir — a linked worktree's own — and the submodules its
    index records now), and why an add must not run: a repository lies untracked in the work tree,
    and `git add` would record it as a submodule, whose config the user's `git status` obeys (the
    bash tool refuses the same, rule `git.untracked_repository`). `-u` adds no new path, so it is
    not refused; what any add records is checked after (`_no_new_submodule`)."""
    found = subprocess.run(
        [git, "rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=workspace, capture_output=True,
        text=True, env=dict(env), timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    lines = found.stdout.splitlines()
    if found.returncode != 0 or len(lines) != 2:
        return None, "Error: refused: the repository could not be found to check it for repositories"
    top, git_dir = Path(lines[0]), Path(lines[1])
    try:
        recorded = frozenset(gitlinks(top, git_dir))
        if not update_only:
            no_untracked_repository(top)
    except CheckpointError as exc:
        return None, f"Error: refused: the repository's index could not be read ({exc})"
    except PolicyDenied as exc:
        suggestion = exc.decision.suggestion if exc.decision is not None else ""
        return None, f"Error: refused (git.untracked_repository): {exc}. Suggestion: {suggestion}"
    return (top, git_dir, recorded), None


def _no_new_submodule(top: Path, git_dir: Path, before: frozenset[str]) -> str | None:
    """Put back, as the last commit has it, any path the add just recorded as a submodule (a
    tracked file the agent replaced by a repository, staged by `add -u`), and say so; None when
    there is none. Fails loudly when it cannot be undone. The same undo as after an approved git
    command in the sandbox (`git_state.IndexWatch`)."""
    try:
        new = new_submodule_entries(top, git_dir, before)
        put_back_entries(Git(git_dir=git_dir, work_tree=top), new)
    except CheckpointError as exc:
        return (
            f"Error: git add may have recorded a repository as a submodule, whose config your own "
            f"`git status` would obey, and Tether could not check or undo it ({exc}): run `git ls-files "
            "--stage` and `git rm --cached` any `160000` entry you did not add, before running git there"
        )
    if not new:
        return None
    return (
        f"Error: refused (git.untracked_repository): git add recorded {', '.join(new)} as a submodule — "
        "a repository whose config your own `git status` would obey; its entry is back as the last "
        "commit has it. Move the repository out of the workspace, or add it yourself"
    )


def secret_exclusions(settings: SecretSettings) -> list[str]:
    """Pathspecs that keep secret files out of a diff and an add (docs/secrets.md): a tracked `.env`
    shows as changed in `status`, but its lines never reach the model, and no add stages one."""
    return [f":(top,exclude,icase,glob){glob}" for glob in secret_globs(settings)]


class GitOperationTool:
    spec = SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        raw = dict(args) if isinstance(args, Mapping) else args
        operation = raw.get("operation") if isinstance(raw, dict) else None
        if isinstance(operation, str) and operation not in OPERATIONS:
            build_argv(operation, [], ctx)  # raises the refusal with the allowed list
        if isinstance(raw, dict) and isinstance(raw.get("args"), str):
            try:
                raw["args"] = shlex.split(raw["args"])
            except ValueError as exc:
                raise ToolInputError(f"git_operation: cannot split args: {exc}") from exc
        a = validate(self.spec, raw)
        operation = a["operation"]
        git_args = build_argv(operation, a.get("args", []), ctx)
        mutating = operation in ("add", "commit")
        workspace = Path(os.path.realpath(ctx.workspace))

        def execute() -> ToolOutcome:
            git = shutil.which("git")
            if git is None:
                raise ToolInputError("Error: git is not installed")
            env = git_env(workspace)
            inside = subprocess.run(
                [git, "rev-parse", "--is-inside-work-tree"], cwd=workspace, capture_output=True, text=True,
                env=env, timeout=GIT_TIMEOUT, check=False,
            )  # fmt: skip
            if inside.stdout.strip() != "true":
                raise ToolInputError("Error: the workspace is not inside a git repository")
            if operation == "commit":
                env.update(_identity(git, workspace, env))
            with contextlib.ExitStack() as stack:
                # add and commit write the index: not while an approved git command has a writable
                # `.git` (its undo puts back the index it saved, and this add would be lost with it)
                if mutating and not stack.enter_context(
                    repository_lock(workspace, alone=False, cancel=ctx.cancel)
                ):
                    text = f"Error: git {operation} cancelled before it started"
                    return ToolOutcome(ok=False, result={"operation": operation}, text=text, error=text)
                repository: tuple[Path, Path, frozenset[str]] | None = None
                if operation == "add":
                    update_only = bool({"-u", "--update"} & set(git_args))
                    repository, refused = _before_add(git, workspace, env, update_only=update_only)
                    if refused is not None:
                        return ToolOutcome(
                            ok=False, result={"operation": operation}, text=refused, error=refused
                        )
                try:
                    proc = subprocess.run(
                        [git, *git_args], cwd=workspace, capture_output=True, env=env,
                        timeout=GIT_TIMEOUT, check=False, stdin=subprocess.DEVNULL,
                    )  # fmt: skip
                except subprocess.TimeoutExpired as exc:
                    timed_out = f"Error: git {operation} timed out after {GIT_TIMEOUT:.0f}s"
                    raise ToolInputError(timed_out) from exc
                if repository is not None:
                    undone = _no_new_submodule(*repository)
                    if undone is not None:
                        return ToolOutcome(
                            ok=False, result={"operation": operation}, text=undone, error=undone
                        )
            stdout = proc.stdout[:MAX_OUTPUT].decode("utf-8", "replace")
            stderr = proc.stderr[:MAX_OUTPUT].decode("utf-8", "replace")
            result = {
                "operation": operation,
                "argv": ["git", *git_args],
                "stdout": stdout,
                "stderr": stderr,
                "exit_code": proc.returncode,
                "truncated": len(proc.stdout) > MAX_OUTPUT or len(proc.stderr) > MAX_OUTPUT,
            }
            ok = proc.returncode == 0
            text = stdout if ok else (stdout + stderr).strip() or f"git {operation} failed"
            if ok and not text.strip():
                text = "(no output)"
            if not ok:
                text = f"Error: git {operation} exited with {proc.returncode}\n{text}"
                return ToolOutcome(ok=False, result=result, text=text, error=text)
            return ToolOutcome(ok=True, result=result, text=text)

        def dry_run() -> ToolOutcome:
            shown = shlex.join(["git", *git_args])
            perm = "write" if mutating else "read"
            text = f"git_operation would run: {shown}\n(dry-run: use --tool={perm} to apply)"
            return ToolOutcome(ok=True, result={"would_run": ["git", *git_args]}, text=text)

        return Prepared(
            "write" if mutating else "read",
            mutating,
            f"git_operation({operation})",
            execute,
            dry_run,
        )
