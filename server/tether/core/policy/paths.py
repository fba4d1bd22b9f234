"""Path rules: inside the workspace after resolving everything, and never into protected files.

Why realpath and component comparison: `..`, absolute paths, `~` and symlinks all move a path
somewhere else, and string prefixes lie (`/ws-evil` starts with `/ws`). We resolve the path the
way the kernel will (symlinks followed) and compare path components.

Protected files are those that make a *later*, allowed command run code: git hooks and config,
`.gitattributes` (textconv/filter drivers), editor and agent configuration, direnv's `.envrc`,
package-manager rc files, pre-commit config, shell rc files and `node_modules/.bin`. They may be
read, never written. Names are matched in any directory and case-insensitively (case-insensitive
file systems exist).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tether.core.policy.secrets import how_to_allow, secret_pattern
from tether.core.policy.settings import PolicySettings

PROTECTED_DIRS: tuple[str, ...] = (
    ".git",
    ".tether",
    ".vscode",
    ".idea",
    ".claude",
    ".cursor",
    ".husky",
    ".githooks",
    ".cargo",
    ".direnv",
    ".zed",
    ".devcontainer",
)
TOOLCHAIN_SELECTORS: tuple[str, ...] = (
    "rust-toolchain",
    "rust-toolchain.toml",
    ".python-version",
    ".tool-versions",
    ".node-version",
    ".nvmrc",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".rtx.toml",
)
"""Files that pick *which binary* runs even for `cargo --version` or `python --version`
(rust-toolchain.toml `path = …`, asdf/mise `path:` and `ref:` versions, mise's env scripts)."""

PROTECTED_NAMES: tuple[str, ...] = (
    ".gitattributes",
    ".gitmodules",
    ".gitconfig",
    ".mcp.json",
    ".envrc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "bunfig.toml",
    ".bunfig.toml",
    ".pypirc",
    "pip.conf",
    "pip.ini",
    ".condarc",
    ".pre-commit-config.yaml",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".inputrc",
    *TOOLCHAIN_SELECTORS,
    ".lfsconfig",
)
_DIRS = frozenset(PROTECTED_DIRS)
_NAMES = frozenset(PROTECTED_NAMES)


@dataclass(frozen=True)
class PathCheck:
    """`path` is the resolved absolute path when `ok`; otherwise `rule` and `reason` say why not."""

    ok: bool
    path: Path | None
    rule: str
    reason: str


@lru_cache(maxsize=64)
def real_workspace(workspace: str) -> str:
    """The workspace root with its symbolic links resolved, once per process: every path of every
    command is resolved against it, and resolving the root again costs a system call per
    component of its path."""
    return os.path.realpath(workspace)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def relative_inside(path: str, root: str) -> str:
    """`os.path.relpath(path, root)` for a normalised `path` already known to be inside `root`.

    Why not relpath: it normalises and splits both paths again, and the decision loop calls this for
    every argument (a fifth of a decision's time went there).
    """
    return "." if path == root else path[len(root.rstrip("/")) + 1 :]


def is_protected(relpath: str, settings: PolicySettings) -> bool:
    """True when the workspace-relative `relpath` must never be written."""
    parts = [p for p in relpath.replace("\\", "/").split("/") if p not in ("", ".")]
    lowered = [p.lower() for p in parts]
    if any(p in _DIRS for p in lowered):
        return True
    if lowered and lowered[-1] in _NAMES:
        return True
    if any(a == "node_modules" and b == ".bin" for a, b in itertools.pairwise(lowered)):
        return True
    if lowered and _is_mise_config(lowered):
        return True
    for pattern in settings.extra_protected:
        pat = pattern.strip().strip("/")
        if not pat:
            continue
        for k in range(1, len(parts) + 1):
            if fnmatch.fnmatchcase("/".join(parts[:k]), pat):
                return True
    return False


def _is_mise_config(lowered: list[str]) -> bool:
    """A file mise may load beyond the names above: `mise.<env>.toml`, `.config/mise*.toml`, and any
    TOML under a `mise/`, `.mise/` or `.config/mise/` folder (`config.toml`, `conf.d/*.toml`, …).
    mise's `[env]` and hooks run programs in every shell that enters the folder."""
    name, parents = lowered[-1], lowered[:-1]
    if _MISE_ENV.match(name):
        return True
    if parents and parents[-1] == ".config" and _MISE_IN_CONFIG.match(name):
        return True
    return name.endswith(".toml") and any(p in ("mise", ".mise") for p in parents)


MISE_AT_ROOT = ("mise", ".mise")
MISE_IN_CONFIG_AT_ROOT = (".config/mise", ".config/mise.toml", ".config/mise.local.toml")
"""The mise configs `_is_mise_config` protects, at the workspace's top, for the sandbox's list; the
`.config` ones only when `.config` is a folder already: a missing path is pinned by a read-only
placeholder at its first missing parent, and a placeholder `.config` would stop every program that
keeps its settings there."""


def protected_write_paths(workspace: Path, settings: PolicySettings) -> list[Path]:
    """Absolute paths (existing or not) that the sandbox should keep read-only.

    Only workspace-level entries: the policy also refuses protected *names* in subdirectories,
    which a sandbox cannot list up front without walking the tree.
    """
    root = Path(real_workspace(str(workspace)))
    paths = [root / d for d in PROTECTED_DIRS] + [root / n for n in PROTECTED_NAMES]
    paths.append(root / "node_modules" / ".bin")
    paths += [root / rel for rel in MISE_AT_ROOT]
    if (root / ".config").is_dir() and not (root / ".config").is_symlink():
        paths += [root / rel for rel in MISE_IN_CONFIG_AT_ROOT]
    for pattern in settings.extra_protected:
        pat = pattern.strip().strip("/")
        if pat and not any(c in pat for c in "*?["):
            paths.append(root / pat)
    return paths


def _resolve(root: str, path: str) -> str:
    """`os.path.realpath(os.path.join(root, path))` for a real `root`, with fewer system calls.

    realpath re-checks every component of the (already real) workspace root; we start from the
    root and lstat only the components of `path`, falling back to realpath at the first symlink.
    Missing components are kept and `..` pops them, exactly as realpath (non-strict) does.
    """
    if path.startswith("/"):
        return os.path.realpath(path)
    parts = path.split("/")
    current = root
    for index, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = current + part if current.endswith("/") else current + "/" + part
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:
            current = candidate  # does not exist (yet): kept as written
            continue
        if stat.S_ISLNK(mode):
            rest = "/".join(parts[index + 1 :])
            return os.path.realpath(candidate + "/" + rest if rest else candidate)
        current = candidate
    return current


def expand_tilde(raw: str) -> str | None:
    """`~` and `~/x` → $HOME-based path; None for `~user`, `~+`, `~-` (not understood)."""
    if raw == "~" or raw.startswith("~/"):
        return os.path.expanduser(raw)
    if raw.startswith("~"):
        return None
    return raw


def check_path(raw: str, workspace: Path, *, write: bool, settings: PolicySettings) -> PathCheck:
    """Resolve `raw` (relative to the workspace) and say whether it may be read or written."""
    real, rule, reason = resolve_checked(raw, str(workspace), write=write, settings=settings)
    return PathCheck(real is not None, Path(real) if real is not None else None, rule, reason)


def resolve_checked(
    raw: str, workspace: str, *, write: bool, settings: PolicySettings
) -> tuple[str | None, str, str]:
    """`check_path` without building Path objects (the decision loop calls it per argument)."""
    if "\0" in raw:
        return None, "path.nul", "the path contains a NUL byte"
    if raw == "":
        return None, "path.empty", "the path is empty"
    expanded = expand_tilde(raw)
    if expanded is None:
        return None, "path.tilde", f"{raw!r}: only `~` and `~/…` are understood"
    root = real_workspace(workspace)
    real = _resolve(root, expanded)
    if not _inside(real, root):
        return None, "path.outside_workspace", f"{raw!r} resolves to {real!r}, outside the workspace {root!r}"
    lexical = os.path.normpath(os.path.join(root, expanded))
    candidates = [relative_inside(real, root)]
    if lexical != real and _inside(lexical, root):
        candidates.append(relative_inside(lexical, root))
    for rel in candidates:  # the name as written and the file it reaches (a symlink to .env)
        matched = secret_pattern(rel, settings.secrets)
        if matched is not None:
            return (
                None,
                "path.secret",
                f"{raw!r} is a secret file ({rel}, matches `{matched}`): its content must not reach "
                f"the model; {how_to_allow(rel)}",
            )
    if write:
        if real == root:
            return None, "path.protected", "the workspace root itself cannot be written"
        for rel in candidates:
            if is_protected(rel, settings):
                return (
                    None,
                    "path.protected",
                    f"{raw!r} is a protected file ({rel}): writing it could make later commands run code",
                )
    return real, "allowed", ""


def bare_repository_trap(directory: str, workspace: Path) -> str | None:
    """The first directory from `directory` up to the workspace root that git would take for a
    *bare repository* (HEAD, objects/, refs/ side by side, no `.git`), or None.

    Why: git discovers such a directory as a repository and obeys its `config` (core.fsmonitor,
    core.pager, …). Anything the agent can write in the workspace could be shaped that way, so a
    read-only git command run there would run the agent's code.
    """
    root = real_workspace(str(workspace))
    current = _resolve(root, directory)
    while _inside(current, root):
        if os.path.exists(os.path.join(current, ".git")):
            return None  # git stops at the first `.git`; that one is protected from writes
        if (
            os.path.isfile(os.path.join(current, "HEAD"))
            and os.path.isdir(os.path.join(current, "objects"))
            and os.path.isdir(os.path.join(current, "refs"))
        ):
            return current
        if current == root:
            break
        current = os.path.dirname(current)
    return None


_MISE = frozenset({"mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".rtx.toml"})
_MISE_ENV = re.compile(r"\.?mise\.[^/]+\.toml\Z")  # mise.<env>.toml, .mise.<env>.local.toml
_MISE_FOLDERS = (".config/mise", "mise", ".mise")  # config.toml, config.<env>.toml, conf.d/*.toml, …
_MISE_IN_CONFIG = re.compile(r"mise(\..+)?\.toml\Z")  # .config/mise.toml, .config/mise.local.toml
_SELECTOR_NAMES = frozenset(TOOLCHAIN_SELECTORS)
_SELECTOR_BYTES = 4096


def toolchain_trap(program: str, directory: str, workspace: Path) -> str | None:
    """The first toolchain selector from `directory` up to the workspace root, or the top of the
    git repository holding it, that can make a version manager run a program of its own choosing
    in place of `program`, or None.

    Why: in read mode nothing from the repository may run, but rustup, asdf, mise and pyenv read
    these files before `cargo --version` or `python --version` even starts, from the working
    directory up (a workspace that is a folder of a cloned repository has the repository's above
    it; further up are your own, such as mise's `~/.config/mise/config.toml`), and one can name a
    path: rust-toolchain.toml's `path` however TOML spells it, a
    `path:` or `ref:` (built from source) version, a version that is a path. Any mise config counts:
    it can also set environment scripts. Agents cannot write these names (they are protected); a
    cloned repository can ship them. A file that cannot be read, or is longer than we read, counts.
    """
    root = real_workspace(str(workspace))
    top = next((d for d in _upwards(root) if os.path.lexists(os.path.join(d, ".git"))), root)
    current = _resolve(root, directory)
    for folder in _upwards(current):
        found = _selector_in(folder, program)
        if found is not None:
            return relative_inside(found, root) if _inside(found, root) else found
        if folder == top:
            break
    return None


def _upwards(path: str) -> list[str]:
    """`path` and each folder above it, up to `/`."""
    folders = [path]
    while os.path.dirname(folders[-1]) != folders[-1]:
        folders.append(os.path.dirname(folders[-1]))
    return folders


def _selector_in(directory: str, program: str) -> str | None:
    try:
        names = os.listdir(directory)
    except OSError:
        return None  # cannot be listed: no version manager can read it either
    for name in sorted(names):
        mise = name in _MISE or _MISE_ENV.match(name) is not None
        if not mise and (name not in _SELECTOR_NAMES or not _selects(name, program)):
            continue
        path = os.path.join(directory, name)
        text = _small_text(path)
        if text is not None and (mise or _names_a_program(name, text)):
            return path
    for folder in _MISE_FOLDERS:  # any mise config there counts, whatever its name
        path = os.path.join(directory, folder)
        if os.path.isdir(path):
            return path
    if ".config" in names:
        config = os.path.join(directory, ".config")
        try:
            found = sorted(n for n in os.listdir(config) if _MISE_IN_CONFIG.match(n))
        except OSError:
            found = []
        if found:
            return os.path.join(config, found[0])
    return None


def _selects(selector: str, program: str) -> bool:
    """Whether `selector` may choose `program` (asdf and mise manage any tool)."""
    if selector.startswith("rust-toolchain"):
        return program in ("cargo", "rustc")
    if selector == ".python-version":
        return program.startswith(("python", "pip", "pytest"))
    if selector in (".nvmrc", ".node-version"):
        return program in ("node", "npm", "tsc")
    return True


def _names_a_program(name: str, text: str) -> bool:
    if name.startswith("rust-toolchain"):
        # rustup reads TOML from either name (and `\u002F` is a `/` there); the old name may also
        # hold just a toolchain's name, on one line
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            if name == "rust-toolchain.toml":
                return True
        else:
            toolchain = data.get("toolchain")
            return "path" in data or not isinstance(toolchain, dict) or "path" in toolchain
    if name == ".tool-versions":
        return any(word.startswith(("path:", "ref:")) or "/" in word for word in text.split())
    value = text.strip()
    if name in (".nvmrc", ".node-version") and value.startswith("lts/"):
        value = value[4:]  # nvm's `lts/iron`: a name, not a path
    return "/" in value or ".." in value or value.startswith("~")


def _small_text(path: str) -> str | None:
    """The start of a regular file, or None when there is none. A file that cannot be read (or a
    FIFO: it is not waited for) is treated as if it named a program: what it says is unknown."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return "/"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _SELECTOR_BYTES:
            return "/"
        return os.read(fd, _SELECTOR_BYTES).decode("utf-8", "replace")
    except OSError:
        return "/"
    finally:
        os.close(fd)
