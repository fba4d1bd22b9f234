"""The VS Code extension, built and tested for real: type check, lint, unit tests, the packaged
.vsix, and an end-to-end session in code-server (VS Code 1.139) driven by Chromium.

Why one pytest file drives npm and Node: `make test` runs pytest, so the extension's own checks run
inside it and their output lands in the same report. The heavy install (code-server, Node 24,
Chromium) is `editors/vscode/scripts/setup-e2e.sh`, cached in `.cache/vscode-e2e/`; the fixture runs
it too, which returns immediately when the cache is ready.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editors" / "vscode"
SETUP = EXT / "scripts" / "setup-e2e.sh"
ARTIFACTS = REPO / "test-artifacts"


def _tether_executable() -> Path:
    """The tether CLI of the interpreter running the tests (the project's venv)."""
    candidate = Path(sys.executable).parent / "tether"
    return candidate if candidate.exists() else REPO / ".venv" / "bin" / "tether"


def _run(cmd: list[str], *, timeout: float, cwd: Path = EXT, env: dict[str, str] | None = None) -> str:
    """Run a command; on failure show its whole output in the assertion message."""
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{output}"
    return output


@pytest.fixture(scope="module")
def npm() -> str:
    found = shutil.which("npm")
    assert found, "npm is needed to build the VS Code extension (Node 20+ with npm)"
    return found


@pytest.fixture(scope="module")
def node_modules(npm: str) -> Path:
    """`npm ci` when the lockfile changed since the last install (it takes ~25 s)."""
    lock = EXT / "package-lock.json"
    installed = EXT / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund"], timeout=600)
    return EXT / "node_modules"


@pytest.fixture(scope="module")
def vsix(npm: str, node_modules: Path) -> Path:
    version = json.loads((EXT / "package.json").read_text())["version"]
    target = EXT / f"tether-{version}.vsix"
    target.unlink(missing_ok=True)
    _run([npm, "run", "package"], timeout=300)
    assert target.is_file(), f"npm run package did not write {target.name}"
    return target


@pytest.fixture(scope="module")
def e2e_cache() -> Path:
    """code-server + Node 24 + Chromium (installs on first use, a few minutes; then instant)."""
    out = _run(["bash", str(SETUP)], timeout=1200, cwd=REPO)
    cache = Path(out.strip().splitlines()[-1])
    assert (cache / "node" / "bin" / "node").exists(), out
    return cache


def _assert_server_ready() -> None:
    """`tether serve` must exist: a broken server CLI fails here with its own message, not in a
    browser timeout."""
    proc = subprocess.run(
        [str(_tether_executable()), "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, f"`tether serve --help` failed:\n{proc.stdout}{proc.stderr}"


def _run_e2e(cache: Path, vsix: Path, scenario: str, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    cmd = [
        str(cache / "node" / "bin" / "node"),
        str(EXT / "e2e" / "run-e2e.mjs"),
        "--vsix",
        str(vsix),
        "--cache",
        str(cache),
        "--tether",
        str(_tether_executable()),
        "--artifacts",
        str(ARTIFACTS),
        "--scenario",
        scenario,
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=EXT, env=env, capture_output=True, text=True, timeout=420, check=False)
    output = proc.stdout + proc.stderr
    print(output)  # per-step timings in the pytest report (-s or on failure)
    assert proc.returncode == 0, (
        f"VS Code e2e ({scenario}) failed; screenshots and logs in {ARTIFACTS}:\n{output}"
    )
    assert " 0 failed" in output.splitlines()[-1], output
    return output


def test_settings_match_server_options() -> None:
    """Every setting the extension sends is an initializationOption the server knows, and every
    value package.json offers (defaults and enums) parses there without an error (STYLE 18: client
    and server settings must not drift)."""
    from tether.lsp.options import KNOWN_KEYS, parse_options

    manifest = json.loads((EXT / "package.json").read_text())
    props = manifest["contributes"]["configuration"]["properties"]
    sent = {name.removeprefix("tether.") for name in props if not name.startswith("tether.server.")}
    assert sent <= set(KNOWN_KEYS), sent - set(KNOWN_KEYS)
    for key in sorted(sent):
        setting = props[f"tether.{key}"]
        values = [*setting.get("enum", []), setting["default"]]
        for value in values:
            if value in ("", 0) and key in ("model", "maxCost"):
                continue  # the extension omits these: "use the server's default"
            _, errors = parse_options({key: value})
            assert errors == [], (key, value, errors)


@pytest.mark.timeout(300)
def test_typecheck(npm: str, node_modules: Path) -> None:
    _run([npm, "run", "typecheck"], timeout=240)


@pytest.mark.timeout(300)
def test_lint(npm: str, node_modules: Path) -> None:
    _run([npm, "run", "lint"], timeout=240)


@pytest.mark.timeout(300)
def test_unit(npm: str, node_modules: Path) -> None:
    output = _run([npm, "test"], timeout=240)
    assert "# fail 0" in output, output
    passed = [line for line in output.splitlines() if line.startswith("# pass ")]
    assert passed, output
    assert int(passed[0].split()[-1]) > 0, output


@pytest.mark.timeout(600)
def test_package_contents(vsix: Path) -> None:
    """The .vsix holds the bundle, manifest, README and LICENSE, and nothing from src/ or node_modules/."""
    import zipfile

    names = zipfile.ZipFile(vsix).namelist()
    for needed in ("extension/dist/extension.js", "extension/package.json", "extension/LICENSE.txt"):
        assert needed in names, names
    assert any(n.lower() == "extension/readme.md" for n in names), names
    assert not [n for n in names if "/src/" in n or "node_modules" in n or n.endswith(".map")], names


@pytest.mark.timeout(900)
def test_e2e_restricted_mode(e2e_cache: Path, vsix: Path) -> None:
    """Untrusted workspace: Tether runs read-only (mutating commands hidden); a repository's
    .vscode/settings.json naming its own server program never runs it; granting trust starts the
    user's server; a killed server is reported with one message and Restart Server brings exactly
    one back."""
    _assert_server_ready()
    _run_e2e(e2e_cache, vsix, "restricted")


@pytest.mark.timeout(900)
def test_e2e_review_accept_rollback(e2e_cache: Path, vsix: Path) -> None:
    """A workspace .vscode/settings.json with tether.permissions = all leaves the session at the user's
    none (with a notice naming the file) → Set Permission Mode → Check Command… → Run Command in
    Sandbox… → an ask (git commit) answered in the modal: Allow once commits, Deny with a message runs
    nothing → workspace mode in the picker, a warning in the status bar → Ask Agent… (offline Messages
    API) makes a proposal → Show Proposal Diff → Accept Hunk at the cursor (checked on disk) →
    Rollback… (checked on disk) → Review in Refactor Preview (unticked: nothing; ticked: hunk 2 on
    disk) → Show Tool Log (newest first, then filtered), through the palette of a real VS Code."""
    _assert_server_ready()
    _run_e2e(e2e_cache, vsix, "full", "--agent")


@pytest.mark.timeout(900)
def test_e2e_chat_view(e2e_cache: Path, vsix: Path) -> None:
    """The chat view drives a whole scripted turn by clicking (issue 15): Enter sends, the answer is
    visible while the turn runs, the `git commit` the policy asks about is allowed on its card (no
    modal), hunk 1 accepted and hunk 2 rejected on the card (checked on disk), Open diff, Stop ends a
    turn that never ends, the conversation is listed, New clears the view, and picking it from the
    list draws it again."""
    _assert_server_ready()
    _run_e2e(e2e_cache, vsix, "chat")
