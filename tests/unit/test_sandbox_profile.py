"""Profile pieces: bwrap mount order, firejail flags, landlock rule plan, protected placeholders,
and fail-closed backend selection."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tether.core.config import SandboxSettings
from tether.core.lockfiles import lock_file
from tether.core.placeholders import recorded_placeholders
from tether.core.sandbox import BackendStatus, RunRequest, probe, select_runner
from tether.core.sandbox.bwrap import bwrap_args
from tether.core.sandbox.firejail import firejail_args
from tether.core.sandbox.landlock import READ, WRITE_FILE, handled_fs, plan_rules
from tether.core.sandbox.process import Spawn, StartMarker, run_spawn
from tether.core.sandbox.profile import (
    PLACEHOLDER_XATTR,
    check_workspace,
    ensure_confinable,
    is_within,
    masked_paths,
    pinned_protected,
    placeholder_excludes,
)
from tether.errors import SandboxError, SandboxUnavailable


def _request(ws: Path, argv: tuple[str, ...] = ("true",)) -> RunRequest:
    return RunRequest(argv=argv, script=None, cwd=ws, workspace=ws, timeout=5, max_output_bytes=100)


def test_request_needs_exactly_one_of_argv_and_script(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RunRequest(argv=("ls",), script="ls", cwd=tmp_path, workspace=tmp_path, timeout=1, max_output_bytes=1)
    with pytest.raises(ValueError, match="exactly one"):
        RunRequest(argv=None, script=None, cwd=tmp_path, workspace=tmp_path, timeout=1, max_output_bytes=1)
    script = RunRequest(None, "a | b", tmp_path, tmp_path, 1, 1)
    assert script.command_argv() == ("bash", "--noprofile", "--norc", "-c", "a | b")


def test_bwrap_mount_order(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    protected = (ws / ".git",)
    args = bwrap_args(_request(ws), protected, "bwrap")
    joined = " ".join(args)
    # Private /tmp first, then the workspace (which lives under /tmp here), then protected binds.
    assert joined.index("--tmpfs /tmp") < joined.index(f"--bind {ws} {ws}")
    assert joined.index(f"--bind {ws} {ws}") < joined.index(f"--ro-bind {ws}/.git {ws}/.git")
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop"):
        assert flag in args
    assert args[args.index("--ro-bind") + 1 : args.index("--ro-bind") + 3] == ["/", "/"]
    assert args[-2:] == ["--", "true"]


def test_bwrap_masks_come_after_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path("/var/tmp") / f"tether-unit-home-{os.getpid()}"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    try:
        monkeypatch.setenv("HOME", str(home))
        assert home / ".ssh" in masked_paths()
        args = bwrap_args(_request(home), (), "bwrap")  # the workspace is the home directory itself
        joined = " ".join(args)
        assert joined.index(f"--bind {home} {home}") < joined.index(f"--tmpfs {home}/.ssh")
    finally:
        (home / ".ssh").rmdir()
        home.rmdir()


def test_firejail_has_the_seed_flags_and_a_read_only_root(tmp_path: Path) -> None:
    args = firejail_args(_request(tmp_path), (tmp_path / ".git",), "firejail")
    for flag in ("--noprofile", "--private-tmp", "--private-dev", "--noroot", "--net=none", "--quiet"):
        assert flag in args
    assert f"--whitelist={tmp_path}" in args
    assert args.index("--read-only=/") < args.index(f"--read-write={tmp_path}")
    assert args.index(f"--read-write={tmp_path}") < args.index(f"--read-only={tmp_path}/.git")


def test_firejail_runs_the_command_under_a_wrapper_that_reports_its_exit() -> None:
    """firejail waits for every process in its namespace; the wrapper says when the command is
    done (`--deterministic-shutdown` would cost ~100 ms a run)."""
    with StartMarker() as marker:
        args = firejail_args(_request(Path("/tmp/ws")), (), "firejail", marker)
    assert "--deterministic-shutdown" not in args
    assert any('printf "e%d\\n"' in a for a in args)


def _outliving_wrapper(command: list[str], marker: StartMarker) -> Spawn:
    """What firejail does with a left-behind process: the wrapper stays after the command."""
    wrapped = marker.shell_prefix(command, report_exit=True)
    return Spawn(
        argv=["/bin/sh", "-c", '"$@"; sleep 60', "wrapper", *wrapped],
        env=dict(os.environ),
        cwd=Path("/tmp"),
        backend="test",
        marker=marker,
    )


@pytest.mark.parametrize(
    ("script", "status"),
    [
        ("exit 5", 5),
        ("kill -TERM $$", 143),
        ("printf 'e0\\n' >&{fd}; exit 3", 3),  # it never holds the marker's descriptor: no faking
    ],
)
def test_a_command_whose_wrapper_outlives_it_ends_with_its_own_status(script: str, status: int) -> None:
    with StartMarker() as marker:
        command = ["bash", "-c", script.format(fd=marker.write_fd)]
        result = run_spawn(_outliving_wrapper(command, marker), _request(Path("/tmp")), None)
    assert not result.timed_out  # the wrapper sleeps 60 s after the command; the timeout is 5 s
    assert result.exit_code == status


def test_a_wrapper_that_exits_right_after_its_command_is_not_stopped() -> None:
    """Stopping a firejail sandbox takes it ~1 s: a wrapper that exits on its own a moment after
    reporting (nothing was left behind; the usual case) must be let go, not stopped."""
    stops: list[int] = []

    def stop_if_running(pid: int) -> None:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            stops.append(pid)  # still running: this would stop it

    with StartMarker() as marker:
        wrapped = marker.shell_prefix(["bash", "-c", "exit 4"], report_exit=True)
        spawn = Spawn(
            argv=["/bin/sh", "-c", '"$@"; sleep 0.05', "wrapper", *wrapped],
            env=dict(os.environ),
            cwd=Path("/tmp"),
            backend="test",
            marker=marker,
            stop_tree=stop_if_running,
        )
        result = run_spawn(spawn, _request(Path("/tmp")), None)
    assert result.exit_code == 4
    assert stops == []


def test_firejail_refuses_paths_it_would_misparse(tmp_path: Path) -> None:
    ws = tmp_path / "a,b"
    with pytest.raises(SandboxUnavailable, match="comma"):
        firejail_args(_request(ws), (), "firejail")


def test_landlock_plan_never_grants_write_on_protected_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "README").write_text("x")
    (ws / "link").symlink_to("/etc")
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    rules = dict(plan_rules(ws, (ws / ".git", ws / ".envrc"), [secret], tmp_path / "t", 7))
    full = handled_fs(7)
    assert rules[str(ws)] == READ  # the root: read only, so .envrc cannot be created
    assert rules[str(ws / "src")] == full
    assert rules[str(ws / "README")] == full
    assert str(ws / ".git") not in rules  # inherits read from the workspace root only
    assert str(ws / "link") not in rules  # never granted through a symlink
    assert str(secret) not in rules
    assert not any(p.startswith(str(secret)) for p in rules)
    for path, rights in rules.items():
        if rights & WRITE_FILE:
            assert not path.startswith(str(ws / ".git")), path


def test_placeholders_exist_during_the_run_and_vanish_after(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    protected = (tmp_path / ".git", tmp_path / ".envrc", tmp_path / ".github" / "workflows")
    with pinned_protected(tmp_path, protected) as pinned:
        assert set(pinned.placeholders) == {tmp_path / ".envrc", tmp_path / ".github"}
        assert (tmp_path / ".envrc").is_file()
        with pinned_protected(tmp_path, protected) as inner:  # a concurrent run shares them
            assert set(inner.placeholders) == set(pinned.placeholders)
        assert (tmp_path / ".envrc").is_file()
        # listed for checkpoints, out of the sandbox's reach, until the last run is out
        assert {str(p) for p in pinned.placeholders} <= recorded_placeholders(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git"]
    assert recorded_placeholders(tmp_path) == frozenset()


def test_placeholder_with_content_is_left_alone(tmp_path: Path) -> None:
    with pinned_protected(tmp_path, (tmp_path / ".envrc",)):
        (tmp_path / ".envrc").chmod(0o644)
        (tmp_path / ".envrc").write_text("the user wrote this meanwhile\n")
    assert (tmp_path / ".envrc").read_text() == "the user wrote this meanwhile\n"


def test_paths_outside_the_workspace_are_ignored(tmp_path: Path) -> None:
    with pinned_protected(tmp_path / "ws", (tmp_path / "elsewhere",)) as pinned:
        assert pinned.paths == ()
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/ws", "/ws"),
        ("/ws/a/b", "/ws"),
        ("/ws-evil/x", "/ws"),  # a shared string prefix is not a parent
        ("/wsx", "/ws"),
        ("/ws", "/ws/a"),
        ("/", "/"),
        ("/a", "/"),
        ("/ws//a/", "/ws/"),  # pathlib's normal form
        ("a/b", "a"),
        ("a/b", "."),
        ("a", "a/b"),
        ("/a", "a"),
        ("a", "/a"),
        ("/a", "."),  # a relative root holds no absolute path
        ("a", "."),
        (".", "."),
    ],
)
def test_is_within_means_equal_or_a_parent(path: str, root: str) -> None:
    """The definition it replaced for speed: `path == root or root in path.parents`."""
    p, r = Path(path), Path(root)
    assert is_within(p, r) == (p == r or r in p.parents)


@pytest.fixture
def no_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend every backend failed its probe (the probe cache is what select_runner consults)."""
    fake = {name: BackendStatus(name, False, f"{name} broken for the test") for name in probe.STRENGTH_ORDER}
    fake["none"] = BackendStatus("none", True, "no isolation")
    monkeypatch.setattr(probe, "_cache", fake)


