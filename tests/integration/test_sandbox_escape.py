"""Adversarial suite: through `tether sandbox` (policy bypassed), on every backend that runs here.

Each test is something a command chosen by a model could try once the policy has been fooled. The
sandbox must hold on its own. Everything is real: real bwrap/firejail/landlock, real processes,
real sockets. The suite runs as the current user and, when we are root, again as an unprivileged
user created for the purpose (skipped with the reason printed when that is impossible).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import site
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.core.sandbox import STRENGTH_ORDER, probe_backend

UNPRIV_USER = "tether-sbx-test"


@dataclass
class Runner:
    """Runs `tether sandbox` as a given user with a fake HOME holding secrets."""

    backend: str
    user: str | None
    workspace: Path
    home: Path
    outside: Path
    secret: str
    python: str  # an interpreter this user may execute
    pythonpath: str | None

    def env(self) -> dict[str, str]:
        extra = {"PYTHONPATH": self.pythonpath} if self.pythonpath else {}
        return {
            **extra,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-test-" + self.secret,
            "AWS_SECRET_ACCESS_KEY": "aws-" + self.secret,
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
        }

    def popen(self, script: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self._argv(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env()
        )

    def _argv(self, script: str) -> list[str]:
        argv = [self.python, "-m", "tether", "sandbox", "--workspace", str(self.workspace)]
        argv += ["--backend", self.backend]
        argv += ["--", "bash", "--noprofile", "--norc", "-c", script]
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        return argv

    def run(self, script: str, *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._argv(script), capture_output=True, text=True, env=self.env(), timeout=timeout, check=False
        )


def _unprivileged_user() -> str | None:
    """The test user's name, creating it when root; None (with the reason) when impossible."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(UNPRIV_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            return None
        subprocess.run(["useradd", "--system", "--no-create-home", UNPRIV_USER], check=True)
    return UNPRIV_USER


def _python_for(user: str | None) -> tuple[str, str | None]:
    """An interpreter `user` can run Tether with: ours, or the system one of the same version.

    Our interpreter may live under a home directory other users cannot enter (pyenv under /root);
    then the same-version system Python runs the same code with our source and site-packages.
    """
    if user is None:
        return sys.executable, None
    ok = subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", "import tether"], check=False)
    if ok.returncode == 0:
        return sys.executable, None
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.access(system, os.X_OK):
        pytest.skip(f"{user} cannot execute {sys.executable} and there is no {system}")
    import tether

    paths = [str(Path(tether.__file__).parent.parent), *site.getsitepackages()]
    return system, os.pathsep.join(paths)


def _backend_or_skip(name: str, user: str | None, python: str, pythonpath: str | None) -> None:
    status = probe_backend(name)
    if not status.available:
        pytest.skip(f"backend {name} cannot run here: {status.reason}")
    if user is not None:
        # Probe again as that user: user namespaces or setuid helpers may differ per user.
        env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent"}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        probe = subprocess.run(
            ["runuser", "-u", user, "--", python, "-m", "tether", "doctor", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if f'"{name}": {{"available": true' not in probe.stdout:
            pytest.skip(
                f"backend {name} cannot run as {user}: {probe.stdout.strip() or probe.stderr.strip()}"
            )


@pytest.fixture(params=STRENGTH_ORDER)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["current-user", "unprivileged"])
def who(request: pytest.FixtureRequest) -> str | None:
    if request.param == "current-user":
        return None
    if os.geteuid() != 0:
        pytest.skip("not root: cannot create an unprivileged user (the current-user run covers it)")
    user = _unprivileged_user()
    if user is None:
        pytest.skip("useradd is not available to create an unprivileged test user")
    return user


@pytest.fixture(scope="session")
def traversable_checkout() -> Iterator[None]:
    """Let other users traverse (not list) the directories above our source and site-packages.

    A checkout under a private directory (`mktemp -d` is 0700, as a CI runner may use) would
    otherwise hide Tether from the unprivileged user, and the whole suite would skip as that user.
    The modes are restored afterwards.
    """
    import tether

    roots = [Path(tether.__file__).parent, *map(Path, site.getsitepackages()), Path(sys.executable).parent]
    changed: dict[Path, int] = {}
    for root in roots:
        for directory in [root, *root.parents]:
            mode = directory.stat().st_mode
            if directory not in changed and not mode & stat.S_IXOTH:
                changed[directory] = mode
                directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    try:
        yield
    finally:
        for directory, mode in changed.items():
            directory.chmod(stat.S_IMODE(mode))


