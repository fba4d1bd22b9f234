"""The environment allowlist and the hardened git configuration."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from tether.core.sandbox.base import RunRequest
from tether.core.sandbox.env import (
    hardened_git_env,
    path_dirs_inside,
    path_tools_inside,
    rejected_passthrough,
    request_env,
    sandbox_env,
)
from tether.core.sandbox.none import NoSandboxRunner


def _pairs(env: dict[str, str]) -> dict[str, str]:
    count = int(env["GIT_CONFIG_COUNT"])
    return {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(count)}


def test_only_allowlisted_names_pass() -> None:
    source = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "TZ": "UTC",
        "USER": "u",
        "ANTHROPIC_API_KEY": "sk-ant",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "GITHUB_TOKEN": "ghp",
        "SSH_AUTH_SOCK": "/run/ssh",
        "LD_PRELOAD": "/evil.so",
        "MY_TOOL_HOME": "/opt/tool",
        "MY_API_KEY": "k",
    }
    env = sandbox_env(("MY_TOOL_HOME", "MY_API_KEY"), source=source)
    plain = {k: v for k, v in env.items() if not k.startswith(("GIT_", "PAGER"))}
    assert plain == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "TZ": "UTC",
        "USER": "u",
        "MY_TOOL_HOME": "/opt/tool",
    }
    assert rejected_passthrough(("MY_TOOL_HOME", "MY_API_KEY", "GH_TOKEN")) == ["MY_API_KEY", "GH_TOKEN"]


def test_path_has_a_default() -> None:
    assert sandbox_env(source={})["PATH"].startswith("/usr/local/sbin")


def test_path_loses_entries_that_resolve_inside_the_working_directory(tmp_path: Path) -> None:
    """`.`, `bin`, an empty entry and the workspace root would run a file the agent wrote as `git`."""
    ws = tmp_path.resolve()
    path = f".:bin::/usr/bin:{ws}:{ws}/.venv/bin:./node_modules/.bin:/bin"
    env = sandbox_env(source={"PATH": path}, workspace=ws)
    assert env["PATH"] == f"/usr/bin:{ws}/.venv/bin:/bin"
    assert sandbox_env(source={"PATH": ".:"})["PATH"].startswith("/usr/local/sbin")


def test_path_dirs_inside_the_workspace_are_listed_to_keep_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / "link").symlink_to(ws / ".venv" / "bin")
    path = f"/usr/bin:{ws}:{ws}/.venv/bin:{ws}/link:{ws}/missing/bin:{tmp_path}/other:tools"
    inside = path_dirs_inside(ws, {"PATH": path})
    assert inside == [(ws / ".venv" / "bin").resolve(), (ws / "missing" / "bin").resolve()]


def test_hardened_git_env_neutralises_program_keys() -> None:
    env = hardened_git_env()
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    pairs = _pairs(env)
    assert pairs["core.fsmonitor"] == "false"
    assert pairs["core.hooksPath"] == "/dev/null"
    assert pairs["core.pager"] == "cat"
    assert pairs["core.sshCommand"] == "false"
    assert pairs["credential.helper"] == ""


def test_repository_drivers_are_found_and_emptied(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for key, value in [
        ("filter.lfs.clean", "evil"),
        ("filter.Weird-Name.process", "evil"),
        ("diff.bin.textconv", "evil"),
        ("merge.ours.driver", "evil"),
        ("diff.external", "evil"),
        ("user.name", "not a driver"),
    ]:
        subprocess.run(["git", "-C", str(tmp_path), "config", key, value], check=True)
    pairs = _pairs(hardened_git_env(tmp_path))
    for key in (
        "filter.lfs.clean",
        "filter.Weird-Name.process",
        "diff.bin.textconv",
        "merge.ours.driver",
        "diff.external",
    ):
        assert pairs[key] == "", key
    assert "user.name" not in pairs


def test_git_really_runs_no_repository_program(tmp_path: Path) -> None:
    """Real git with the hardened env: fsmonitor, pager and a clean filter stay unrun."""
    ws = tmp_path
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("a\n")
    for key, value in [
        ("core.fsmonitor", f"touch {ws}/ran-fsmonitor; false"),
        ("core.pager", f"touch {ws}/ran-pager; cat"),
        ("filter.x.clean", f"touch {ws}/ran-filter; cat"),
    ]:
        subprocess.run(["git", "-C", str(ws), "config", key, value], check=True)
    (ws / ".gitattributes").write_text("*.txt filter=x\n")
    env = sandbox_env(source={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, workspace=ws)
    for cmd in (["status"], ["-p", "log"], ["add", "a.txt"]):
        subprocess.run(["git", "-C", str(ws), *cmd], env=env, capture_output=True, check=False)
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith("ran-")) == []


def test_git_does_not_use_a_bare_repository_committed_inside_the_project(tmp_path: Path) -> None:
    """A bare repo in the tree brings its own config; `cd evil.git && git log` must not read it."""
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    bare = ws / "evil.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    subprocess.run(
        ["git", "-C", str(bare), "config", "core.pager", f"touch {tmp_path}/ran-pager; cat"], check=True
    )
    env = sandbox_env(source={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, workspace=ws)
    done = subprocess.run(
        ["git", "-p", "log"], cwd=bare, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "safe.bareRepository" in done.stderr
    assert not (tmp_path / "ran-pager").exists()


def test_a_required_filter_is_emptied_without_breaking_git(tmp_path: Path) -> None:
    """Emptying a `required` filter would make git abort every add: it is marked not required."""
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(
        ["git", "-C", str(ws), "config", "filter.lfsish.clean", f"touch {tmp_path}/ran; cat"], check=True
    )
    subprocess.run(["git", "-C", str(ws), "config", "filter.lfsish.required", "true"], check=True)
    (ws / ".gitattributes").write_text("*.bin filter=lfsish\n")
    (ws / "a.bin").write_text("data\n")
    env = sandbox_env(source={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, workspace=ws)
    added = subprocess.run(
        ["git", "add", "a.bin"], cwd=ws, env=env, capture_output=True, text=True, check=False
    )
    assert added.returncode == 0, added.stderr
    assert not (tmp_path / "ran").exists()


def test_package_caches_go_to_the_commands_scratch_space_and_nowhere_without_one(tmp_path: Path) -> None:
    """Under `backend = "none"` there is no private space: `/tmp/npm-cache` could be another user's."""
    request = RunRequest(
        argv=("true",),
        script=None,
        cwd=tmp_path,
        workspace=tmp_path,
        timeout=5,
        max_output_bytes=100,
        scratch_env=(("npm_config_cache", "npm-cache"),),
    )
    assert request_env(request)["npm_config_cache"] == "/tmp/npm-cache"  # a private /tmp (bwrap)
    assert request_env(request, scratch="/run/x")["npm_config_cache"] == "/run/x/npm-cache"
    assert "npm_config_cache" not in request_env(request, scratch=None)
    shown = NoSandboxRunner().run(replace(request, argv=("sh", "-c", "echo ${npm_config_cache:-unset}")))
    assert shown.stdout.strip() == "unset"


def test_an_environment_on_path_is_protected_whole_whatever_its_kind(tmp_path: Path) -> None:
    """A conda or pixi environment has no pyvenv.cfg; its site-packages run first all the same."""
    conda = tmp_path / ".pixi" / "envs" / "default"
    (conda / "bin").mkdir(parents=True)
    (conda / "conda-meta").mkdir()
    plain = tmp_path / "tools" / "bin"
    plain.mkdir(parents=True)
    found = path_tools_inside(tmp_path, {"PATH": f"{conda / 'bin'}:{plain}:/usr/bin"})
    assert conda in found
    assert plain in found  # not an environment: the folder itself