@pytest.mark.usefixtures("no_backends")
def test_auto_with_nothing_working_fails_closed() -> None:
    with pytest.raises(SandboxUnavailable, match="no sandbox backend works here") as info:
        select_runner(SandboxSettings(backend="auto"))
    assert 'backend = "none"' in str(info.value)


@pytest.mark.usefixtures("no_backends")
@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_configured_backend_that_cannot_start_fails_closed(backend: str) -> None:
    with pytest.raises(SandboxUnavailable, match=f"{backend} broken for the test"):
        select_runner(SandboxSettings(backend=backend))  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_backends")
def test_none_only_when_configured() -> None:
    assert select_runner(SandboxSettings(backend="none")).name == "none"


def test_missing_binary_is_reported_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.core.sandbox import firejail

    monkeypatch.setenv("PATH", "/nonexistent")
    firejail.find_firejail.cache_clear()
    try:
        status = probe._probe("firejail")
    finally:
        firejail.find_firejail.cache_clear()
    assert not status.available
    assert "not installed" in status.reason


def test_probe_results_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_probe(name: str) -> BackendStatus:
        calls.append(name)
        return BackendStatus(name, True, "ok")

    monkeypatch.setattr(probe, "_cache", {})
    monkeypatch.setattr(probe, "_probe", fake_probe)
    probe.probe_backend("landlock")
    probe.probe_backend("landlock")
    assert calls == ["landlock"]
    probe.probe_backend("landlock", refresh=True)
    assert calls == ["landlock", "landlock"]


