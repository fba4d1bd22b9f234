"""tether.core.diff is pure: no processes, no file helpers, no stores (fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("subprocess", "socket", "shutil", "git", "tether.core.fsutil", "tether.core.proposals",
             "tether.core.tools", "tether.core.sandbox", "tether.core.gate")  # fmt: skip

SCRIPT = """
import json, sys
before = set(sys.modules)
from tether.core import diff
hunks = diff.compute_hunks("a\\nb\\n", "a\\nc\\n")
assert diff.apply_hunks("a\\nb\\n", hunks) == "a\\nc\\n"
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_diff_imports_nothing_impure() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    modules = json.loads(out.stdout)
    assert "tether.core.diff" in modules
    assert "unidiff" in modules  # hunks are parsed by unidiff, as the issue asks
    bad = [m for m in modules if any(m == p or m.startswith(p + ".") for p in FORBIDDEN)]
    assert bad == []
