"""The faces (CLI, language server, agent, demo) reach tools only through the session and the gate.

Why a test: when each face could import the config loader, the policy or the sandbox directly, each
assembled its own view of the configuration and their verdicts drifted apart (`tether check` said
allowed where `tether run` denied). Every import of `tether.core` from a face — at module level or
inside a function — must name the session, the gate, or a public type listed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tether

PACKAGE = Path(tether.__file__).parent
FACES = ("cli", "lsp", "agent", "demo")

ANY_NAME = object()
ALLOWED: dict[str, object] = {
    "tether.core.session": ANY_NAME,
    "tether.core.gate": ANY_NAME,
    "tether.core.permissions": ANY_NAME,
    "tether.core.diff": ANY_NAME,  # pure rendering of proposals
    "tether.core.approvals": ANY_NAME,  # the question and the answer faces exchange with the gate
    "tether.core.config": frozenset(
        {
            "AgentSettings",
            "EffectiveConfig",
            "user_config_path",
            "user_state_dir",
            "MAX_COMMAND_TIMEOUT",
            "DEFAULT_MODEL",
        }
    ),
    "tether.core.proposals": frozenset({"Proposal", "Hunk", "ProposalStore", "read_current_text"}),
    "tether.core.tools.base": frozenset({"OpenDocument", "DocumentSource"}),
}


def _core_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, imported name or None for `import module`) for every tether.core import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.startswith("tether.core")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tether.core"):
            for alias in node.names:
                if node.module == "tether.core":  # `from tether.core import diff`: a module
                    found.append((node.lineno, f"tether.core.{alias.name}", None))
                else:
                    found.append((node.lineno, node.module, alias.name))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("tether.core")
        ):
            found.append((node.lineno, node.value, "<dynamic import string>"))
    return found


def violations(root: Path = PACKAGE) -> list[str]:
    bad: list[str] = []
    for face in FACES:
        for path in sorted((root / face).rglob("*.py")):
            for line, module, name in _core_imports(path):
                allowed = ALLOWED.get(module)
                ok = allowed is ANY_NAME or (
                    isinstance(allowed, frozenset) and name is not None and name in allowed
                )
                if not ok:
                    where = path.relative_to(root)
                    bad.append(f"{where}:{line}: {module}" + (f".{name}" if name else ""))
    return bad


def test_faces_use_only_the_session_the_gate_and_public_types() -> None:
    assert violations() == []


def test_the_check_sees_a_face_reaching_past_the_session(tmp_path: Path) -> None:
    """The check itself can fail: a face importing the config loader or the policy is caught."""
    face = tmp_path / "cli"
    face.mkdir()
    (face / "sneaky.py").write_text(
        "def run():\n"
        "    from tether.core.config import load_config\n"
        "    from tether.core.policy import decide\n"
        "    import tether.core.sandbox\n"
        "    return load_config, decide\n",
        encoding="utf-8",
    )
    for other in FACES[1:]:
        (tmp_path / other).mkdir()
    assert violations(tmp_path) == [
        "cli/sneaky.py:2: tether.core.config.load_config",
        "cli/sneaky.py:3: tether.core.policy.decide",
        "cli/sneaky.py:4: tether.core.sandbox",
    ]
