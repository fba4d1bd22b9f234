"""`git_can_store` against the git on this machine: the names git refuses are the names it refuses.

The oracle is git itself: `update-index --index-info` records every name it accepts into a
throwaway index (it reads no file and needs no object), and `ls-files` lists what went in. Both
with the store's settings (`core.protectNTFS=true`, `core.protectHFS=false`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.core.gitcmd import FIXED_CONFIG, clean_env
from tether.core.gitnames import git_can_store

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
FILE, SYMLINK = "100644", "120000"


def stored_by_git(tmp: Path, names: list[str], mode: str) -> set[str]:
    """The names git records when asked to, one index entry each."""
    repo = tmp / "oracle.git"
    if not repo.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True, env=clean_env())
    index = tmp / "oracle.index"
    index.unlink(missing_ok=True)
    argv = ["git", f"--git-dir={repo}"]
    for item in FIXED_CONFIG:
        argv += ["-c", item]
    env = clean_env({"GIT_INDEX_FILE": str(index)})
    feed = b"".join(f"{mode} {EMPTY_BLOB}\t".encode() + os.fsencode(n) + b"\0" for n in names)
    # exit 0 even when it ignores names; a failure writes no index, which reads as "nothing stored"
    subprocess.run(
        [*argv, "update-index", "-z", "--index-info"], input=feed, env=env, capture_output=True, check=False
    )
    if not index.exists():
        return set()
    listed = subprocess.run([*argv, "ls-files", "-z"], env=env, capture_output=True, check=True).stdout
    return {os.fsdecode(n) for n in listed.split(b"\0") if n}


REFUSED = [
    ".git/x", ".GIT/x", ".Git", "a/.git", "a/.gIt/b", "git~1", "GIT~1/x", "a/git~1", ".git.", ".git ",
    ".git. . ", ".git:stream", "git~1::$INDEX_ALLOCATION", "a\\.git", "a\\git~1\\b", "x/a\\.GIT:y",
    ".", "..", "a/./b", "a/../b", "a//b", "/a", "a/",
]  # fmt: skip
STORED = [
    "a", ".gitignore", ".github/workflows/ci.yml", ".gitmodules", ".git~1", "git~2", "git~1x", ".gitx",
    "x.git", "\\.git", "a\\b", "...", ".a", "a.", "git", ".gi", "gi7eba~1", ".gitmodules.", "gitmod~1",
    "é/.git-é", "a/.git.x", "GIT~10",
]  # fmt: skip
REFUSED_AS_SYMLINK = [".gitmodules", ".GITMODULES", ".gitmodules. ", ".gitmodules:x", "gitmod~1", "GITMOD~4",
                      "gi7eba~1", "gi7eba~9", "gi7eb~12", "a/.gitmodules"]  # fmt: skip


@pytest.mark.parametrize("name", REFUSED)
def test_a_name_git_refuses_is_not_storable(name: str, tmp_path: Path) -> None:
    assert stored_by_git(tmp_path, [name], FILE) == set()
    assert not git_can_store(name)


@pytest.mark.parametrize("name", STORED)
def test_a_name_git_stores_is_storable(name: str, tmp_path: Path) -> None:
    assert stored_by_git(tmp_path, [name], FILE) == {name}
    assert git_can_store(name)


@pytest.mark.parametrize("name", REFUSED_AS_SYMLINK)
def test_gitmodules_and_its_short_names_are_refused_for_a_symlink_only(name: str, tmp_path: Path) -> None:
    assert stored_by_git(tmp_path, [name], SYMLINK) == set()
    assert not git_can_store(name, symlink=True)
    assert git_can_store(name) == (name in stored_by_git(tmp_path, [name], FILE))


FRAGMENTS = [
    ".git", ".GIT", ".gIt", "git", "GIT", "git~1", "Git~1", "~1", "~4", "~9", "~0", "gitmodules", "MODULES",
    "gitmod", "gi7eba", "GI7EBA", ".", "..", " ", ":", "\\", "/", "a", "x", "é", "1", "12", "$DATA",
]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(
        st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join), min_size=20, max_size=40
    ),
    symlink=st.booleans(),
)
def test_git_can_store_agrees_with_git_on_generated_names(
    names: list[str], symlink: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("names")
    # each in a directory of its own: `git` and `git/x` cannot both be in one index
    names = [f"n{i}/{name}" for i, name in enumerate(sorted(set(names)))]
    stored = stored_by_git(tmp, names, SYMLINK if symlink else FILE)
    disagree = [n for n in names if git_can_store(n, symlink=symlink) != (n in stored)]
    assert disagree == []