def test_placeholder_excludes_are_anchored_and_literal(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    ws = tmp_path / "sub"
    ws.mkdir()
    patterns = placeholder_excludes(ws, (ws / ".envrc", ws / "we*ird name"))
    assert patterns == ["/sub/.envrc", "/sub/we\\*ird\\ name"]
    assert placeholder_excludes(Path("/"), ()) == []


def test_workspaces_that_cannot_be_confined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "u"
    (home / ".ssh").mkdir(parents=True)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert check_workspace(Path("/"), Path("/")) == "the workspace is the root directory"
    assert "contains the home directory" in str(check_workspace(home, home))
    assert "contains the home directory" in str(check_workspace(tmp_path / "home", tmp_path / "home"))
    assert "inside the protected secret path" in str(check_workspace(home / ".ssh", home / ".ssh"))
    assert "outside the workspace" in str(check_workspace(home / "project", tmp_path))
    assert check_workspace(home / "project", home / "project") is None
    with pytest.raises(SandboxError, match="refusing to run"):
        ensure_confinable(home, home)


def test_a_workspace_given_unresolved_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The protected paths are found under the resolved root while the backends bind the path as
    given: through a symlink or relative to the current directory, none would be pinned."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    for given in (tmp_path / "link", Path("real"), tmp_path / "real" / ".." / "real"):
        assert "not an absolute path with its symbolic links resolved" in str(check_workspace(given, real))
    assert check_workspace(real, real) is None
    with pytest.raises(SandboxError, match="refusing to run"):
        ensure_confinable(tmp_path / "link", real)


def test_unpinnable_protected_path_refuses(tmp_path: Path) -> None:
    too_long = tmp_path / ("x" * 300)  # ENAMETOOLONG, whoever we are (root ignores permissions)
    with pytest.raises(SandboxError, match="cannot pin"), pinned_protected(tmp_path, (too_long,)):
        pass
    assert list(tmp_path.iterdir()) == []


def test_leftover_marked_placeholders_are_adopted_and_removed(tmp_path: Path) -> None:
    """After a crash: a marked empty file is ours and goes; the user's empty file stays."""
    leftover = tmp_path / ".envrc"
    leftover.write_bytes(b"")
    try:
        os.setxattr(leftover, PLACEHOLDER_XATTR, b"1")
    except OSError as exc:
        pytest.skip(f"this filesystem has no user xattrs: {exc}")
    leftover.chmod(0o444)  # as the sandbox leaves it
    users = tmp_path / ".npmrc"
    users.write_bytes(b"")
    with pinned_protected(tmp_path, (leftover, users)) as pinned:
        assert pinned.placeholders == (leftover,)
    assert not leftover.exists()
    assert users.exists()


def test_a_read_only_run_out_last_removes_the_others_placeholders(tmp_path: Path) -> None:
    """Read-only runs hold the lock too, with no placeholder of their own: the last one out must
    still remove the ones a writable run made, or a checkpoint later records them as files."""
    with pinned_protected(tmp_path, ()):  # the read-only run, started first, ends last
        with pinned_protected(tmp_path, (tmp_path / ".envrc",)) as pinned:
            assert pinned.placeholders == (tmp_path / ".envrc",)
        assert (tmp_path / ".envrc").exists()  # the read-only run still holds the lock
    assert list(tmp_path.iterdir()) == []
    assert recorded_placeholders(tmp_path) == frozenset()


def test_runs_in_many_threads_list_their_placeholders_without_refusing(tmp_path: Path) -> None:
    """One registry per workspace, written by every run: concurrent writers must neither collide
    on a temp file nor refuse to run."""
    errors: list[BaseException] = []

    def runs() -> None:
        try:
            for _ in range(40):
                with pinned_protected(tmp_path, (tmp_path / ".envrc", tmp_path / ".vscode")):
                    pass
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=runs) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert list(tmp_path.iterdir()) == []


def test_lock_files_take_any_path(tmp_path: Path) -> None:
    odd = os.fsdecode(b"/tmp/odd-\xff\nworkspace")  # not UTF-8: a valid Linux path all the same
    assert lock_file(odd) != lock_file("/tmp/odd")
