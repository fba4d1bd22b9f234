"""Secrets never reach the model (docs/secrets.md): the policy, every tool and every sandbox backend.

A workspace with a `.env` holding a key: the model must not be able to read it by naming it, by a
glob, a symlink, another case, a redirect, or by running any program in the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _checkpoint_support import init_repo, tether

from tether.core.config import EffectiveConfig
from tether.core.policy import PolicySettings, check_path, decide
from tether.core.policy.secrets import DEFAULT_SECRET_PATTERNS, SecretSettings, secret_pattern
from tether.core.sandbox import probe_backends
from tether.core.secret_files import find_secret_paths
from tether.core.session import FaceOverrides, open_session

KEY = "k3y-0123456789abcdefghijKLMN"
"""Not a known credential format, so the masks are tested on their own (redaction would hide an
`sk-…` key anyway: see the redaction tests at the end)."""

PEM_BODY = "pem-body-not-for-the-model"
"""Not hexadecimal, so no commit id or index bytes that `tar` prints can contain it by chance (the
three letters this once was turned up inside a commit id about once in a hundred runs)."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "ws", {"README.md": "hello\n", "app.py": "print('x')\n"})
    (repo / ".env").write_text(f"API_KEY={KEY}\n")
    (repo / ".env.example").write_text("API_KEY=\n")
    (repo / "deploy").mkdir()
    (repo / "deploy" / "server.PEM").write_text(f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n")
    (repo / ".ssh").mkdir()
    (repo / ".ssh" / "id_ed25519").write_text("ssh-secret\n")
    (repo / ".ssh" / "id_ed25519.pub").write_text("ssh-ed25519 AAAA public\n")
    os.symlink(".env", repo / "settings.txt")
    return repo


# --- the list ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        (".env", True),
        ("a/b/.ENV", True),
        (".env.production", True),
        (".env.example", False),
        (".env.sample", False),
        (".env.template", False),
        ("venv/.env/lib/site.py", False),  # a virtualenv named .env holds no secret by its name
        ("certs/x.pem", True),
        ("k/id_rsa", True),
        ("k/id_rsa.pub", False),
        ("home/.ssh/config", True),
        (".aws/credentials", True),
        ("x/.docker/config.json", True),
        ("config.json", False),
        ("credentials.json", True),
        ("secrets.yaml", True),
        ("passwords.kdbx", True),
        (".npmrc", True),
        ("README.md", False),
    ],
)
def test_the_default_list(path: str, secret: bool) -> None:
    assert (secret_pattern(path, SecretSettings()) is not None) is secret


def test_an_allowed_path_is_let_through_and_nothing_else() -> None:
    settings = SecretSettings(allowed=frozenset({"config/.env"}))
    assert secret_pattern("config/.env", settings) is None
    assert secret_pattern(".env", settings) == ".env"


def test_the_project_may_add_names_but_never_remove_or_allow(ws: Path, tmp_path: Path) -> None:
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text('[secrets]\npaths = ["*.token"]\nallow = [".env"]\n')
    (ws / "ci.token").write_text("t\n")
    done = tether(
        ws, "tool", "read_file", "--permissions", "all", "--input", '{"path": "ci.token"}', home=tmp_path
    )
    assert json.loads(done.stdout)["isError"] is True
    assert "`secrets.allow` is ignored" in done.stderr
    done = tether(
        ws, "tool", "read_file", "--permissions", "all", "--input", '{"path": ".env"}', home=tmp_path
    )
    assert json.loads(done.stdout)["isError"] is True


def test_the_user_may_allow_one_file(ws: Path, tmp_path: Path) -> None:
    config = tmp_path / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[secrets]\nallow = [".env"]\n')
    done = tether(
        ws, "tool", "read_file", "--permissions", "read", "--input", '{"path": ".env"}', home=tmp_path
    )
    assert KEY in json.loads(done.stdout)["text"]


