"""bash_command end to end: the real gate, the real policy, the real sandbox (auto backend)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tether.core.config import EffectiveConfig, SandboxSettings
from tether.core.gate import Gate
from tether.core.policy import PolicySettings
from tether.core.sandbox import auto_choice
from tether.core.session import FaceOverrides, open_session

MAKEFILE = """\
slow:
\techo started; sleep 60
big:
\thead -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo END
fail:
\techo failing >&2; exit 3
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "Makefile").write_text(MAKEFILE)
    (tmp_path / "notes.txt").write_text("hello\n")
    return tmp_path.resolve()


def _gate(ws: Path, permissions: str = "all", **sandbox: object) -> Gate:
    # `make` targets are a user allow rule (command_whitelist), as a user would configure them.
    config = replace(
        EffectiveConfig(),
        sandbox=replace(SandboxSettings(), **sandbox),  # type: ignore[arg-type]
        policy=PolicySettings(extra_allowed=("make slow", "make big", "make fail")),
    )
    return open_session(ws, FaceOverrides(permissions=permissions), config=config).gate


def test_read_command_runs_with_read_permission(ws: Path) -> None:
    result = _gate(ws, "read").call("bash_command", {"command": "cat notes.txt | wc -l", "reason": "count"})
    assert result.ok, result.text
    assert result.result["stdout"].strip() == "1"
    assert result.result["exit_code"] == 0


def test_command_mode_without_permission_is_a_dry_run(ws: Path) -> None:
    result = _gate(ws, "read").call("bash_command", {"command": "make fail", "reason": "try"})
    assert result.dry_run
    assert result.text.startswith("Dry-run: would execute command: make fail\nReason: try\n")


def test_failure_shape(ws: Path) -> None:
    result = _gate(ws).call("bash_command", {"command": "make fail", "reason": "r"})
    assert not result.ok
    assert result.result["error"] == "command failed: exit code 2"
    assert "failing" in result.result["stderr"]


def test_timeout_shape_and_partial_output(ws: Path) -> None:
    result = _gate(ws, command_timeout=2.0).call("bash_command", {"command": "make slow", "reason": "r"})
    assert not result.ok
    assert result.result["error"] == "command timeout after 2s"
    assert result.result["exit_code"] == -1
    assert "started" in result.result["stdout"]


def test_truncation_shape(ws: Path) -> None:
    result = _gate(ws, max_output_bytes=10_000).call("bash_command", {"command": "make big", "reason": "r"})
    assert result.result["stdout_truncated"] is True
    assert result.result["suggestion"] == "Use output filtering or pagination"
    assert result.result["stdout"].rstrip().endswith("END")
    assert len(result.result["stdout"]) < 10_200


def test_git_status_inside_does_not_show_protected_placeholders(ws: Path) -> None:
    result = _gate(ws).call("bash_command", {"command": "git status --short", "reason": "r"})
    assert result.ok, result.text
    assert sorted(result.result["stdout"].split()) == ["??", "??", "Makefile", "notes.txt"]
    # … and nothing was left behind on disk (the gate may add its own .tether directory).
    left = sorted(p.name for p in ws.iterdir() if p.name != ".tether")
    assert left == [".git", "Makefile", "notes.txt"]


def test_path_dirs_inside_the_workspace_cannot_be_written(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An activated venv's bin/ stays usable, but a planted `git` there would outrank the real one.
    The policy refuses the redirect, and the sandbox holds for what the policy cannot see."""
    tools = ws / "tools"
    tools.mkdir()
    (ws / "Makefile").write_text("plant:\n\techo planted > tools/git\n")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    config = replace(EffectiveConfig(), policy=PolicySettings(extra_allowed=("make plant",)))
    gate = open_session(ws, FaceOverrides(permissions="all"), config=config).gate
    assert gate.check_command("echo planted > tools/git")["rule"] == "path.protected"
    assert not gate.call("write_file", {"path": "tools/git", "content": "#!/bin/sh\n"}).ok
    result = gate.call("bash_command", {"command": "make plant"})
    assert not result.ok
    assert not (tools / "git").exists()
    assert gate.call("bash_command", {"command": "echo fine > notes.txt"}).ok


def test_a_workspace_virtualenv_is_protected_whole(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .pth file in the venv's site-packages runs in every python the user starts from it."""
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (ws / ".venv" / "bin").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}:{os.environ['PATH']}")
    gate = _gate(ws, "all")
    planted = gate.call("write_file", {"path": ".venv/lib/python3.11/site-packages/zz.pth", "content": "x\n"})
    assert not planted.ok
    assert "protected" in planted.text
    assert not (site / "zz.pth").exists()


