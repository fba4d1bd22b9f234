"""`tether demo`, the README's first command, run as a user runs it: a real server, the SDK, a repo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lsprotocol import types

from tether.cli.demo import apply_text_edits


def test_the_demo_runs_every_step_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TETHER_"))}
    # The demo's tests run `python3 -m pytest` in the sandbox: this interpreter has pytest.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["ANTHROPIC_API_KEY"] = "sk-not-used"  # --offline must win over a key
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [sys.executable, "-m", "tether", "demo", "--offline"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "Demo complete" in out
    assert "denied: `sh` after `curl` in the same command would run what was downloaded" in out
    assert "editor: 2 pending hunk preview(s) shown in calc.py" in out
    assert "tool-card updates reached the editor while the turn ran" in out  # tether/turn streamed
    assert "accept hunk 1: applied via the editor" in out
    assert "reject hunk(s) 2: nothing written" in out
    assert "1 failed, 3 passed" in out  # hunk 1 fixed add(); the rejected hunk 2 leaves mean() broken
    assert "rolled back: restored ['calc.py']" in out
    assert "hash chain: intact, 20 entries" in out
    # the network allowlist: an allowed name through the proxy, any other refused
    assert "statistics.fmean(data)" in out
    assert "network.unknown_domain: example.com is not in [network] allowed_domains" in out
    assert "failed (network), exit 0" in out  # the audit table says why curl's exit 0 is a failure
    # the person in the loop: an ask answered in the editor, then workspace mode
    assert "editor asks: git commit -qam 'fix add'" in out
    assert "The user says: Not yet" in out
    assert "permissions → read,command,workspace" in out
    assert "exit 0, build/NOTES.md written" in out
    assert "deleted ['build/NOTES.md']" in out
    assert "Ignoring notification" not in out + done.stderr


def _edit(line: int, char: int, end_line: int, end_char: int, text: str) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(types.Position(line, char), types.Position(end_line, end_char)), new_text=text
    )


def test_text_edits_apply_like_an_editor_applies_them() -> None:
    text = "a\nb\nc\n"
    edits = [_edit(0, 0, 1, 0, "A\n"), _edit(2, 0, 3, 0, "C\nD\n"), _edit(3, 0, 3, 0, "end\n")]
    assert apply_text_edits(text, edits) == "A\nb\nC\nD\nend\n"
    assert apply_text_edits("x", [_edit(0, 1, 0, 1, "y")]) == "xy"