# --- the policy: every way of naming one ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "cat ./.env",
        "cat x/../.env",
        "cat .ENV",
        "cat .e*",
        "cat .env*",
        "cat settings.txt",  # a symlink to .env
        "sort < .env",
        "head -5 .env",
        "grep KEY .env",
        "cat deploy/*",
        "cat deploy/server.PEM",
        "cat .ssh/id_ed25519",
        "ls .ssh && cat .ssh/*",
        "wc -c .env",
        "diff .env .env.example",
        "echo x > .env",
        "cat README.md > .env",
    ],
)
def test_a_command_naming_a_secret_is_denied_in_every_mode(ws: Path, command: str) -> None:
    for mode in ("read", "command"):
        verdict = decide(command, mode, ws, PolicySettings())
        assert not verdict.allowed, (mode, command)
    verdict = decide(command, "command", ws, PolicySettings())
    assert verdict.rule in ("path.secret", "command.blocked", "flag.denied", "mode.read"), verdict


def test_the_refusal_says_how_to_allow_the_file(ws: Path) -> None:
    verdict = decide("cat .env", "read", ws, PolicySettings())
    assert verdict.rule == "path.secret"
    assert '[secrets] allow = [".env"]' in verdict.reason
    check = check_path(".env.example", ws, write=False, settings=PolicySettings())
    assert check.ok


# --- the tools ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("permissions", ["none", "read", "all"])
def test_read_file_of_a_secret_is_an_error_in_any_mode(ws: Path, tmp_path: Path, permissions: str) -> None:
    for path in (".env", "settings.txt", ".ENV", "deploy/server.PEM"):
        tool_input = json.dumps({"path": path})
        done = tether(
            ws, "tool", "read_file", "--permissions", permissions, "--input", tool_input, home=tmp_path
        )
        result = json.loads(done.stdout)
        assert result["isError"] is True, (path, done.stdout)
        assert KEY not in done.stdout
        assert "secret" in result["text"]


def read_file(ws: Path, home: Path, path: str, permissions: str = "all") -> dict[str, object]:
    """`tether tool read_file` as a process; the JSON result, stderr under `"stderr"`."""
    done = tether(
        ws,
        "tool",
        "read_file",
        "--permissions",
        permissions,
        "--input",
        json.dumps({"path": path}),
        home=home,
    )
    return {**json.loads(done.stdout), "stderr": done.stderr, "stdout": done.stdout}


def _gate(ws: Path, permissions: str = "all"):  # type: ignore[no-untyped-def]
    return open_session(ws, FaceOverrides(permissions=permissions), config=EffectiveConfig()).gate


def test_grep_leaves_secret_files_out_and_says_so(ws: Path) -> None:
    (ws / "credentials.json").write_text(f'{{"API_KEY": "{KEY}"}}\n')
    (ws / "config.json").write_text('{"API_KEY": "from the environment"}\n')
    result = _gate(ws).call("grep", {"pattern": "API_KEY", "path": "."})
    assert KEY not in result.text
    assert "config.json" in result.text  # not a secret
    assert "secret file(s) with matches left out" in result.text
    assert result.result["secretFilesSkipped"] >= 1


def test_list_files_marks_secret_files(ws: Path) -> None:
    result = _gate(ws).call("list_files", {"path": ".", "include_hidden": True})
    assert ".env  [secret: not readable]" in result.text
    assert ".env" in result.result["secret"]
    assert ".env.example" not in result.result["secret"]


def test_edit_and_write_refuse_secret_files(ws: Path) -> None:
    gate = _gate(ws)
    write = gate.call("write_file", {"path": ".env", "content": "API_KEY=stolen\n"})
    assert write.state == "denied"
    edit = gate.call(
        "edit_file", {"path": ".env", "command": "str_replace", "old_str": "API_KEY", "new_str": "X"}
    )
    assert edit.state == "denied"
    assert (ws / ".env").read_text() == f"API_KEY={KEY}\n"


def test_git_diff_never_shows_a_tracked_secret(ws: Path) -> None:
    from _checkpoint_support import git

    git(ws, "add", "-f", ".env")
    git(ws, "commit", "-q", "-m", "oops, committed the .env")
    (ws / ".env").write_text("API_KEY=rotated-value-xyz\n")
    (ws / "README.md").write_text("changed\n")
    result = _gate(ws).call("git_operation", {"operation": "diff"})
    assert "README.md" in result.text
    assert KEY not in result.text
    assert "rotated-value-xyz" not in result.text


