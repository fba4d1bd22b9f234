"""The submodules' `.git` the sandbox protects: read from the user's index, kept while it is unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def test_repositories_at_any_depth_are_found_in_any_workspace(tmp_path: Path) -> None:
    """A folder of projects opened as one workspace, a tool cloned into `vendor/`, a client's API
    three levels down: not submodules, but the user runs git in them."""
    ws = tmp_path / "projects"
    for rel in ("app", "vendor/tool", "clients/acme/api"):
        _git(tmp_path, "init", "-q", str(ws / rel))
    found = protected_git_paths(ws)
    assert set(found) == {ws / rel / ".git" for rel in ("app", "vendor/tool", "clients/acme/api")}
    _git(tmp_path, "init", "-q", str(ws / "vendor" / "other"))  # listings are cached: by mtime
    assert ws / "vendor" / "other" / ".git" in protected_git_paths(ws)
    (ws / "node_modules" / "dep").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(ws / "node_modules" / "dep"))  # build outputs are not looked into
    assert ws / "node_modules" / "dep" / ".git" not in protected_git_paths(ws)


def test_a_repository_inside_another_is_found(tmp_path: Path) -> None:
    """Inside another repository's work tree (ignored by it or not): the user's git obeys it there."""
    ws = tmp_path / "projects"
    _git(tmp_path, "init", "-q", str(ws / "apps" / "web"))
    (ws / "apps" / "web" / ".gitignore").write_text("vendor/\n")
    _git(tmp_path, "init", "-q", str(ws / "apps" / "web" / "vendor" / "tool"))
    _git(tmp_path, "init", "-q", str(ws / "apps" / "web" / "third_party" / "x"))
    found = set(protected_git_paths(ws))
    assert ws / "apps" / "web" / "vendor" / "tool" / ".git" in found
    assert ws / "apps" / "web" / "third_party" / "x" / ".git" in found


def test_a_planted_git_file_hides_no_repository_below_it(tmp_path: Path) -> None:
    """An empty `.git` file a command made in `clients/acme` is no repository, but it is pinned,
    and the walk goes on below it."""
    ws = tmp_path / "projects"
    _git(tmp_path, "init", "-q", str(ws / "clients" / "acme" / "api"))
    (ws / "clients" / "acme" / ".git").write_text("")
    found = set(protected_git_paths(ws))
    assert found == {ws / "clients" / "acme" / ".git", ws / "clients" / "acme" / "api" / ".git"}


def test_the_gitdir_a_git_file_names_is_protected_too(tmp_path: Path) -> None:
    """`git init --separate-git-dir` and a bare repository with worktrees keep the config beside
    the work tree; pinning the `.git` file alone left it writable."""
    ws = tmp_path / "projects"
    ws.mkdir()
    api = ws / "clients" / "api"
    _git(ws, "init", "-q", "--separate-git-dir", str(ws / "clients" / ".api-git"), str(api))
    origin = tmp_path / "origin"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "o")
    _git(tmp_path, "clone", "-q", "--bare", str(origin), str(ws / "svc" / ".bare"))
    (ws / "svc" / ".git").write_text("gitdir: ./.bare\n")
    _git(ws / "svc", "worktree", "add", "-q", "main")
    found = set(protected_git_paths(ws))
    assert ws / "clients" / "api" / ".git" in found
    assert ws / "clients" / ".api-git" in found
    assert ws / "svc" / ".bare" in found
    assert ws / "svc" / ".bare" / "worktrees" / "main" in found  # the worktree's own gitdir
    outside = tmp_path / "elsewhere.git"
    _git(tmp_path, "init", "-q", "--separate-git-dir", str(outside), str(ws / "far"))
    assert outside not in set(protected_git_paths(ws))  # outside the workspace: out of reach anyway


def test_submodules_of_a_repository_below_are_found(tmp_path: Path) -> None:
    """`clients/acme/api` has a submodule `lib`: the user's `git status` in `api` obeys `lib/.git`."""
    origin = tmp_path / "origin"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "o")
    ws = tmp_path / "projects"
    api = ws / "clients" / "acme" / "api"
    _git(tmp_path, "init", "-q", str(api))
    _git(api, "submodule", "add", "-q", str(origin), "lib")
    _git(api, "submodule", "add", "-q", str(origin), "later")
    _git(api, "commit", "-q", "-m", "subs")
    _git(api, "submodule", "deinit", "-q", "-f", "later")
    found = set(protected_git_paths(ws))
    assert api / "lib" / ".git" in found
    assert api / "later" in found  # not checked out: the directory, so no `.git` can be made in it


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


