"""One walk instead of two: the ignored files a checkpoint covers come from `git status
--ignored=matching` now, where a separate `git ls-files --others --ignored --directory
--no-empty-directory` walk named them before (issue "Speed at scale"). An ignored file missing from
the snapshot could never be restored, so on random trees and ignore rules (negations, anchored and
nested patterns, wholly ignored directories, build outputs, files already snapshotted or not):

* against an oracle: every untracked file git calls ignored (`git check-ignore`, one path at a time)
  is covered, outside build-output directories and nested repositories, and nothing else is (an
  ignored nested repository was walked into, `.git` and all, which failed the checkpoint);
* against the old listing: whatever it covered, the new one covers too. (The old one missed files:
  `--no-empty-directory` hid `src/b.log` when `src/` held only an untracked `.gitignore` besides it.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from _checkpoint_support import init_repo
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tether.core.checkpoints import Checkpoints
from tether.core.checkpoints.regenerated import regenerated_dir
from tether.core.checkpoints.snapshots import _parse_status
from tether.core.config import CheckpointSettings
from tether.core.gitcmd import Git

DIRS = ("", "src", "logs", "node_modules", "node_modules/pkg", "build", "out", "out/deep", "src/cache")
FILES = ("a.txt", "b.log", ".env", "keep.log", "x.pyc", "index.js", "data.db")
PATTERNS = (
    "*.log",
    "!keep.log",
    "logs/",
    "/out",
    "out/deep/",
    "node_modules/",
    "build",
    ".env",
    "*.pyc",
    "**/cache",
    "src/*.txt",
    "*.db",
    "!src/",
)

paths = st.lists(st.tuples(st.sampled_from(DIRS), st.sampled_from(FILES)), min_size=1, max_size=14)
rules = st.lists(st.sampled_from(PATTERNS), max_size=6)


def _old_listing(git: Git) -> list[str]:
    """What the checkpoint listed before: a second walk, `--directory` naming ignored directories."""
    out = git.run(
        "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"
    ).stdout
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _status_listing(git: Git) -> list[str]:
    out = git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames"
    ).stdout
    return _parse_status(out)[2]


def _write(root: Path, entries: list[tuple[str, str]]) -> None:
    for directory, name in entries:
        target = root / directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{directory}/{name}\n")


def _oracle(git: Git, ws: Path) -> set[str]:
    """Untracked files on disk that git calls ignored, outside build-output directories and nested
    repositories (their own `.git` keeps their history; git could not store their `.git` anyway)."""
    tracked = {os.fsdecode(p) for p in git.run("ls-files", "-z").stdout.split(b"\0") if p}
    untracked = [
        rel
        for root, dirs, files in os.walk(ws)
        for dirs[:] in [
            [d for d in dirs if d != ".git" and not os.path.lexists(os.path.join(root, d, ".git"))]
        ]
        for name in files
        if (rel := os.path.relpath(os.path.join(root, name), ws)) not in tracked
    ]
    if not untracked:
        return set()
    out = git.run(
        "check-ignore",
        "-z",
        "--stdin",
        input=b"".join(os.fsencode(p) + b"\0" for p in untracked),
        ok_codes=(0, 1),
    ).stdout
    return {p for p in (os.fsdecode(x) for x in out.split(b"\0") if x) if regenerated_dir(p) is None}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=paths,
    after=paths,
    root_rules=rules,
    nested_rules=rules,
    nested_in=st.sampled_from(DIRS[1:]),
    snapshot_first=st.booleans(),
    nested_repo=st.sampled_from((None, *DIRS[1:])),
)
def test_ignored_files_from_status_cover_every_ignored_file(
    before: list[tuple[str, str]],
    after: list[tuple[str, str]],
    root_rules: list[str],
    nested_rules: list[str],
    nested_in: str,
    snapshot_first: bool,
    nested_repo: str | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = init_repo(Path(tmp) / "ws", {"README.md": "hi\n"})
        (ws / ".gitignore").write_text("".join(f"{r}\n" for r in root_rules))
        (ws / nested_in).mkdir(parents=True, exist_ok=True)
        (ws / nested_in / ".gitignore").write_text("".join(f"{r}\n" for r in nested_rules))
        _write(ws, before)
        if nested_repo is not None:
            init_repo(ws / nested_repo, {"n.txt": "nested\n"})
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        cps = Checkpoints(ws, CheckpointSettings())
        if snapshot_first:
            cps.create("first")  # some ignored files are in the private index from now on
        _write(ws, after)
        git = cps._prepare(cps._location())
        new_files, new_regenerated = cps._ignored_files(git, _status_listing(git))
        old_files, old_regenerated = cps._ignored_files(git, _old_listing(git))
        assert set(new_files) == _oracle(git, ws)
        assert set(old_files) <= set(new_files)
        assert set(old_regenerated) <= set(new_regenerated)


mutations = st.lists(
    st.tuples(
        st.sampled_from(("to_dir", "to_file", "to_symlink", "delete", "unrepo")),
        st.sampled_from(DIRS[1:] + tuple(f"{d}/{f}".lstrip("/") for d in DIRS for f in FILES)),
        st.sampled_from(FILES),
    ),
    min_size=1,
    max_size=6,
)


def _mutate(ws: Path, how: str, rel: str, name: str) -> None:
    """One change, or none where the tree makes it impossible (a parent is a file or a link)."""
    with contextlib.suppress(OSError):
        _change(ws, how, rel, name)


def _change(ws: Path, how: str, rel: str, name: str) -> None:
    import shutil

    target = ws / rel
    if any((ws / p).is_symlink() or (ws / p).is_file() for p in Path(rel).parents if str(p) != "."):
        return  # never through a symlink, never under a file
    if how == "unrepo":
        shutil.rmtree(target / ".git", ignore_errors=True)
        return
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink() or target.exists():
        target.unlink()
    if how == "delete":
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if how == "to_dir":
        target.mkdir()
        (target / name).write_text(f"{rel}/{name}\n")
    elif how == "to_file":
        target.write_text(f"{rel} as a file\n")
    else:
        os.symlink("../README.md", target)


def _tree(git: Git, commit: str) -> list[bytes]:
    return sorted(git.run("ls-tree", "-r", "-z", commit).stdout.split(b"\0"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # an ignored file becomes a directory: git hides the ignored files inside it
    start=[("", ".env")], root_rules=[".env"], nested_repo=None, steps=[[("to_dir", ".env", "a.txt")]]
)
@example(  # `rm -rf src/.git`: git says nothing about a gitlink it cannot look into
    start=[("", "a.txt")], root_rules=[], nested_repo="src", steps=[[("unrepo", "src", "a.txt")]]
)
@given(
    start=paths,
    root_rules=rules,
    nested_repo=st.sampled_from((None, *DIRS[1:])),
    steps=st.lists(mutations, min_size=1, max_size=3),
)
def test_an_incremental_snapshot_equals_a_rebuilt_one(
    start: list[tuple[str, str]],
    root_rules: list[str],
    nested_repo: str | None,
    steps: list[list[tuple[str, str, str]]],
) -> None:
    """The private index is only a cache: after any sequence of changes (file, directory and symlink
    swaps, deletions, a nested repository losing its `.git`), the snapshot taken incrementally and
    the one taken from a rebuilt index are the same tree."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = init_repo(Path(tmp) / "ws", {"README.md": "hi\n"})
        (ws / ".gitignore").write_text("".join(f"{r}\n" for r in root_rules))
        _write(ws, start)
        if nested_repo is not None:
            init_repo(ws / nested_repo, {"n.txt": "nested\n"})
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        cps = Checkpoints(ws, CheckpointSettings())
        cps.create("first")
        index = cps._location().index
        for step in steps:
            for how, rel, name in step:
                _mutate(ws, how, rel, name)
            incremental = cps.create("incremental")
            index.unlink()
            rebuilt = cps.create("rebuilt")
            git = cps._prepare(cps._location())
            assert _tree(git, incremental.commit) == _tree(git, rebuilt.commit)