def test_a_path_dir_inside_the_workspace_is_not_carried_away_with_its_parent(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mv tools tools.old` took the read-only mount of tools/bin along; a new tools/bin/git was free."""
    (ws / "tools" / "bin").mkdir(parents=True)
    (ws / "Makefile").write_text("plant:\n\tmv tools old; mkdir -p tools/bin; echo planted > tools/bin/git\n")
    monkeypatch.setenv("PATH", f"{ws / 'tools' / 'bin'}:{os.environ['PATH']}")
    config = replace(EffectiveConfig(), policy=PolicySettings(extra_allowed=("make plant",)))
    open_session(ws, FaceOverrides(permissions="all"), config=config).gate.call(
        "bash_command", {"command": "make plant"}
    )
    assert not (ws / "tools" / "bin" / "git").exists()
    assert not (ws / "old").exists()


def test_a_protected_path_that_is_a_symlink_refuses_writing_commands_with_a_way_out(
    ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A mount cannot pin `.envrc -> ~/x`: a command could swap it for a file that direnv then runs."""
    outside = tmp_path_factory.mktemp("dotfiles") / "envrc"
    outside.write_text("export A=1\n")
    (ws / ".envrc").symlink_to(outside)
    gate = _gate(ws, "all", backend="bubblewrap")
    result = gate.call("bash_command", {"command": "make fail"})
    assert not result.ok
    assert "the protected path .envrc is a symbolic link" in result.text
    assert "Replace the link" in result.text
    assert gate.call("bash_command", {"command": "cat notes.txt"}).ok  # read-only commands still run
    assert (ws / ".envrc").is_symlink()


REWRITE_SUBMODULE_GIT = """\
for path in ("lib/.git", "later/.git"):
    try:
        with open(path, "w") as f:
            f.write("gitdir: ../evil\\n")  # the user's next `git status` would obey ../evil/config
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.errno)
with open("lib/new.txt", "w") as f:  # the submodule's own files stay the agent's to edit
    f.write("x\\n")
"""


def test_a_command_cannot_repoint_a_submodules_git(ws: Path) -> None:
    """No approval needed before: any program the policy allows (here a script in workspace mode)
    could point `lib/.git` at a gitdir it made, whose fsmonitor the user's `git status` runs."""
    origin = ws.parent / f"{ws.name}-origin"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    subprocess.run(
        ["git", "-C", str(origin), "commit", "-q", "--allow-empty", "-m", "s"], check=True, env=env
    )
    for name in ("lib", "later"):
        subprocess.run(
            [
                "git",
                "-C",
                str(ws),
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                str(origin),
                name,
            ],
            check=True,
            env=env,
        )
    subprocess.run(["git", "-C", str(ws), "commit", "-q", "-m", "submodules"], check=True, env=env)
    subprocess.run(["git", "-C", str(ws), "submodule", "deinit", "-q", "-f", "later"], check=True)
    assert list((ws / "later").iterdir()) == []  # not checked out: an empty directory
    before = (ws / "lib" / ".git").read_text()
    (ws / "rewrite.py").write_text(REWRITE_SUBMODULE_GIT)
    result = _gate(ws, "read,command,workspace").call("bash_command", {"command": "python3 rewrite.py"})
    assert result.ok, (result.text, result.result)
    assert "wrote" not in result.result["stdout"], result.result["stdout"]
    assert (ws / "lib" / ".git").read_text() == before
    assert not (ws / "later" / ".git").exists()
    assert (ws / "lib" / "new.txt").read_text() == "x\n"


@pytest.mark.parametrize(
    ("init", "config_rel"),
    [
        (("app",), "app/.git/config"),
        # `--separate-git-dir`: `api/.git` is a file naming `.api-git`, where the config lives
        (("--separate-git-dir", "clients/.api-git", "clients/api"), "clients/.api-git/config"),
    ],
)
def test_a_command_cannot_write_a_repository_kept_below_the_workspace(
    tmp_path: Path, init: tuple[str, ...], config_rel: str
) -> None:
    """A folder of projects opened as one workspace: no `.git` at the top, `app/.git` below. Its
    config must stay out of reach, or the user's `git status` in `app` runs what it names."""
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")
    ws = (tmp_path / "projects").resolve()
    ws.mkdir()
    args = [a if a.startswith("-") else str(ws / a) for a in init]
    subprocess.run(["git", "init", "-q", *args], check=True)
    config = ws / config_rel
    before = config.read_text()
    (ws / "plant.py").write_text(
        "try:\n"
        f"    with open({config_rel!r}, 'a') as f:\n"
        "        f.write('[core]\\n\\tfsmonitor = \"touch /tmp/x; false\"\\n')\n"
        "    print('wrote')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    result = _gate(ws, "read,command,workspace").call("bash_command", {"command": "python3 plant.py"})
    assert result.ok, (result.text, result.result)
    assert "refused" in result.result["stdout"], result.result["stdout"]
    assert config.read_text() == before


PLANT_DEEP = """\
for path in ("clients/acme/api/.git/config", "clients/acme/api/.git/hooks/pre-commit"):
    try:
        with open(path, "a") as f:
            f.write("[core]\\n\\tfsmonitor = \\"touch /tmp/x; false\\"\\n")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.errno)
with open("clients/acme/api/notes.txt", "w") as f:  # the repository's files stay the agent's to edit
    f.write("x\\n")
"""


@pytest.mark.parametrize("top", ["repository", "folder", "ignored"])
def test_a_command_cannot_write_a_repository_deeper_than_the_look(tmp_path: Path, top: str) -> None:
    """Three levels down (the sandbox's look once stopped at two): its `.git` is read-only all the
    same — inside the user's repository (also where its .gitignore hides it) and in a folder of
    projects; on the first call and the next."""
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")
    ws = (tmp_path / "projects").resolve()
    ws.mkdir()
    if top != "folder":
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
    if top == "ignored":  # the user's .gitignore hides it; checkpoints cover ignored files too
        (ws / ".gitignore").write_text("clients/\n")
    deep = ws / "clients" / "acme" / "api"
    subprocess.run(["git", "init", "-q", str(deep)], check=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "-C", str(deep), "commit", "-q", "--allow-empty", "-m", "s"], check=True, env=env)
    config = deep / ".git" / "config"
    before = config.read_text()
    (ws / "plant.py").write_text(PLANT_DEEP)
    gate = _gate(ws, "read,command,workspace")
    for _ in range(2):  # the first checkpoint, then an incremental one
        result = gate.call("bash_command", {"command": "python3 plant.py"})
        assert result.ok, (result.text, result.result)
        assert "wrote" not in result.result["stdout"], result.result["stdout"]
    assert config.read_text() == before
    assert not (deep / ".git" / "hooks" / "pre-commit").exists()
    assert (deep / "notes.txt").read_text() == "x\n"
