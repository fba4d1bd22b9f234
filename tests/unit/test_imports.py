"""The policy is pure: importing it must not pull in process, network, git, LSP or model code.

Runs in a fresh interpreter (click's test_imports style) so other tests' imports cannot hide a
violation.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

FORBIDDEN_PREFIXES = (
    "subprocess",
    "socket",
    "ssl",
    "http",
    "urllib.request",
    "asyncio",
    "multiprocessing",
    "concurrent",
    "git",
    "pygls",
    "lsprotocol",
    "anthropic",
    "httpx",
    "tether.core.sandbox",
    "tether.core.gate",
    "tether.core.checkpoints",
    "tether.core.tools",
    "tether.core.config",
    "tether.lsp",
    "tether.agent",
    "tether.cli",
)

SCRIPT = """
import json, sys
before = set(sys.modules)
import tether.core.policy
from tether.core.policy import decide, PolicySettings
from pathlib import Path
decide("git log --oneline | head -3 && ls *.py > out.txt", "command", Path("."), PolicySettings())
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _imported() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(out.stdout)


def test_policy_imports_nothing_impure() -> None:
    modules = _imported()
    assert "tether.core.policy" in modules  # the check really ran
    bad = [m for m in modules if any(m == p or m.startswith(p + ".") for p in FORBIDDEN_PREFIXES)]
    assert bad == []


def test_policy_modules_never_import_forbidden_names_in_source() -> None:
    """Catches lazy imports inside functions, which the subprocess check cannot see."""
    from pathlib import Path

    import tether.core.policy as policy

    root = Path(policy.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in (
            "subprocess",
            "socket",
            "pygls",
            "anthropic",
            "os.system",
            "os.popen",
            "os.exec",
            "os.spawn",
            "urllib",
        ):
            if name in text:
                offenders.append(f"{path.name}: {name}")
        # GitPython, as a module (`import git_plain` from asks.py is fine)
        offenders += [f"{path.name}: {m.group(0).strip()}" for m in _GITPYTHON.finditer(text)]
    assert offenders == []


_GITPYTHON = re.compile(r"^\s*(?:import git\b(?!_)|from git(?:\.\w+)* import)", re.MULTILINE)


# `tether check` and `tether hook` start once per command another agent runs: every module they
# import is paid on each start (tests/bench/bench_cold_start.py). They open a session and ask the
# policy; running, checkpointing, auditing and approving over a protocol are never on that path.
NOT_ON_THE_CHECK_PATH = (
    "concurrent",
    "pkgutil",
    "git",
    "subprocess",
    "tether.core.audit",
    "tether.core.checkpoints",
    "tether.core.explain",
    "tether.core.gitcmd",
    "tether.core.proposals",
    "tether.core.redact",
    "tether.core.sandbox.base",
    "tether.core.sandbox.bwrap",
    "tether.core.sandbox.fake",
    "tether.core.sandbox.firejail",
    "tether.core.sandbox.landlock",
    "tether.core.sandbox.probe",
    "tether.core.secret_files",
    "tether.core.tools",
)

CHECK_SCRIPT = """
import json, sys
before = set(sys.modules)
from tether.cli import main
code = main(["check", "--workspace", sys.argv[1], "ls src"])
print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
"""


def test_check_imports_only_what_deciding_needs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = subprocess.run(
        [sys.executable, "-c", CHECK_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["code"] == 0  # the policy really decided
    assert "tether.core.policy.decide" in found["modules"]
    heavy = [
        m for m in found["modules"] if any(m == p or m.startswith(p + ".") for p in NOT_ON_THE_CHECK_PATH)
    ]
    assert heavy == []


def test_the_sandbox_package_names_each_public_name_once_for_both_checkers() -> None:
    """tether.core.sandbox imports its names on first use (`_HOME`) and lists the same names for the
    type checker: the two must agree, and each must be what its module defines."""
    import ast
    import importlib
    from pathlib import Path

    import tether.core.sandbox as sandbox

    tree = ast.parse(Path(sandbox.__file__).read_text(encoding="utf-8"))
    for_typing = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(sandbox.__name__)
        for alias in node.names
    }
    homes = {(f"{sandbox.__name__}.{home}", name) for name, home in sandbox._HOME.items()}
    assert for_typing == homes
    for module, name in homes:
        assert getattr(sandbox, name) is getattr(importlib.import_module(module), name)
