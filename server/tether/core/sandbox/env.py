"""The environment a sandboxed command sees: an allowlist, plus a git that cannot run repo programs.

Why an allowlist: the server's environment holds API keys, tokens and cloud credentials; a command
the model chose must never see them, whatever they are named. Only locale, terminal, identity and
PATH pass, plus names the *user* config lists in `sandbox.env_passthrough`.

Why a hardened git: `git status` in a repository whose config sets `core.fsmonitor`, a hook path, a
pager, a diff or filter driver would run a program of the repository's choosing. Command-line scope
config (GIT_CONFIG_COUNT/KEY/VALUE) beats the repository's, so those keys are overridden there.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

BASE_ALLOWED = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Names that are never passed, even if configured: a typo in env_passthrough must not leak a key.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|SESSION|AUTH)", re.IGNORECASE)

# Always overridden, whatever the repository says. Values chosen so the feature is off, not broken:
# an empty credential.helper resets the helper list; hooksPath=/dev/null has no hooks in it.
_FIXED_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("protocol.ext.allow", "never"),
    # A bare repository committed inside the project (its own config, its own drivers) is not used
    # by a git that merely runs in its directory.
    ("safe.bareRepository", "explicit"),
)
# Keys whose values are programs; found in the repository config and emptied (empty = no driver).
_DRIVER_KEY = re.compile(
    r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command)|merge\..+\.driver|diff\.external)$",
    re.IGNORECASE,
)

if TYPE_CHECKING:
    from tether.core.sandbox.base import RunRequest


_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process)$", re.IGNORECASE)


def sandbox_env(
    passthrough: Iterable[str] = (),
    *,
    source: Mapping[str, str] | None = None,
    workspace: Path | None = None,
    workspace_path: bool = True,
) -> dict[str, str]:
    """The full environment for a sandboxed command (allowlist + hardened git).

    `workspace_path=False` also drops PATH entries inside the workspace (see RunRequest).
    """
    src = os.environ if source is None else source
    env: dict[str, str] = {}
    wanted = set(BASE_ALLOWED) | {n for n in passthrough if not _SECRET_NAME.search(n)}
    for name, value in src.items():
        if name in wanted or name.startswith("LC_"):
            env[name] = value
    path = absolute_path_entries(env.get("PATH", DEFAULT_PATH), drop=workspace)
    if not workspace_path and workspace is not None:
        root = workspace.resolve()
        kept = (e for e in path.split(os.pathsep) if not Path(os.path.realpath(e)).is_relative_to(root))
        path = os.pathsep.join(kept)
    env["PATH"] = path or DEFAULT_PATH
    env.update(hardened_git_env(workspace))
    return env


def request_env(request: RunRequest, scratch: str | None = "/tmp") -> dict[str, str]:
    """The environment every backend gives `request`'s command: the allowlist, hardened git, and
    the request's own additions (`extra_env`, e.g. the commit identity for an approved `git commit`;
    `scratch_env`, folders in `scratch`, the command's private temporary space). No `scratch` (no
    sandbox: `/tmp` is everyone's, a folder there could be another user's) leaves them unset."""
    env = sandbox_env(
        request.env_passthrough, workspace=request.workspace, workspace_path=request.workspace_path
    )
    if scratch is not None:
        env.update({name: f"{scratch}/{folder}" for name, folder in request.scratch_env})
    env.update(dict(request.extra_env))
    return env


def absolute_path_entries(value: str, *, drop: Path | None = None) -> str:
    """PATH without empty or relative entries, and without the workspace root itself (`drop`).

    Relative entries are looked up from the command's working directory, the workspace: with `.` or
    `bin` on PATH, a file the agent wrote named `git` would run in place of the `git` the policy
    allowed. The root itself cannot be kept read-only (commands write there), so it goes too.
    """
    root = os.path.realpath(drop) if drop is not None else None
    kept = [
        entry
        for entry in value.split(os.pathsep)
        if entry.startswith("/") and (root is None or os.path.realpath(entry) != root)
    ]
    return os.pathsep.join(kept) or DEFAULT_PATH


def path_dirs_inside(workspace: Path, source: Mapping[str, str] | None = None) -> list[Path]:
    """PATH directories that lie inside the workspace (an activated `.venv/bin`, `node_modules/.bin`).

    Commands may use them, but must not write to them: a program planted there would later run in
    place of an allowed one. The bash tool keeps them read-only in the sandbox.
    """
    src = os.environ if source is None else source
    root = workspace.resolve()
    inside: list[Path] = []
    for entry in absolute_path_entries(src.get("PATH", DEFAULT_PATH)).split(os.pathsep):
        real = Path(os.path.realpath(entry))
        if real != root and real.is_relative_to(root) and real not in inside:
            inside.append(real)
    return inside


def path_tools_inside(workspace: Path, source: Mapping[str, str] | None = None) -> list[Path]:
    """What to keep unwritable for PATH dirs inside the workspace: a virtualenv whole, else the dir.

    A virtualenv's `lib/` is code too: a `.pth` file in its site-packages runs in every later
    `python` the user starts from it, so protecting `bin/` alone is not enough.
    """
    roots: list[Path] = []
    for directory in [*path_dirs_inside(workspace, source), *_own_interpreter_inside(workspace)]:
        root = directory.parent if _is_environment(directory.parent) else directory
        if root != workspace.resolve() and root not in roots:
            roots.append(root)
    return roots


def _is_environment(folder: Path) -> bool:
    """A Python (or conda, pixi) environment, whose `lib/` is as much code as its `bin/`."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def _own_interpreter_inside(workspace: Path) -> list[Path]:
    """Where the Python running Tether, and Tether itself, are loaded from, when in the workspace.

    Tether's faces start them outside any sandbox (`tether hook claude-code`, the `tether hook run`
    it hands Claude Code, `tether serve`), whether or not they are on PATH: a `.pth` file left in
    the environment's site-packages, or a line added to Tether's own code (an editable install from
    a checkout in the workspace: you develop Tether with Tether), would run there with nothing
    around it. The environment is protected whole (a venv, conda, pixi or a plain prefix); Tether's
    code as the import path entry that holds it, or its package folder if that entry is the
    workspace.
    """
    import tether

    root = workspace.resolve()
    found: list[Path] = []
    prefix = Path(sys.prefix).resolve()
    if prefix != root and prefix.is_relative_to(root):
        found.append(prefix)  # whole, whatever kind of environment: its site-packages run first
    package = Path(tether.__file__).resolve().parent
    entry = package.parent
    if entry.is_relative_to(root) and not entry.is_relative_to(prefix):
        found.append(package if entry == root else entry)
    return found


