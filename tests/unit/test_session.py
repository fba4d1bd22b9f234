"""`tether.core.session`: one assembly of the effective configuration, permissions audited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.core.config import EffectiveConfig, SandboxSettings
from tether.core.session import FaceOverrides, assemble_config, open_session
from tether.errors import ConfigError


def _user_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "user.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_face_never_turns_the_sandbox_off_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    config, warnings = assemble_config(ws, FaceOverrides(sandbox="none"), user_path=tmp_path / "absent.toml")
    assert config.sandbox.backend == "auto"
    assert any("ignored" in w for w in warnings)
    said_none = _user_config(tmp_path, '[sandbox]\nbackend = "none"\n')
    config, warnings = assemble_config(ws, FaceOverrides(sandbox="none"), user_path=said_none)
    assert config.sandbox.backend == "none"
    assert warnings == []
    config, _ = assemble_config(
        ws, FaceOverrides(sandbox="firejail", command_timeout=5, max_cost=1.0), user_path=said_none
    )
    assert (config.sandbox.backend, config.sandbox.command_timeout, config.agent.max_cost) == (
        "firejail",
        5,
        1.0,
    )


def test_the_project_config_cannot_raise_permissions_or_widen(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".tether").mkdir(parents=True)
    (ws / ".tether" / "config.toml").write_text(
        'permissions = "all"\n[policy]\nallow = ["curl"]\n[sandbox]\nbackend = "none"\n', encoding="utf-8"
    )
    user = _user_config(tmp_path, 'permissions = "read"\n')
    session = open_session(ws, user_path=user)
    assert session.permissions == frozenset({"read"})
    assert session.config.sandbox.backend == "auto"
    assert "curl" not in session.config.policy.extra_allowed
    assert sum("only the user config" in w for w in session.warnings) == 3


def test_face_permissions_win_over_the_user_default_and_are_validated(tmp_path: Path) -> None:
    user = _user_config(tmp_path, 'permissions = "read"\n')
    session = open_session(tmp_path, FaceOverrides(permissions="command,read"), user_path=user)
    assert session.permissions == frozenset({"read", "command"})
    with pytest.raises(ConfigError, match="unknown permission"):
        open_session(tmp_path, FaceOverrides(permissions="root"), user_path=user)


def test_path_tools_in_the_workspace_are_protected_for_every_face(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    # Even a config handed in directly (tests, embedders) gets the protection: no face can skip it.
    session = open_session(ws, config=EffectiveConfig())
    assert ".venv" in session.config.policy.extra_protected
    verdict = session.check_command("echo x > .venv/bin/pytest")
    assert verdict["allowed"] is False
    assert verdict["rule"] == "path.protected"


def test_the_python_running_tether_is_protected_when_it_lives_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not on PATH, yet the hook and its runner start it outside any sandbox: a `.pth` left in its
    site-packages would run there."""
    ws = tmp_path / "ws"
    (ws / "env" / "bin").mkdir(parents=True)  # no pyvenv.cfg: a conda, pixi or plain prefix
    monkeypatch.setattr(sys, "prefix", str(ws / "env"))
    session = open_session(ws, config=EffectiveConfig())
    assert "env" in session.config.policy.extra_protected
    verdict = session.check_command("echo x > env/lib/python3.11/site-packages/evil.pth", "workspace")
    assert verdict["rule"] == "path.protected"
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
    assert "env" not in open_session(ws, config=EffectiveConfig()).config.policy.extra_protected
    # An editable install from a checkout in the workspace: Tether's own code is what it loads.
    (ws / "server" / "tether").mkdir(parents=True)
    monkeypatch.setattr(tether, "__file__", str(ws / "server" / "tether" / "__init__.py"))
    protected = open_session(ws, config=EffectiveConfig()).config.policy.extra_protected
    assert "server" in protected
    (ws / "tether").mkdir()
    monkeypatch.setattr(tether, "__file__", str(ws / "tether" / "__init__.py"))
    protected = open_session(ws, config=EffectiveConfig()).config.policy.extra_protected
    assert "tether" in protected  # a flat layout: the package, not the whole workspace
    assert "." not in protected


def test_permission_changes_are_audited_and_every_line_records_the_set(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    session = open_session(tmp_path, FaceOverrides(permissions="read"), config=EffectiveConfig())
    session.gate.call("list_files", {"path": "."}, source="cli")
    changed = session.set_permissions("read,write", source="lsp")
    assert changed.ok
    assert changed.state == "executed"
    session.gate.call("list_files", {"path": "."}, source="cli")
    entries = session.gate.log()
    assert [e["tool"] for e in entries] == ["list_files", "set_permissions", "list_files"]
    change = entries[1]
    assert change["input"] == {"old": "read", "new": "read,write"}
    assert change["decision"]["decidedBy"] == "user"
    assert change["source"] == "lsp"
    assert [e["permissions"] for e in entries] == ["read", "read,write", "read,write"]
    assert session.gate.verify_log().ok


def test_a_read_only_session_has_no_permissions_and_refuses_changes(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("old\n")
    session = open_session(
        tmp_path, FaceOverrides(permissions="all", read_only=True), config=EffectiveConfig()
    )
    assert session.permissions == frozenset()
    refused = session.set_permissions("all", source="lsp")
    assert refused.state == "denied"
    assert session.permissions == frozenset()
    preview = session.gate.call("write_file", {"path": "a.txt", "content": "new\n"})
    assert preview.state == "proposed"
    assert session.gate.accept(preview.result["proposal_id"]).state == "denied"
    assert session.gate.rollback(steps=1).state == "denied"
    assert session.gate.checkpoint("x").state == "denied"
    assert (tmp_path / "a.txt").read_text() == "old\n"


def test_an_invalid_override_is_an_error_not_a_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        open_session(
            tmp_path, FaceOverrides(command_timeout=0), config=EffectiveConfig(sandbox=SandboxSettings())
        )
