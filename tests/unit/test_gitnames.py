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
from tether.core.gitnames import git_can_store, refused_part

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
FILE, SYMLINK, GITLINK = "100644", "120000", "160000"
CANARY = "zz-canary"


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
    # a name git always takes, so that a git that failed altogether is not read as "refused them all"
    feed = b"".join(f"{mode} {EMPTY_BLOB}\t".encode() + os.fsencode(n) + b"\0" for n in [CANARY, *names])
    # exit 0 even when it ignores names ("Ignoring path"): what it took is what `ls-files` lists
    subprocess.run(
        [*argv, "update-index", "-z", "--index-info"], input=feed, env=env, check=True, capture_output=True
    )
    listed = subprocess.run([*argv, "ls-files", "-z"], env=env, capture_output=True, check=True).stdout
    stored = {os.fsdecode(n) for n in listed.split(b"\0") if n}
    assert CANARY in stored
    return stored - {CANARY}


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
STORED_AS_SYMLINK = ["gitmod~5", "gi7eba~0", ".gitmodules /x", "gi7eba~1/x", "gitmodules", ".gitmodulesx",
                     "gi7ebaa~1"]  # fmt: skip
REFUSED_AS_SYMLINK = [".gitmodules", ".GITMODULES", ".gitmodules. ", ".gitmodules:x", "gitmod~1", "GITMOD~4",
                      "gi7eba~1", "gi7eba~9", "gi7eb~12", "a/.gitmodules", "a/.gitmodules/b"]  # fmt: skip


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


@pytest.mark.parametrize("name", STORED_AS_SYMLINK)
def test_near_misses_of_gitmodules_are_storable_as_a_symlink(name: str, tmp_path: Path) -> None:
    assert stored_by_git(tmp_path, [name], SYMLINK) == {name}
    assert git_can_store(name, symlink=True)


@pytest.mark.parametrize("name", ["sub", "GIT~1", "a/.GIT", "git~1.", "gitmodules", ".gitmodules"])
def test_a_nested_repository_is_refused_by_the_same_rule_as_a_file(name: str, tmp_path: Path) -> None:
    """A gitlink (mode 160000) follows the file rule: `.gitmodules` is refused for a symlink only."""
    assert (name in stored_by_git(tmp_path, [name], GITLINK)) == git_can_store(name)


def test_the_empty_path_is_not_storable() -> None:
    assert not git_can_store("")


@pytest.mark.parametrize(
    ("path", "symlink", "part"),
    [
        (".GIT/a/b", False, ".GIT"),
        ("src/git~1/deep/x.py", False, "src/git~1"),
        ("git~1", False, "git~1"),
        ("a/.gitmodules", True, "a/.gitmodules"),
        ("x\\.git/y", False, "x\\.git"),
    ],
)
def test_refused_part_names_the_shortest_part_git_refuses(path: str, symlink: bool, part: str) -> None:
    assert not git_can_store(path, symlink=symlink)
    assert refused_part(path, symlink=symlink) == part


FRAGMENTS = [
    ".git", ".GIT", ".gIt", "git", "GIT", "git~1", "Git~1", "~1", "~4", "~9", "~0", "gitmodules", "MODULES",
    "gitmod", "gi7eba", "GI7EBA", ".", "..", " ", ":", "\\", "/", "a", "x", "é", "1", "12", "$DATA",
    os.fsdecode(b"\x80"), os.fsdecode(b"\xff"), "~5", "~0", "\t",
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    names=st.lists(
        st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join), min_size=20, max_size=40
    ),
    mode=st.sampled_from([FILE, SYMLINK, GITLINK]),
)
def test_git_can_store_agrees_with_git_on_generated_names(
    names: list[str], mode: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("names")
    # each in a directory of its own: `git` and `git/x` cannot both be in one index
    names = [f"n{i}/{name}" for i, name in enumerate(sorted(set(names)))]
    stored = stored_by_git(tmp, names, mode)
    disagree = [n for n in names if git_can_store(n, symlink=mode == SYMLINK) != (n in stored)]
    assert disagree == []