# --- the sandbox: any program, every backend ------------------------------------------------------

SNOOPS = [
    "cat .env",
    "python3 -c \"print(open('.env').read())\"",
    "grep -r API_KEY . || true",
    "find . -name '.env*' -exec cat {} +",
    "tar cf - . | tar xOf - 2>/dev/null | cat",
    "cat .ssh/id_ed25519 deploy/server.PEM",
    "sort settings.txt",
]


def _backends() -> list[str]:
    return [name for name, status in probe_backends().items() if status.available and name != "none"]


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_no_program_in_the_sandbox_can_read_a_secret(ws: Path, backend: str) -> None:
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    session = open_session(ws, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    for snoop in SNOOPS:
        run, name = session.run_in_sandbox(["bash", "-c", snoop], cwd=ws)
        assert name == backend
        assert KEY not in run.stdout + run.stderr, (backend, snoop)
        assert "ssh-secret" not in run.stdout + run.stderr, (backend, snoop)
        assert PEM_BODY not in run.stdout + run.stderr, (backend, snoop)
    run, _ = session.run_in_sandbox(
        ["bash", "-c", "echo overwritten > .env; rm -f .env; cat README.md"], cwd=ws
    )
    assert "hello" in run.stdout  # the rest of the workspace is there
    assert (ws / ".env").read_text() == f"API_KEY={KEY}\n"  # writing the masked file reached nothing


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_a_secret_named_link_to_a_file_outside_the_workspace_hides_that_file(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """A monorepo's `apps/web/.env -> ../../.env`, the workspace being `apps/web`: the link is
    refused by name, and the shared file it reaches is hidden from programs too."""
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    # not under /tmp, which the sandbox replaces with its own: the shared file must be visible there
    outside_tmp = Path(tempfile.mkdtemp(prefix="tether-mono-", dir="/var/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(outside_tmp, ignore_errors=True))
    mono = init_repo(outside_tmp / "mono", {"README.md": "mono\n"})
    (mono / ".env").write_text(f"API_KEY={KEY}\n")
    web = mono / "apps" / "web"
    web.mkdir(parents=True)
    (web / "index.js").write_text("console.log(1)\n")
    os.symlink("../../.env", web / ".env")
    (web / "src").mkdir()
    os.symlink("../../../.env", web / "src" / "secrets.yaml")  # deeper, another secret name
    session = open_session(web, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    snoop = "cat .env; cat src/secrets.yaml; grep -R API_KEY . ; cat index.js"
    run, _ = session.run_in_sandbox(["bash", "-c", snoop], cwd=web)
    assert KEY not in run.stdout + run.stderr, backend
    assert "console.log" in run.stdout  # it ran


def test_a_secret_git_tracks_in_a_build_output_folder_is_hidden(ws: Path) -> None:
    """The walk skips `build/`, `dist/`, `target/`… (builds and dependencies), but a file git
    tracks there is yours: `deploy/target/prod.pem` is hidden like any other secret."""
    from _checkpoint_support import git

    tracked = ("build/.env", "dist/secrets.yaml", "deploy/target/prod.pem")
    for rel in (*tracked, "node_modules/pkg/.env"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"KEY={KEY}\n")
    git(ws, "add", "-f", *tracked)
    inner = init_repo(ws / "libs" / "x", {"dist/.env": f"NESTED={KEY}\n"}, commit=False)
    git(inner, "add", "-f", "dist/.env")  # another repository inside: its index counts too
    found = {p.relative_to(ws).as_posix() for p in find_secret_paths(ws, SecretSettings())}
    assert found >= {*tracked, "libs/x/dist/.env"}
    assert "node_modules/pkg/.env" not in found  # vendored, untracked: not searched
    if _backends():
        result = _gate(ws, "read").call("bash_command", {"command": "grep -r KEY build dist deploy libs"})
        assert result.state != "denied", result.text  # it ran (grep exits 1 or 2 on masked files)
        assert KEY not in result.text


def test_a_secret_a_build_copied_into_its_output_is_hidden(ws: Path) -> None:
    """`cp .env dist/` in a build script, or a framework's standalone output: untracked, ignored,
    and a copy of your credentials all the same. Dependency folders stay unsearched (speed)."""
    for rel in ("dist/.env", "build/config/.env.production", ".next/standalone/.env", "node_modules/p/.env"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"KEY={KEY}\n")
    found = {p.relative_to(ws).as_posix() for p in find_secret_paths(ws, SecretSettings())}
    assert found >= {"dist/.env", "build/config/.env.production", ".next/standalone/.env"}
    assert "node_modules/p/.env" not in found


def test_tracked_secrets_in_your_build_folders_and_tracked_links_there_are_hidden(ws: Path) -> None:
    """`[checkpoints] regenerated = ["out"]` makes the walk skip `out/` too: a file git tracks
    there is still yours. A tracked secret-named link in such a folder hides its target."""
    from _checkpoint_support import git

    (ws / "out").mkdir()
    (ws / "out" / "prod.pem").write_text(f"{KEY}\n")
    (ws / "conf").mkdir()
    (ws / "conf" / "vals.txt").write_text(f"VALS={KEY}\n")
    (ws / "deploy" / "target").mkdir(parents=True)
    os.symlink("../../conf/vals.txt", ws / "deploy" / "target" / ".env")
    git(ws, "add", "-f", "out/prod.pem", "deploy/target/.env")
    found = {
        p.relative_to(ws).as_posix() for p in find_secret_paths(ws, SecretSettings(), skip_dirs=("out",))
    }
    assert {"out/prod.pem", "conf/vals.txt"} <= found


def test_a_folder_the_listing_cannot_read_is_hidden_whole(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A docker volume owned by another user (`pgdata/`, mode 700) stopped every command: the
    listing failed. It is hidden whole now (a program could still open a secret in a folder it may
    enter but not list); only the workspace itself unlisted refuses."""
    from tether.core import secret_files

    (ws / "pgdata").mkdir()
    real_scandir = os.scandir

    def scandir(path: object = ".") -> object:
        if os.fspath(path) in (str(ws / "pgdata"), str(ws) + "-gone"):  # type: ignore[call-overload]
            raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[call-overload]
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(secret_files, "_start_ripgrep", lambda *a: None)  # ripgrep fails there too
    monkeypatch.setattr(os, "scandir", scandir)
    found = {p.relative_to(ws).as_posix() for p in find_secret_paths(ws, SecretSettings())}
    assert {".env", "pgdata"} <= found
    with pytest.raises(OSError, match="Permission denied"):
        find_secret_paths(Path(str(ws) + "-gone"), SecretSettings())


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_a_secret_named_link_cannot_stop_every_command(tmp_path: Path, backend: str) -> None:
    """A cloned repository's `.aws -> /usr` or `.env -> /bin/bash` must not hide the system's
    programs, and a file mask inside a folder mask (`x/.ssh -> ../sec` beside `x/.env -> ../sec/a`)
    must not stop the sandbox from starting."""
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    ws = init_repo(tmp_path / "ws", {"README.md": "hello\n"})
    os.symlink("/usr", ws / ".aws")
    os.symlink("/bin/bash", ws / ".env")
    (ws / "sec").mkdir()
    (ws / "sec" / "a").write_text(f"{KEY}\n")
    (ws / "x").mkdir()
    os.symlink("../sec", ws / "x" / ".ssh")
    os.symlink("../sec/a", ws / "x" / ".env.local")
    session = open_session(ws, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    run, _ = session.run_in_sandbox(["bash", "-c", "cat README.md; cat sec/a"], cwd=ws)
    assert "hello" in run.stdout, run.stderr  # it started, with the system's programs
    assert KEY not in run.stdout + run.stderr


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_a_hidden_secret_cannot_be_renamed_out_of_its_name(ws: Path, backend: str) -> None:
    """`.docker/config.json` is a secret by its folder's name: `mv .docker cfg` inside the sandbox
    would leave `cfg/config.json`, which the next `read_file` reads. The folder cannot move."""
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    (ws / ".docker").mkdir()
    (ws / ".docker" / "config.json").write_text(f'{{"auth": "{KEY}"}}\n')
    (ws / "plain" / "inner").mkdir(parents=True)
    session = open_session(ws, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    session.run_in_sandbox(["bash", "-c", "mv .docker dockercfg; mv plain/inner plain/moved"], cwd=ws)
    assert (ws / ".docker" / "config.json").is_file()
    assert not (ws / "dockercfg").exists()
    assert (ws / "plain" / "moved").is_dir()  # other folders move as ever


UNPACK_STORES = (  # `.git` spelled in two parts: a word naming a protected path is refused earlier
    "import glob, zlib; found = glob.glob('**/.gi' + 't/tether/**/objects/??/*', recursive=True); "
    "print('objects', len(found)); [print(zlib.decompress(open(f, 'rb').read())) for f in found]"
)


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_no_program_in_the_sandbox_can_read_a_checkpoint_of_a_secret(
    ws: Path, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint holds the `.env` it took (so a rollback can put it back): the stores, the
    workspace's and another repository's inside it, are hidden like the file itself."""
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    from tether.core.checkpoints import Checkpoints
    from tether.core.config import CheckpointSettings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    inner = init_repo(ws / "lib", {"lib.py": "x = 1\n"})
    (inner / ".env").write_text(f"INNER_KEY={KEY}-inner\n")
    Checkpoints(inner, CheckpointSettings()).create("the inner repository opened on its own")
    Checkpoints(ws, CheckpointSettings()).create("before a command")
    session = open_session(ws, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    run, _ = session.run_in_sandbox(["python3", "-c", UNPACK_STORES], cwd=ws)
    assert "objects" in run.stdout, run.stderr  # it ran
    assert KEY not in run.stdout + run.stderr, backend
    outside = open_session(
        ws, FaceOverrides(permissions="read,command,workspace", sandbox=backend), config=EffectiveConfig()
    )
    result = outside.gate.call("bash_command", {"command": f'python3 -c "{UNPACK_STORES}"'})
    assert "objects" in result.text, result.text
    assert KEY not in result.text, backend


@pytest.mark.parametrize("backend", ["bubblewrap", "firejail", "landlock"])
def test_a_linked_worktrees_checkpoint_store_is_hidden_too(
    ws: Path, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each linked worktree keeps its store in the repository's `.git/worktrees/NAME/tether`."""
    if backend not in _backends():
        pytest.skip(f"{backend} does not work on this machine")
    from _checkpoint_support import git

    from tether.core.checkpoints import Checkpoints
    from tether.core.config import CheckpointSettings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    git(ws, "worktree", "add", "-q", str(tmp_path / "feature"))
    (tmp_path / "feature" / ".env").write_text(f"WORKTREE_KEY={KEY}\n")
    Checkpoints(tmp_path / "feature", CheckpointSettings()).create("in the other worktree")
    unpack = UNPACK_STORES.replace(
        "'**/.gi' + 't/tether/**/objects/??/*'", "'.gi' + 't/worktrees/*/tether/**/objects/??/*'"
    )
    session = open_session(ws, FaceOverrides(permissions="all", sandbox=backend), config=EffectiveConfig())
    run, _ = session.run_in_sandbox(["python3", "-c", unpack], cwd=ws)
    assert "objects" in run.stdout, run.stderr
    assert KEY not in run.stdout + run.stderr, backend


def test_tether_sandbox_cat_env_does_not_print_it(ws: Path, tmp_path: Path) -> None:
    if not _backends():
        pytest.skip("no sandbox backend works here")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "ANTHROPIC_"))}
    env.update({"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")})
    argv = [
        sys.executable,
        "-m",
        "tether",
        "sandbox",
        "--workspace",
        str(ws),
        "--",
        "cat",
        ".env",
        "README.md",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert "hello" in done.stdout  # the command really ran, in that workspace
    assert KEY not in done.stdout + done.stderr


def test_bash_command_through_the_gate_says_the_file_is_hidden(ws: Path) -> None:
    if not _backends():
        pytest.skip("no sandbox backend works here")
    result = _gate(ws).call("bash_command", {"command": "grep -r API_KEY . || true"})
    assert KEY not in result.text
    assert ".env.example" in result.text


def test_secret_files_are_found_fast_and_exactly(ws: Path) -> None:
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / ".env").write_text("vendored\n")
    found = {p.relative_to(ws).as_posix() for p in find_secret_paths(ws, SecretSettings())}
    assert found == {".env", "deploy/server.PEM", ".ssh"}
    assert set(DEFAULT_SECRET_PATTERNS) >= {".env", "*.pem", ".ssh/"}


# --- defence in depth on the way out: credentials redacted from what the model reads -----------------

ANTHROPIC = "sk-ant-api03-" + "A1b2C3d4" * 8
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
GITHUB = "ghp_" + "x" * 36
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


def test_read_file_hides_credentials_and_the_audit_line_says_so(ws: Path) -> None:
    (ws / "settings.py").write_text(
        f'ANTHROPIC = "{ANTHROPIC}"\nAWS = "{AWS}"\nGITHUB = "{GITHUB}"\nKEY = """{PEM}"""\n'
        'password = "hunter2"  # ordinary source stays as it is\n'
    )
    gate = _gate(ws)
    result = gate.call("read_file", {"path": "settings.py"})
    for credential in (ANTHROPIC, AWS, GITHUB, "MIIEowIBAAKCAQEA"):
        assert credential not in result.text
        assert credential not in json.dumps(result.result)
    assert result.text.count("[REDACTED credential]") == 4
    assert 'password = "hunter2"' in result.text
    assert gate.log()[-1]["redactedCredentials"] == 4


def test_a_key_printed_in_two_chunks_is_still_redacted(ws: Path) -> None:
    if not _backends():
        pytest.skip("no sandbox backend works here")
    (ws / "emit.py").write_text(
        "import sys, time\n"
        f"sys.stdout.write({ANTHROPIC[:20]!r}); sys.stdout.flush(); time.sleep(0.3)\n"
        f"sys.stdout.write({ANTHROPIC[20:]!r} + '\\n'); sys.stdout.flush()\n"
    )
    result = _gate(ws, "read,command,workspace").call("bash_command", {"command": "python3 emit.py"})
    assert result.state == "executed", result.text
    assert ANTHROPIC not in result.text
    assert ANTHROPIC[20:] not in result.text
    assert "[REDACTED credential]" in result.text


def test_an_edit_that_would_write_the_marker_back_is_refused(ws: Path) -> None:
    (ws / "settings.py").write_text(f'TOKEN = "{GITHUB}"\nDEBUG = True\n')
    gate = _gate(ws)
    seen = gate.call("read_file", {"path": "settings.py"}).text
    assert "[REDACTED credential]" in seen
    write = gate.call("write_file", {"path": "settings.py", "content": 'TOKEN = "[REDACTED credential]"\n'})
    assert write.is_error
    assert "credential was hidden from you" in write.text
    edit = gate.call(
        "edit_file",
        {"path": "settings.py", "command": "str_replace", "old_str": "DEBUG = True",
         "new_str": 'DEBUG = False\nOTHER = "[REDACTED credential]"'},
    )  # fmt: skip
    assert edit.is_error
    assert (ws / "settings.py").read_text() == f'TOKEN = "{GITHUB}"\nDEBUG = True\n'
    fine = gate.call(
        "edit_file",
        {
            "path": "settings.py",
            "command": "str_replace",
            "old_str": "DEBUG = True",
            "new_str": "DEBUG = False",
        },
    )
    assert fine.ok, fine.text
    assert (ws / "settings.py").read_text() == f'TOKEN = "{GITHUB}"\nDEBUG = False\n'


def test_the_person_can_let_one_secret_through_for_the_session_only(ws: Path) -> None:
    gate = _gate(ws, "read")
    refused = gate.call("read_file", {"path": ".env"})
    assert refused.is_error
    assert "tether.allowSecret" in refused.text  # the refusal says how
    assert not gate.allow_secret("README.md").ok  # not a secret: nothing to allow
    assert not gate.allow_secret("../outside/.env").ok
    assert gate.allow_secret(".env").ok
    assert KEY in gate.call("read_file", {"path": ".env"}).text
    assert gate.call("read_file", {"path": "deploy/server.PEM"}).is_error  # only that one file
    assert [e["tool"] for e in gate.log()][-3:] == ["allow_secret", "read_file", "read_file"]
    assert _gate(ws, "read").call("read_file", {"path": ".env"}).is_error  # a new session: hidden again