def path_links_in_workspace(
    workspace: Path, source: Mapping[str, str] | None = None
) -> list[tuple[str, Path]]:
    """PATH entries that pass through a symlink living inside the workspace, with that symlink.

    `.venv -> ~/.virtualenvs/app` with `.venv/bin` on PATH: the real directory is outside, so
    nothing is protected, yet a command may replace the link itself (`rm .venv; mkdir -p .venv/bin`)
    and put a program where the user's own shell finds it. A mount cannot pin a symlink, so the bash
    tool refuses commands that could write while such an entry is on PATH.
    """
    src = os.environ if source is None else source
    root = workspace.resolve()
    found: list[tuple[str, Path]] = []
    for entry in absolute_path_entries(src.get("PATH", DEFAULT_PATH)).split(os.pathsep):
        parts = Path(os.path.normpath(entry)).parts
        for end in range(2, len(parts) + 1):
            prefix = Path(*parts[:end])
            if prefix.is_symlink() and Path(os.path.realpath(prefix.parent)).is_relative_to(root):
                found.append((entry, prefix))
                break
    return found


def rejected_passthrough(passthrough: Iterable[str]) -> list[str]:
    """Configured names that look like secrets and are therefore never passed (shown by doctor)."""
    return [n for n in passthrough if _SECRET_NAME.search(n)]


def hardened_git_env(workspace: Path | None = None) -> dict[str, str]:
    """Environment variables making git ignore system/global config and repo-named programs.

    With `workspace`, the repository's own config is read (by git, which runs nothing to read it)
    and every filter, diff or merge driver it names is emptied too; their names are free-form, so
    they cannot be listed in advance.
    """
    pairs = list(_FIXED_GIT_CONFIG)
    if workspace is not None:
        drivers = repo_driver_keys(workspace)
        pairs.extend((key, "") for key in drivers)
        # An emptied filter the repository marks `required` would make every status/add/diff abort
        # ("clean filter failed"): not required, the file is simply taken as it is.
        filters = sorted({m.group(1) for k in drivers if (m := _FILTER_KEY.match(k))})
        pairs.extend((f"filter.{name}.required", "false") for name in filters)
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_CONFIG_COUNT": str(len(pairs)),
    }
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def add_git_config(env: dict[str, str], key: str, value: str) -> None:
    """Append one more command-line-scope git config pair to an env built by `hardened_git_env`."""
    index = int(env.get("GIT_CONFIG_COUNT", "0"))
    env[f"GIT_CONFIG_KEY_{index}"] = key
    env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_CONFIG_COUNT"] = str(index + 1)


_driver_cache: dict[tuple[str, int, int, int], list[str]] = {}


def repo_driver_keys(workspace: Path) -> list[str]:
    """Program-valued driver keys set in the repository config of `workspace` (empty if no repo).

    Cached on the identity and mtime of `.git/config` when that file has no include directives
    (with includes, other files matter and git is asked every time).
    """
    git = shutil.which("git")
    if git is None or not _inside_repo(workspace):
        return []
    key = _config_key(workspace)
    if key is not None and key in _driver_cache:
        return list(_driver_cache[key])
    keys = _read_driver_keys(git, workspace)
    if key is not None:
        if len(_driver_cache) > 256:
            _driver_cache.clear()
        _driver_cache[key] = keys
    return list(keys)


def _config_key(workspace: Path) -> tuple[str, int, int, int] | None:
    for candidate in (workspace, *workspace.parents):
        git_dir = candidate / ".git"
        if git_dir.exists():
            config = git_dir / "config"
            if git_dir.is_dir() and not config.exists():
                return (str(workspace), 0, 0, 0)  # no config (yet): nothing to neutralise
            try:
                st = config.stat()
                if b"[include" in config.read_bytes().lower():
                    return None
            except OSError:
                return None
            return (str(workspace), st.st_ino, st.st_mtime_ns, st.st_size)
    return None


def _read_driver_keys(git: str, workspace: Path) -> list[str]:
    import subprocess  # here, not at the top: `tether check` imports this module and runs no git

    env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), "GIT_CONFIG_NOSYSTEM": "1"}
    env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    try:
        proc = subprocess.run(
            [git, "-C", str(workspace), "config", "--includes", "--name-only", "--get-regexp", "."],
            capture_output=True,
            text=True,
            timeout=10,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    keys = {line.strip() for line in proc.stdout.splitlines() if _DRIVER_KEY.match(line.strip())}
    return sorted(keys)


def _inside_repo(path: Path) -> bool:
    return any((candidate / ".git").exists() for candidate in (path, *path.parents))
