"""A Node package install in the sandbox, with the real npm, offline (a local tarball).

Why: `npm install`, asked and approved, failed in every sandbox. A fresh project has no
`node_modules`, and keeping `node_modules/.bin` read-only put a read-only placeholder where npm
must create that folder (EBUSY); with the folder there, npm could not link its programs into
`.bin`; and npm could not write its cache in your read-only `~/.npm` (EROFS).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from _checkpoint_support import init_repo

from tether.core.approvals import ApprovalAnswer
from tether.core.config import EffectiveConfig
from tether.core.session import FaceOverrides, open_session

NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(NPM is None, reason="npm is not installed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = init_repo(tmp_path / "ws", {"package.json": json.dumps({"name": "app", "version": "1.0.0"}) + "\n"})
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "package.json").write_text(
        json.dumps({"name": "tool", "version": "1.0.0", "bin": {"tool": "cli.js"}})
    )
    (tool / "cli.js").write_text('#!/usr/bin/env node\nconsole.log("tool ran")\n')
    assert NPM is not None
    subprocess.run(
        [NPM, "pack", "-q", "--pack-destination", str(ws)], cwd=tool, check=True, capture_output=True
    )
    return ws


def test_an_approved_npm_install_creates_node_modules_and_links_its_programs(project: Path) -> None:
    asked: list[str] = []

    def approve(request: object, cancel: object) -> ApprovalAnswer:
        asked.append(getattr(request, "rule", ""))
        return ApprovalAnswer("allow_once")

    session = open_session(
        project, FaceOverrides(permissions="read,command"), config=EffectiveConfig(), approver=approve
    )
    result = session.gate.call(
        "bash_command", {"command": "cd . && npm install --offline --no-audit --no-fund ./tool-1.0.0.tgz"}
    )
    assert asked == ["ask.package_install"]
    assert result.ok, result.text
    assert (project / "node_modules" / ".bin" / "tool").exists()
    link = project / "node_modules" / ".bin" / "tool"
    # npm got this far only with a cache it could write: `~/.npm` is read-only in the sandbox
    assert link.resolve() == (project / "node_modules" / "tool" / "cli.js").resolve()


def test_other_commands_still_cannot_write_node_modules_bin(project: Path) -> None:
    """The exemption is the install's alone: the escape test's `mkdir -p node_modules/.bin` stays
    refused when it is not a package install (tests/integration/test_sandbox_escape.py)."""
    session = open_session(project, FaceOverrides(permissions="workspace"), config=EffectiveConfig())
    (project / "node_modules").mkdir()
    script = "import os; os.makedirs('node_modules/.bin', exist_ok=True); open('node_modules/.bin/tsc', 'w')"
    result = session.gate.call("bash_command", {"command": f'python3 -c "{script}"'})
    assert not result.ok
    assert not (project / "node_modules" / ".bin" / "tsc").exists()


def test_an_install_chained_with_another_program_keeps_bin_read_only(project: Path) -> None:
    """An "Always allow `npm install`" is no rule for what follows it in the same command."""
    session = open_session(project, FaceOverrides(permissions="workspace"), config=EffectiveConfig())
    session.gate.allowances.add((("npm", "install"),))
    script = "import os; os.makedirs('node_modules/.bin', exist_ok=True); open('node_modules/.bin/tsc', 'w')"
    command = f'npm install --offline --no-audit --no-fund ./tool-1.0.0.tgz; python3 -c "{script}"'
    result = session.gate.call("bash_command", {"command": command})
    assert not (project / "node_modules" / ".bin" / "tsc").exists()
    assert any("node_modules/.bin stayed read-only" in w for w in result.warnings), result