def test_a_repository_named_like_a_build_output_is_found(tmp_path: Path) -> None:
    """`build/`, `dist/`, `venv/` are not walked into, but a repository that is one is protected."""
    ws = tmp_path / "projects"
    for rel in ("build", "tools/dist", "venv"):
        _git(tmp_path, "init", "-q", str(ws / rel))
    found = set(protected_git_paths(ws))
    assert {ws / rel / ".git" for rel in ("build", "tools/dist", "venv")} <= found
    _git(tmp_path, "init", "-q", str(ws / "build" / "inner"))
    assert ws / "build" / "inner" / ".git" not in set(protected_git_paths(ws))  # not walked into


_AS_A_USER = (
    "setpriv",
    "--bounding-set",
    "-dac_override,-dac_read_search",
    "--inh-caps",
    "-dac_override,-dac_read_search",
)


@pytest.mark.parametrize("name", ["proj", "dist"])
def test_a_directory_that_cannot_be_read_is_pinned_whole(tmp_path: Path, name: str) -> None:
    """`chmod 000 proj` by one command hid `proj/.git` from the look before the next, which could
    `chmod 755 proj` and write its config; `dist/`, a build output, is not walked into, but its
    own `.git` is looked for. What cannot be read is pinned whole (a read-only mount cannot be
    chmod-ed back). Run without root's permission bypass, as a user would be."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permission bits cannot be tested")
    ws = (tmp_path / "projects").resolve()
    _git(tmp_path, "init", "-q", str(ws / name))
    (ws / name).chmod(0)
    try:
        script = (
            "import sys; from pathlib import Path; from tether.core.gitlinks import protected_git_paths; "
            "print('\\n'.join(map(str, protected_git_paths(Path(sys.argv[1])))))"
        )
        prefix = _AS_A_USER if os.geteuid() == 0 else ()
        out = subprocess.run(
            [*prefix, sys.executable, "-c", script, str(ws)], capture_output=True, text=True, check=True
        )
    finally:
        (ws / name).chmod(0o755)
    assert out.stdout.split() == [str(ws / name)]


def test_a_workspace_whose_git_is_a_file(tmp_path: Path) -> None:
    """`--separate-git-dir` into the workspace: the gitdir is pinned like a `.git` directory. A
    linked worktree: its own index's submodules (not checked out there: empty directories)."""
    ws = tmp_path / "ws"
    _git(tmp_path, "init", "-q", "--separate-git-dir", str(ws / ".repo"), str(ws))
    assert ws / ".repo" in set(protected_git_paths(ws))
    worktree = _worktree_with_a_submodule(tmp_path, "lib")
    assert list((worktree / "lib").iterdir()) == []  # `worktree add` checks no submodule out
    assert worktree / "lib" in set(protected_git_paths(worktree))


def test_a_link_on_the_way_to_a_gitdir_is_protected(tmp_path: Path) -> None:
    """`proj/.git` names `../links/proj.git`, a link: repointed, the user's git would use a gitdir a
    command made. The link is in the protected set (which refuses writing commands: no mount pins
    a link)."""
    ws = tmp_path / "ws"
    real = tmp_path / "elsewhere" / "proj.git"
    (ws / "proj").mkdir(parents=True)
    real.parent.mkdir()
    _git(tmp_path, "init", "-q", "--separate-git-dir", str(real), str(ws / "proj"))
    (ws / "links").mkdir()
    (ws / "links" / "proj.git").symlink_to(real)
    (ws / "proj" / ".git").write_text("gitdir: ../links/proj.git\n")
    assert ws / "links" / "proj.git" in set(protected_git_paths(ws))


def test_a_workspace_below_a_linked_worktrees_top(tmp_path: Path) -> None:
    """The first `.git` above is a worktree's file: its index (in the main repository) still names
    the submodules inside this workspace."""
    worktree = _worktree_with_a_submodule(tmp_path, "pkg/lib")
    assert worktree / "pkg" / "lib" in set(protected_git_paths(worktree / "pkg"))


def _worktree_with_a_submodule(tmp_path: Path, at: str) -> Path:
    """A linked worktree of a repository whose index records a submodule at `at`."""
    origin = tmp_path / "origin"
    _git(tmp_path, "init", "-q", str(origin))
    _git(origin, "commit", "-q", "--allow-empty", "-m", "o")
    main = tmp_path / "main"
    _git(tmp_path, "init", "-q", str(main))
    _git(main, "submodule", "add", "-q", str(origin), at)
    _git(main, "commit", "-q", "-m", "sub")
    worktree = tmp_path / "wt"
    _git(main, "worktree", "add", "-q", str(worktree))
    return worktree


def test_a_link_on_the_way_to_the_workspaces_own_gitdir_is_protected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    real = ws / "real.git"
    ws.mkdir()
    _git(tmp_path, "init", "-q", "--separate-git-dir", str(real), str(ws))
    (ws / "link").symlink_to(real)
    (ws / ".git").write_text("gitdir: link\n")
    assert ws / "link" in set(protected_git_paths(ws))
