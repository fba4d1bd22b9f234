"""The submodules' `.git` the sandbox protects: read from the user's index, kept while it is unchanged."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.core.gitlinks import protected_git_paths
from tether.errors import CheckpointError

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
ENV["GIT_COMMITTER_EMAIL"] = "t@t"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "protocol.file.allow=always", *args], check=True, env=ENV)


def test_gitlinks_follow_the_index(tmp_path: Path) -> None:
    origin, ws = tmp_path / "origin", tmp_path / "ws"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "s")
    _git(tmp_path, "init", "-q", str(ws))
    assert protected_git_paths(ws) == ()  # no index yet
    (ws / "a.txt").write_text("a\n")
    _git(ws, "add", "a.txt")
    assert protected_git_paths(ws) == ()
    _git(ws, "submodule", "add", "-q", str(origin), "deps/lib")
    assert protected_git_paths(ws) == (ws / "deps" / "lib" / ".git",)
    assert protected_git_paths(ws / "deps") == (ws / "deps" / "lib" / ".git",)  # a workspace below the top
    assert protected_git_paths(ws / "other") == ()  # the submodule lies outside this workspace
    _git(ws, "rm", "-q", "-f", "deps/lib")
    assert protected_git_paths(ws) == ()  # the index changed: listed again


def test_a_submodule_not_checked_out_is_protected_as_its_directory(tmp_path: Path) -> None:
    """A placeholder `lib/.git` would make the user's `git status` fail while a command runs."""
    origin, ws = tmp_path / "origin", tmp_path / "ws"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "s")
    _git(tmp_path, "init", "-q", str(ws))
    _git(ws, "submodule", "add", "-q", str(origin), "lib")
    _git(ws, "commit", "-q", "-m", "lib")
    _git(ws, "submodule", "deinit", "-q", "-f", "lib")
    assert protected_git_paths(ws) == (ws / "lib",)


def test_submodules_of_submodules_are_found(tmp_path: Path) -> None:
    """The user's `git status` recurses: `lib/inner/.git` is theirs to trust as much as `lib/.git`."""
    inner, lib, ws = tmp_path / "inner", tmp_path / "lib", tmp_path / "ws"
    for repo in (inner, lib, ws):
        _git(tmp_path, "init", "-q", str(repo))
    _git(inner, "commit", "-q", "--allow-empty", "-m", "i")
    _git(lib, "submodule", "add", "-q", str(inner), "inner")
    _git(lib, "commit", "-q", "-m", "l")
    _git(ws, "submodule", "add", "-q", str(lib), "lib")
    _git(ws, "submodule", "update", "-q", "--init", "--recursive")
    found = protected_git_paths(ws)
    assert ws / "lib" / ".git" in found
    assert ws / "lib" / "inner" / ".git" in found


def test_repositories_two_levels_down_are_found_in_any_workspace(tmp_path: Path) -> None:
    """A folder of projects opened as one workspace, a tool cloned into `vendor/`: not submodules,
    but the user runs git in them. Deeper ones are not looked for (a bounded look, not a walk)."""
    ws = tmp_path / "projects"
    for rel in ("app", "vendor/tool", "a/b/deep"):
        _git(tmp_path, "init", "-q", str(ws / rel))
    found = protected_git_paths(ws)
    assert set(found) == {ws / "app" / ".git", ws / "vendor" / "tool" / ".git"}
    _git(tmp_path, "init", "-q", str(ws / "vendor" / "other"))  # listings are cached: by mtime
    assert ws / "vendor" / "other" / ".git" in protected_git_paths(ws)
    (ws / "node_modules" / "dep").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(ws / "node_modules" / "dep"))  # build outputs are not looked into
    assert ws / "node_modules" / "dep" / ".git" not in protected_git_paths(ws)


@pytest.mark.timeout(20)
def test_a_fifo_named_git_does_not_hang_the_look(tmp_path: Path) -> None:
    """Opening a FIFO blocks until a writer comes: every later command would hang on it."""
    ws = tmp_path / "ws"
    (ws / "trap").mkdir(parents=True)
    os.mkfifo(ws / "trap" / ".git")
    assert protected_git_paths(ws) == (ws / "trap" / ".git",)


@pytest.mark.timeout(30)
def test_a_fifo_as_a_repositorys_index_refuses_instead_of_hanging(tmp_path: Path) -> None:
    """git would wait on the FIFO for a writer forever, and with it every later command."""
    ws = tmp_path / "ws"
    _git(tmp_path, "init", "-q", str(ws / "app"))
    os.mkfifo(ws / "app" / ".git" / "index")
    with pytest.raises(CheckpointError, match="not a regular file"):
        protected_git_paths(ws)
