"""The submodules' `.git` the sandbox protects: read from the user's index, kept while it is unchanged."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tether.core.gitlinks import submodule_git_paths

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
ENV["GIT_COMMITTER_EMAIL"] = "t@t"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "protocol.file.allow=always", *args], check=True, env=ENV)


def test_gitlinks_follow_the_index(tmp_path: Path) -> None:
    origin, ws = tmp_path / "origin", tmp_path / "ws"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "s")
    _git(tmp_path, "init", "-q", str(ws))
    assert submodule_git_paths(ws) == ()  # no index yet
    (ws / "a.txt").write_text("a\n")
    _git(ws, "add", "a.txt")
    assert submodule_git_paths(ws) == ()
    _git(ws, "submodule", "add", "-q", str(origin), "deps/lib")
    assert submodule_git_paths(ws) == (ws / "deps" / "lib" / ".git",)
    assert submodule_git_paths(ws / "deps") == (ws / "deps" / "lib" / ".git",)  # a workspace below the top
    assert submodule_git_paths(ws / "other") == ()  # the submodule lies outside this workspace
    _git(ws, "rm", "-q", "-f", "deps/lib")
    assert submodule_git_paths(ws) == ()  # the index changed: listed again


def test_a_submodule_not_checked_out_is_protected_as_its_directory(tmp_path: Path) -> None:
    """A placeholder `lib/.git` would make the user's `git status` fail while a command runs."""
    origin, ws = tmp_path / "origin", tmp_path / "ws"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "s")
    _git(tmp_path, "init", "-q", str(ws))
    _git(ws, "submodule", "add", "-q", str(origin), "lib")
    _git(ws, "commit", "-q", "-m", "lib")
    _git(ws, "submodule", "deinit", "-q", "-f", "lib")
    assert submodule_git_paths(ws) == (ws / "lib",)
