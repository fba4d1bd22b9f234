"""The demo: a scripted agent session through the real language server on a throwaway repo.

`script.yaml` is what the offline Messages API answers; `project/` is the small buggy project it
works on. Both ship with the package so `tether demo` runs from any install, and the tests use the
very same files, so the demo cannot drift from what is tested.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

DEMO_DIR = Path(__file__).parent
DEMO_SCRIPT = DEMO_DIR / "script.yaml"
DEMO_PROJECT = DEMO_DIR / "project"
DEMO_PROMPT = "The tests fail. Please fix calc.py."
DEMO_FOLLOW_UP = "I reviewed your edit."


def make_demo_workspace(dest: Path) -> Path:
    """Copy the demo project into a new git repository at `dest`, committed, and return its root."""
    dest.mkdir(parents=True, exist_ok=False)
    for source in sorted(DEMO_PROJECT.iterdir()):
        if source.is_file():
            shutil.copy(source, dest / source.name)
    identity = ["-c", "user.name=Tether demo", "-c", "user.email=demo@tether.invalid"]
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        [*identity, "commit", "-q", "-m", "demo project"],
    ):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return dest.resolve()