@pytest.fixture
def sbx(backend: str, who: str | None, request: pytest.FixtureRequest) -> Iterator[Runner]:
    if who is not None and os.geteuid() == 0:
        request.getfixturevalue("traversable_checkout")
    python, pythonpath = _python_for(who)
    _backend_or_skip(backend, who, python, pythonpath)
    # Not under /tmp: bwrap and firejail give a private /tmp, which would make "outside" trivially safe.
    base = Path(f"/var/tmp/tether-escape-{secrets.token_hex(4)}")
    base.mkdir(mode=0o755)
    try:
        ws, home, outside = base / "ws", base / "home", base / "outside"
        for d in (ws, home, outside):
            d.mkdir()
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        (ws / "src.txt").write_text("source\n")
        secret = secrets.token_hex(8)
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_ed25519").write_text(f"PRIVATE-KEY-{secret}\n")
        (home / ".netrc").write_text(f"machine example.com password netrc-{secret}\n")
        (home / ".config" / "tether").mkdir(parents=True)
        (home / ".config" / "tether" / "config.toml").write_text(f"# token-{secret}\n")
        if who is not None:
            uid, gid = pwd.getpwnam(who).pw_uid, pwd.getpwnam(who).pw_gid
            for root, dirs, files in os.walk(base):
                for name in dirs + files:
                    os.chown(os.path.join(root, name), uid, gid)
            os.chown(base, uid, gid)
        yield Runner(backend, who, ws, home, outside, secret, python, pythonpath)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_write_inside_workspace_works(sbx: Runner) -> None:
    (sbx.workspace / "sub").mkdir()
    if sbx.user is not None:
        os.chown(sbx.workspace / "sub", pwd.getpwnam(sbx.user).pw_uid, -1)
    proc = sbx.run(
        "echo edited >> src.txt && echo hello > sub/new.txt && mkdir -p sub/dir && echo x > sub/dir/f "
        "&& mv sub/dir/f sub/dir/g && rm sub/dir/g && cat sub/new.txt"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    assert (sbx.workspace / "src.txt").read_text() == "source\nedited\n"
    assert (sbx.workspace / "sub" / "new.txt").read_text() == "hello\n"
    assert (sbx.workspace / "sub" / "dir").is_dir()
    assert f"sandbox backend: {sbx.backend}" in proc.stderr


def test_new_top_level_files(sbx: Runner) -> None:
    """Namespaced backends allow them; Landlock cannot (see docs/sandbox.md) and must refuse."""
    proc = sbx.run("echo hello > new.txt")
    if sbx.backend == "landlock":
        assert proc.returncode != 0
        assert not (sbx.workspace / "new.txt").exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert (sbx.workspace / "new.txt").read_text() == "hello\n"


def test_write_outside_workspace_fails(sbx: Runner) -> None:
    proc = sbx.run(f"echo pwned > {sbx.outside}/x; echo pwned > {sbx.workspace}/../pwned; true")
    assert not (sbx.outside / "x").exists()
    assert not (sbx.workspace.parent / "pwned").exists()
    assert "backend" in proc.stderr


@pytest.mark.parametrize("target", ["/etc/tether-pwned", "/usr/tether-pwned", "/var/tmp/tether-pwned"])
def test_write_to_system_paths_fails(sbx: Runner, target: str) -> None:
    proc = sbx.run(f"echo pwned > {target}; echo ran")
    assert "ran" in proc.stdout
    # firejail answers a write under /var/tmp with a throw-away tmpfs: what matters is the host.
    assert not Path(target).exists()


@pytest.mark.parametrize(
    "target", ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/sys/kernel/uevent_helper"]
)
def test_kernel_settings_cannot_be_opened_for_writing(sbx: Runner, target: str) -> None:
    """As root, an open(O_WRONLY) on a sysctl is enough to later set e.g. core_pattern (host root).

    `: >` opens for writing without writing anything, so the test itself changes nothing."""
    if not Path(target).exists():
        pytest.skip(f"{target} does not exist on this kernel")
    proc = sbx.run(f": > {target} && echo OPENED-FOR-WRITING; exit 0")
    assert "OPENED-FOR-WRITING" not in proc.stdout


def test_write_to_home_fails(sbx: Runner) -> None:
    proc = sbx.run('echo pwned > "$HOME/pwned"; echo "alias ls=evil" >> "$HOME/.bashrc"; exit 0')
    assert proc.returncode == 0
    assert not (sbx.home / "pwned").exists()
    assert not (sbx.home / ".bashrc").exists()


@pytest.mark.parametrize(
    "attack",
    [
        "echo evil > .git/hooks/pre-commit",  # protected directory, new file
        "echo evil > .git/hooks/new-file",
        "echo '[core] fsmonitor = evil' >> .git/config",  # protected, existing file
        "mkdir -p .git/hooks/sub",
        "mv .git .git-moved",  # move the protected directory away ...
        "rm -rf .git",
        "echo 'export X=1' > .envrc",  # protected, does not exist yet
        "mkdir .vscode && echo '{}' > .vscode/settings.json",
        "ln -s /tmp .tether",
    ],
)
def test_protected_paths_cannot_be_written(sbx: Runner, attack: str) -> None:
    before = sorted(p.name for p in sbx.workspace.iterdir())
    config_before = (sbx.workspace / ".git" / "config").read_text()
    sbx.run(attack)
    git = sbx.workspace / ".git"
    assert git.is_dir()
    assert not (git / "hooks" / "pre-commit").exists()
    assert not (git / "hooks" / "new-file").exists()
    assert not (git / "hooks" / "sub").exists()
    assert (git / "config").read_text() == config_before
    # Nothing left behind: not the attack's files, not our placeholders for missing protected paths.
    assert sorted(p.name for p in sbx.workspace.iterdir()) == before


def test_a_protected_path_is_not_carried_away_with_its_parent(sbx: Runner) -> None:
    """A read-only mount guards a place, not a name: renaming the parent took the mount along, and a
    fresh `node_modules/.bin` could then be filled with programs the user's PATH would find."""
    modules = sbx.workspace / "node_modules"
    modules.mkdir()
    if sbx.user is not None:
        os.chown(modules, pwd.getpwnam(sbx.user).pw_uid, -1)
    sbx.run("mv node_modules moved; mkdir -p node_modules/.bin && echo evil > node_modules/.bin/tsc; exit 0")
    assert not (modules / ".bin" / "tsc").exists()
    assert sorted(p.name for p in sbx.workspace.iterdir()) == [".git", "node_modules", "src.txt"]


def test_concurrent_runs_keep_each_others_protection(sbx: Runner) -> None:
    """Run A pins the placeholders, run B starts and shares them, A ends first: B must stay pinned.

    (Removing a placeholder that another sandbox still has mounted detaches that mount.)"""
    sub = sbx.workspace / "sub"
    sub.mkdir()
    if sbx.user is not None:
        os.chown(sub, pwd.getpwnam(sbx.user).pw_uid, -1)

    def wait_for(name: str, proc: subprocess.Popen[str]) -> None:
        for _ in range(1200):
            if (sub / name).exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert (sub / name).exists(), proc.communicate()

    wait = "while [ ! -e sub/{0} ]; do sleep 0.05; done"
    first = sbx.popen(f"touch sub/a-started; {wait.format('a-go')}")
    second = None
    try:
        wait_for("a-started", first)
        second = sbx.popen(f"touch sub/b-started; {wait.format('b-go')}; echo evil > .envrc; true")
        wait_for("b-started", second)
        (sub / "a-go").touch()
        first.communicate(timeout=60)  # A is done while B is still inside its sandbox
        (sub / "b-go").touch()
        out = second.communicate(timeout=60)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
    envrc = sbx.workspace / ".envrc"
    assert not envrc.exists(), (envrc.read_bytes() if envrc.is_file() else "?", out)
    assert sorted(p.name for p in sbx.workspace.iterdir()) == [".git", "src.txt", "sub"]


def test_masked_home_files_cannot_be_read(sbx: Runner) -> None:
    proc = sbx.run(
        'cat "$HOME/.ssh/id_ed25519"; cat "$HOME/.netrc"; cat "$HOME/.config/tether/config.toml"; '
        'grep -r . "$HOME/.ssh" "$HOME/.config" 2>/dev/null; exit 0'
    )
    assert sbx.secret not in proc.stdout
    assert sbx.secret not in proc.stderr


def test_secrets_in_environment_are_not_passed(sbx: Runner) -> None:
    # Also walk up the process tree: the Tether process that started the sandbox holds the keys.
    proc = sbx.run(
        "env; p=$$; for i in 1 2 3 4 5; do p=$(cut -d' ' -f4 /proc/$p/stat 2>/dev/null) || break; "
        "[ -n \"$p\" ] && [ \"$p\" != 0 ] || break; tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null; done; "
        "for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null; done; exit 0"
    )
    assert proc.returncode == 0
    assert sbx.secret not in proc.stdout
    assert "GIT_CONFIG_NOSYSTEM=1" in proc.stdout


def test_no_capabilities_inside(sbx: Runner) -> None:
    """As root, a capability is an escape on its own (init_module, sysctls, mount)."""
    proc = sbx.run("grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status")
    values = [line.split()[1] for line in proc.stdout.splitlines()]
    assert len(values) == 4
    assert set(values) == {"0000000000000000"}, proc.stdout


def test_tcp_to_loopback_port_fails(sbx: Runner) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    try:
        proc = sbx.run(
            f"{sbx.python} -I -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)"
            f"; print('CONNECTED')\"; echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED2; exit 0"
        )
        with pytest.raises(TimeoutError):  # nobody ever connected
            server.accept()
    finally:
        server.close()
    assert "CONNECTED" not in proc.stdout


def test_no_background_process_survives(sbx: Runner) -> None:
    marker = f"{300 + secrets.randbelow(1000)}.{secrets.randbelow(10**6)}"
    proc = sbx.run(
        f"sleep {marker} & "
        f"setsid sleep {marker} & "
        f"(setsid bash -c 'sleep {marker} & disown' &) ; "
        f"nohup sleep {marker} >/dev/null 2>&1 & disown; echo started"
    )
    assert "started" in proc.stdout
    # The command's own status: not the sandbox waiting for the orphans until the call times out.
    assert proc.returncode == 0, proc.stderr
    assert _processes_with(marker) == [], "processes survived the sandboxed command"


def test_cannot_signal_processes_outside(sbx: Runner) -> None:
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        proc = sbx.run(f"kill -9 {victim.pid}; kill -9 -1; echo done")
        time.sleep(0.2)
        assert victim.poll() is None, "a process outside the sandbox was killed"
        assert "done" in proc.stdout or proc.returncode != 0
    finally:
        victim.kill()
        victim.wait()


def test_repository_config_cannot_run_programs(sbx: Runner) -> None:
    """`git status`/`git diff` must not run fsmonitor, pager, diff or filter drivers from .git/config."""
    ws = sbx.workspace
    # safe.directory: as root we set up a repository that the unprivileged user owns.
    git = ["git", "-c", "safe.directory=*", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "src.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    for key, value in [
        ("core.fsmonitor", "touch pwned-fsmonitor; false"),
        ("core.pager", "touch pwned-pager; cat"),
        ("diff.external", "touch pwned-extdiff"),
        ("filter.evil.clean", "touch pwned-filter; cat"),
        ("filter.evil.process", "touch pwned-process"),
        ("diff.evil.textconv", "touch pwned-textconv; cat"),
    ]:
        subprocess.run([*git, "config", key, value], check=True)
    (ws / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    (ws / "src.txt").write_text("changed\n")
    if sbx.user is not None:
        uid = pwd.getpwnam(sbx.user).pw_uid
        for root, dirs, files in os.walk(ws):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), uid, -1)
    sbx.run("git status; git diff; git -p log -1; git add src.txt; exit 0")
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith("pwned")) == []


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    for pid in found:  # never leave them running, even when the assertion fails
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found
