"""git_operation against a hostile repository: nothing the repository names may run.

The repository's config sets core.fsmonitor, core.pager, diff.external, clean/smudge/process
filters (one via an included file), a textconv driver, an editor, and .git/hooks has every commit
hook. Each program only touches a marker file. A control run with plain git on a copy proves the
markers do appear when git is not hardened, so the assertions can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from _tools_support import make_ctx, preview, run

from tether.core.tools.git_tool import GitOperationTool, git_env
from tether.errors import PolicyDenied, ToolInputError

GIT = GitOperationTool()
PROGRAMS = (
    "fsmonitor", "pager", "external", "clean", "smudge", "process", "inc-clean", "textconv", "editor",
    "pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "pre-auto-gc",
)  # fmt: skip


def plain_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, check=False)


def arm(repo: Path, markers: Path) -> None:
    """Turn a clean repository hostile: every program writes markers/<name>."""
    markers.mkdir(exist_ok=True)
    bindir = repo.parent / f"bin-{markers.name}"
    bindir.mkdir(exist_ok=True)
    for name in PROGRAMS:
        script = bindir / name
        script.write_text(f"#!/bin/sh\ntouch {markers}/{name}\ncat\n")
        script.chmod(0o755)
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "pre-auto-gc"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {markers}/{hook}\n")
        (hooks / hook).chmod(0o755)
    (repo / ".git" / "extra.config").write_text(f'[filter "inc"]\n\tclean = {bindir}/inc-clean\n')
    config = {
        "core.fsmonitor": f"{bindir}/fsmonitor",
        "core.pager": f"{bindir}/pager",
        "pager.diff": "true",
        "pager.status": "true",
        "diff.external": f"{bindir}/external",
        "filter.evil.clean": f"{bindir}/clean",
        "filter.evil.smudge": f"{bindir}/smudge",
        "filter.evil.required": "true",
        "filter.proc.process": f"{bindir}/process",
        "diff.evil.textconv": f"{bindir}/textconv",
        "core.editor": f"{bindir}/editor",
        "include.path": "extra.config",
    }
    for key, value in config.items():
        assert plain_git(repo, "config", key, value).returncode == 0


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert plain_git(repo, "init", "-q").returncode == 0
    plain_git(repo, "config", "user.name", "Test User")
    plain_git(repo, "config", "user.email", "test@example.com")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.dat filter=proc\n*.inc filter=inc\n")
    for name in ("a.txt", "b.dat", "c.inc"):
        (repo / name).write_text("original\n")
    assert plain_git(repo, "add", "-A").returncode == 0
    assert plain_git(repo, "commit", "-q", "-m", "init").returncode == 0
    markers = tmp_path / "markers"
    arm(repo, markers)
    for name in ("a.txt", "b.dat", "c.inc"):
        (repo / name).write_text("changed by the agent\n")
    return repo, markers


def test_control_plain_git_does_run_the_repositorys_programs(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = hostile
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    control = tmp_path / "control-markers"
    arm(copy, control)
    plain_git(copy, "status")
    plain_git(copy, "diff")
    plain_git(copy, "add", "a.txt", "c.inc")
    plain_git(copy, "commit", "-m", "x")
    ran = {p.name for p in control.iterdir()}
    assert {"fsmonitor", "external", "clean", "inc-clean", "pre-commit", "post-commit"} <= ran


def test_status_diff_add_commit_run_nothing_from_the_repository(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    ctx = make_ctx(repo)
    status = run(GIT, ctx, {"operation": "status", "args": ["--short"]})
    assert status.ok, status.text
    assert status.text == " M a.txt\n M b.dat\n M c.inc\n"
    diff = run(GIT, ctx, {"operation": "diff"})
    assert diff.ok, diff.text
    assert "-original\n+changed by the agent\n" in diff.text
    assert run(GIT, ctx, {"operation": "diff", "args": ["--stat"]}).ok
    add = run(GIT, ctx, {"operation": "add", "args": ["a.txt", "b.dat", "c.inc"]})
    assert add.ok, add.text
    cached = run(GIT, ctx, {"operation": "diff", "args": ["--cached", "--name-only"]})
    assert cached.text == "a.txt\nb.dat\nc.inc\n"
    commit = run(GIT, ctx, {"operation": "commit", "args": ["-m", "agent change"]})
    assert commit.ok, commit.text
    assert commit.result["argv"][:4] == ["git", "--no-pager", "commit", "--no-verify"]
    log = subprocess.run(
        ["git", "log", "-1", "--format=%s|%an"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=git_env(repo),
        check=True,
    )
    assert log.stdout == "agent change|Test User\n"
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_committed_blob_is_unfiltered(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    ctx = make_ctx(repo)
    run(GIT, ctx, {"operation": "add", "args": ["a.txt"]})
    blob = subprocess.run(
        ["git", "cat-file", "-p", ":a.txt"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=git_env(repo),
        check=True,
    )
    assert blob.stdout == "changed by the agent\n"
    assert list(markers.iterdir()) == []


@pytest.mark.parametrize(
    "operation", ["push", "fetch", "pull", "config", "clone", "checkout", "reset", "log"]
)
def test_other_operations_are_refused_with_the_allowed_list(
    hostile: tuple[Path, Path], operation: str
) -> None:
    repo, _ = hostile
    with pytest.raises(PolicyDenied) as err:
        GIT.prepare(make_ctx(repo), {"operation": operation, "args": ["origin", "main"]})
    assert str(err.value) == f"git operation {operation!r} is not allowed"
    payload = err.value.decision.error_payload()
    assert payload["suggestion"] == "allowed operations: status, diff, add, commit"
    assert payload["allowed_operations"] == ["status", "diff", "add", "commit"]


@pytest.mark.parametrize(
    ("operation", "args", "message"),
    [
        ("diff", ["--output=/tmp/pwned"], "git diff flag '--output=/tmp/pwned' is not allowed"),
        ("diff", ["--ext-diff"], "git diff flag '--ext-diff' is not allowed"),
        ("diff", ["--textconv"], "git diff flag '--textconv' is not allowed"),
        ("diff", ["-c", "core.pager=sh"], "git diff flag '-c' is not allowed"),
        (
            "status",
            ["--ignore-submodules=none", "-c"],
            "git status flag '--ignore-submodules=none' is not allowed",
        ),
        ("commit", ["-a", "-m", "x"], "git commit flag '-a' is not allowed"),
        ("commit", ["-m", "x", "--amend"], "git commit flag '--amend' is not allowed"),
        ("commit", ["-m", "x", "a.txt"], "git commit takes only -m/--message, not 'a.txt'"),
        ("add", ["--chmod=+x", "a.txt"], "git add flag '--chmod=+x' is not allowed"),
    ],
)
def test_flags_outside_the_allowlist_are_refused(
    hostile: tuple[Path, Path], operation: str, args: list[str], message: str
) -> None:
    repo, _ = hostile
    with pytest.raises(PolicyDenied) as err:
        GIT.prepare(make_ctx(repo), {"operation": operation, "args": args})
    assert str(err.value) == message


@pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "a\x00b", ".git/config"])
def test_paths_are_validated(hostile: tuple[Path, Path], path: str) -> None:
    repo, _ = hostile
    with pytest.raises(PolicyDenied):
        GIT.prepare(make_ctx(repo), {"operation": "add", "args": [path]})


def test_args_string_is_split_and_message_forms(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    ctx = make_ctx(repo)
    run(GIT, ctx, {"operation": "add", "args": "-A"})
    out = run(GIT, ctx, {"operation": "commit", "args": "--message='two words' -mthird"})
    assert out.ok, out.text
    assert out.result["argv"][-4:] == ["-m", "two words", "-m", "third"]
    assert list(markers.iterdir()) == []


@pytest.mark.parametrize("args", [["-A"], ["-A", "conf"], ["-u"], ["conf"]])
def test_no_add_stages_a_secret_file(hostile: tuple[Path, Path], args: list[str]) -> None:
    """Staged, a `.env` is in git's objects, and `git show :.env` or `git diff --cached` prints it:
    neither `-A` nor a folder stages one, new or tracked (`.gitignore` is the agent's to edit)."""
    repo, _ = hostile
    (repo / "conf").mkdir()
    (repo / "conf" / ".env.production").write_text("tracked\n")
    assert plain_git(repo, "add", "-f", "conf/.env.production").returncode == 0
    assert plain_git(repo, "commit", "-q", "--no-verify", "-m", "oops").returncode == 0
    (repo / "conf" / ".env.production").write_text("KEY=changed\n")
    (repo / "conf" / ".env").write_text("KEY=new\n")
    (repo / ".env").write_text("KEY=new\n")
    (repo / "conf" / "app.py").write_text("x = 1\n")
    out = run(GIT, make_ctx(repo), {"operation": "add", "args": args})
    assert out.ok, out.text
    staged = plain_git(repo, "diff", "--cached", "--name-only").stdout.split()
    assert not {".env", "conf/.env", "conf/.env.production"} & set(staged), staged
    if args != ["-u"]:
        assert "conf/app.py" in staged  # the rest of what was asked for is staged


def test_commit_without_message_and_add_without_paths(hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile
    with pytest.raises(ToolInputError, match="commit needs a message"):
        GIT.prepare(make_ctx(repo), {"operation": "commit"})
    with pytest.raises(ToolInputError, match="add needs paths"):
        GIT.prepare(make_ctx(repo), {"operation": "add"})


def test_permissions_and_dry_run(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    ctx = make_ctx(repo)
    status = GIT.prepare(ctx, {"operation": "status"})
    assert (status.permission, status.mutating) == ("read", False)
    commit = GIT.prepare(ctx, {"operation": "commit", "args": ["-m", "msg"]})
    assert (commit.permission, commit.mutating) == ("write", True)
    out = preview(GIT, ctx, {"operation": "commit", "args": ["-m", "msg"]})
    assert out.text == (
        "git_operation would run: git --no-pager commit --no-verify --no-gpg-sign -m msg\n"
        "(dry-run: use --tool=write to apply)"
    )
    assert list(markers.iterdir()) == []


def test_not_a_repository(tmp_path: Path) -> None:
    out = run(GIT, make_ctx(tmp_path), {"operation": "status"})
    assert not out.ok
    assert out.text == "Error: the workspace is not inside a git repository"


def test_huge_payload_is_refused_before_anything_runs(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    with pytest.raises(ToolInputError) as err:
        GIT.prepare(make_ctx(repo), {"operation": "status", "args": ["x" * 100_000] * 130})
    assert str(err.value).startswith("git_operation: input is too large (")
    assert str(err.value).endswith("bytes; the limit is 12582912 bytes)")
    assert list(markers.iterdir()) == []
