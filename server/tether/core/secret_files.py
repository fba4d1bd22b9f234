"""Find the workspace's secret files on disk, for the sandbox to hide (docs/secrets.md).

Why a walk before every command: the policy refuses commands that *name* a secret, but once a
program runs (`grep -r KEY .`, a build script, `python3 -c …`) only the sandbox can keep `.env`
from being read. So each sandboxed command gets the list of secret paths that exist right now, and
every backend makes them unreadable. ripgrep lists them in one fast, parallel pass (only files
whose names match, build-output directories pruned); without ripgrep a Python walk does the same.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from tether.core.checkpoints.regenerated import REGENERATED_DIRS
from tether.core.gitlinks import for_secrets
from tether.core.policy.secrets import SecretSettings, secret_globs, secret_pattern
from tether.core.sandbox.profile import is_within

WALK_TIMEOUT = 20.0
BUILT_HERE = frozenset({"dist", "build", ".next", ".nuxt"})
"""Build outputs the secret walk enters all the same (checkpoints still leave them out): a build
copies `.env` files into them (`cp .env dist/`, a framework's standalone output), and they are
small next to the dependency folders the walk skips (`node_modules/`, `.venv/`, `target/`)."""


def find_secret_paths(
    workspace: Path, settings: SecretSettings, *, skip_dirs: Iterable[str] = ()
) -> tuple[Path, ...]:
    """Absolute paths to hide: secret files, whole secret directories (`.ssh/`), what a
    secret-named symbolic link points at, inside the workspace or outside (`secret_link_targets`),
    and Tether's checkpoint stores, which hold copies of them (`ForSecrets.stores`). Raises OSError
    when the workspace cannot be listed: the caller must not run a command it cannot mask.
    """
    root = Path(os.path.realpath(workspace))
    outputs = (REGENERATED_DIRS - BUILT_HERE).union(skip_dirs)
    skip = outputs | {".git"}
    ripgrep = _start_ripgrep(root, settings, skip)
    try:
        walked = for_secrets(root, outputs)  # while ripgrep lists the files: the walk costs no wait
    finally:
        found = _ripgrep_found(ripgrep) if ripgrep is not None else None
    unreadable: list[str] = []
    if found is None:
        found, unreadable = _with_walk(root, settings, skip)
    tracked, tracked_links = _tracked_in_skipped(root, settings, walked.tracked_in_outputs)
    hidden: dict[str, None] = {}
    for rel in sorted(found + tracked):
        target = _mask_target(rel, settings)
        if target is not None and not any(target.startswith(h + "/") for h in hidden):
            hidden[target] = None
    links = secret_link_targets(root, settings, (*walked.links, *tracked_links))
    extra = (*links, *(Path(d) for d in (*unreadable, *walked.stores)))
    return _outermost((*(root / rel for rel in hidden), *extra))


SEARCH_LIST_TIMEOUT = 10.0
"""Seconds for listing what a search would read; a hook must answer well within Claude Code's 60."""


def secrets_a_search_reads(
    folder: Path, settings: SecretSettings, *, globs: Iterable[str] = (), types: Iterable[str] = ()
) -> list[Path]:
    """The secret files a ripgrep search of `folder` would read, the way Claude Code's Grep runs
    ripgrep (`--hidden --no-follow --glob !.git`, then the search's own globs and type): git-ignored
    files are skipped, hidden ones read, and a glob of the search can reach into an ignored folder.
    Nothing hides them from a search Tether does not run, so the caller refuses it. OSError when a
    listing fails or takes too long: a search not checked is not allowed.

    Two listings: first the sandbox masks' own (every secret-named file, ignored or not); only when
    it finds some, a second listing made as the search makes it says which of them it would reach.
    Matching every listed name in Python instead cost a second on 20,000 files. With
    `RIPGREP_CONFIG_PATH` set, a ripgrep that reads it may reach more: what either reaches counts.
    Without ripgrep, or when its listing fails, a walk that ignores nothing stands in.
    """
    from tether.core.tools.grep import find_rg

    root = Path(os.path.realpath(folder))
    if root.is_file():  # a search of one file reads that file (a link: what it points at)
        return [root] if secret_pattern(root.name, settings) is not None else []
    ripgrep = _start_ripgrep(root, settings, frozenset())  # the masks' listing, nothing skipped
    everything = _ripgrep_found(ripgrep) if ripgrep is not None else None
    rg = find_rg()
    if everything is None or rg is None:
        found, unreadable = _with_walk(root, settings, set())
        if unreadable:
            raise OSError(f"{unreadable[0]} cannot be listed")
        return [root / rel for rel in found]
    candidates = [rel for rel in everything if secret_pattern(rel, settings) is not None]
    if not candidates:
        return []
    as_searched = [rg, "--files", "--hidden", "--no-follow", "--no-messages", "--null", "--glob", "!.git"]
    as_searched += [arg for glob in globs for arg in ("--glob", glob)]
    as_searched += [arg for name in types for arg in ("--type", name)]
    reached = set(_listed([*as_searched, "--no-config"], root))
    if os.environ.get("RIPGREP_CONFIG_PATH"):
        reached.update(_listed(as_searched, root))
    return [root / rel for rel in candidates if rel in reached]


def _listed(argv: list[str], root: Path) -> list[str]:
    try:
        done = subprocess.run(argv, cwd=root, capture_output=True, timeout=SEARCH_LIST_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise OSError(f"listing {root} took longer than {SEARCH_LIST_TIMEOUT:g} s") from None
    if done.returncode not in (0, 1):  # 1: no file at all
        raise OSError(done.stderr.decode("utf-8", "replace").strip() or f"ripgrep failed in {root}")
    return _paths(done.stdout)


def _paths(listed: bytes) -> list[str]:
    """ripgrep's `--files --null` output as relative paths."""
    return [p.removeprefix("./") for p in listed.decode("utf-8", "surrogateescape").split("\0") if p]


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """`paths` without repeats and without those inside another one that is a folder: a folder's
    mask hides all below it, and a mask inside it could not be mounted (every command would fail:
    `x/.ssh -> ../sec` beside `x/.env -> ../sec/a`)."""
    kept: list[Path] = []
    folders: list[Path] = []
    for path in sorted(dict.fromkeys(paths), key=lambda p: len(p.parts)):
        if any(is_within(path, folder) for folder in folders):
            continue
        kept.append(path)
        if path.is_dir() and not path.is_symlink():
            folders.append(path)
    return tuple(kept)


_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/boot")
_NOT_MASKABLE = (*_SYSTEM, "/nix", "/snap", "/var/lib", "/proc", "/dev", "/sys", "/run")
"""Where a link's target is never hidden: a mask there could only break the run (`.aws -> /usr`
would hide every program), and nothing of the user's project lives there."""


def secret_link_targets(workspace: Path, settings: SecretSettings, links: Iterable[str]) -> tuple[Path, ...]:
    """What the workspace's secret-named symbolic links point at, to hide as well.

    Why: `apps/web/.env -> ../../.env` (a monorepo's shared file) is refused by name to every tool,
    but a program opens the target, which ripgrep's listing never names (it lists no links) and
    which, outside the workspace, has no name the walk could see. A link named like a secret file
    counts when it reaches a file, one named like a secret folder when it reaches a folder; never a
    folder that holds the workspace, nor anything in the system's folders (`_NOT_MASKABLE`).
    """
    root = os.path.realpath(workspace)
    targets: dict[Path, None] = {}
    for link in links:
        rel = os.path.relpath(link, root).replace(os.sep, "/")
        as_dir = _is_dir_pattern(rel, settings)
        if not as_dir and secret_pattern(rel, settings) is None:
            continue
        target = Path(os.path.realpath(link))
        kind_ok = target.is_dir() if as_dir else target.is_file()
        holds_workspace = is_within(Path(root), target)
        special = any(is_within(target, Path(p)) for p in _NOT_MASKABLE)
        if kind_ok and not holds_workspace and not special:
            targets.setdefault(target)
    return tuple(targets)


def _tracked_in_skipped(
    root: Path, settings: SecretSettings, tracked: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Secret files git tracks inside a skipped build-output folder (`deploy/target/prod.pem`:
    not an output of a build, since it is tracked), relative to the workspace, by the name git
    tracks; and the links among them (`deploy/target/.env -> ../../conf/vals.txt`), whose targets
    are hidden like those of any secret-named link."""
    files: list[str] = []
    links: list[str] = []
    for path in tracked:
        if not path.startswith(str(root) + os.sep):
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if secret_pattern(rel, settings) is None:
            continue
        if os.path.islink(path):
            links.append(path)
        elif os.path.isfile(path):
            files.append(rel)
    return files, links


def _mask_target(rel: str, settings: SecretSettings) -> str | None:
    """The path to hide for a secret file: the file, or the secret directory that holds it."""
    parts = rel.split("/")
    for end in range(1, len(parts)):
        prefix = "/".join(parts[:end])
        if _is_dir_pattern(prefix, settings):
            return prefix
    return rel if secret_pattern(rel, settings) is not None else None


def _is_dir_pattern(prefix: str, settings: SecretSettings) -> bool:
    only_dirs = SecretSettings(tuple(p for p in settings.patterns if p.endswith("/")), settings.allowed)
    return secret_pattern(prefix, only_dirs) is not None


def _start_ripgrep(
    root: Path, settings: SecretSettings, skip: set[str] | frozenset[str]
) -> subprocess.Popen[bytes] | None:
    from tether.core.tools.grep import find_rg

    rg = find_rg()
    if rg is None:
        return None
    argv = [rg, "--files", "--hidden", "--no-ignore", "--no-messages", "--no-config", "--null"]
    for glob in secret_globs(settings):
        argv += ["--iglob", glob]
    for name in sorted(skip):
        argv += ["--glob", f"!**/{name}"]
    try:
        return subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _ripgrep_found(proc: subprocess.Popen[bytes]) -> list[str] | None:
    """The paths ripgrep listed, or None when it failed or took too long (the walk then does)."""
    try:
        out, _ = proc.communicate(timeout=WALK_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    if proc.returncode not in (0, 1):  # 1: no file matched
        return None
    return _paths(out)


def _with_walk(
    root: Path, settings: SecretSettings, skip: set[str] | frozenset[str]
) -> tuple[list[str], list[str]]:
    """The secret files below `root` (relative), and the folders that cannot be listed (absolute):
    hidden whole, since a program could still open a secret in one by its name (a folder with
    `x` but no `r`), and one it cannot enter costs it nothing. OSError when `root` itself cannot be
    listed: the caller must not run a command it cannot mask."""
    found: list[str] = []
    unreadable: list[str] = []

    def note(error: OSError) -> None:
        if error.filename is None or os.path.realpath(error.filename) == str(root):
            raise error
        unreadable.append(os.fsdecode(error.filename))

    for dirpath, dirnames, filenames in os.walk(root, onerror=note):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [d for d in dirnames if d not in skip and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            if not os.path.islink(os.path.join(dirpath, name)) and secret_pattern(prefix + name, settings):
                found.append(prefix + name)
    return found, unreadable
