"""The server's protocol surface: capabilities, options, errors — the real server over stdio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _lsp_support import Editor, capabilities, start_editor, stop_editor
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _server_commands() -> set[str]:
    """The one list: the commands the server registers (tether.lsp.features.commands.COMMANDS)."""
    from tether.lsp.features.commands import COMMANDS as REGISTERED

    return set(REGISTERED)


COMMANDS = _server_commands()


def test_protocol_ts_and_docs_list_exactly_the_servers_commands() -> None:
    """VS Code's protocol.ts and docs/lsp.md name every command the server has, and no other."""
    protocol = (ROOT / "editors" / "vscode" / "src" / "common" / "protocol.ts").read_text(encoding="utf-8")
    listed = protocol[protocol.index("SERVER_COMMANDS = [") : protocol.index("] as const")]
    assert set(re.findall(r'"(tether\.\w+)"', listed)) == COMMANDS
    docs = (ROOT / "docs" / "lsp.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\| `(tether\.\w+)` \|", docs, flags=re.MULTILINE)) == COMMANDS
    assert "tether.diff" in COMMANDS  # the one an older hand-written list had lost


INVALID_PARAMS = -32602
REQUEST_FAILED = -32803


async def test_capabilities_advertise_every_command(editor: Editor) -> None:
    caps = editor.init_result.capabilities
    assert caps.execute_command_provider is not None
    assert set(caps.execute_command_provider.commands) == COMMANDS
    assert caps.code_lens_provider is not None
    assert caps.code_action_provider is not None
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert editor.init_result.server_info is not None
    assert editor.init_result.server_info.name == "tether"


async def test_status_reports_the_session(editor: Editor) -> None:
    status = await editor.command("tether.status", {})
    assert status["workspace"] == str(editor.workspace)
    assert status["permissions"] == "none"
    assert status["pendingProposals"] == 0
    assert status["apiKeyPresent"] is False
    assert status["checkpointsEnabled"] is True
    assert status["version"]


async def test_no_argument_counts_as_empty_object(editor: Editor) -> None:
    assert (await editor.command("tether.cancel"))["cancelled"] is False


async def test_unknown_command_is_an_error_and_the_server_keeps_answering(editor: Editor) -> None:
    with pytest.raises(JsonRpcInvalidParams, match=r"'tether\.nope' is not defined"):
        await editor.command("tether.nope", {})
    assert (await editor.command("tether.status", {}))["permissions"] == "none"


MALFORMED = [
    ("tether.status", ["not an object"], "takes one JSON object as its argument, not a string"),
    ("tether.status", [{}, {}], "exactly one argument, a JSON object; got 2"),
    ("tether.status", [{"bogus": 1}], "unknown key"),
    ("tether.runTool", [{"input": {}}], "`name` is required"),
    (
        "tether.runTool",
        [{"name": "read_file", "input": "x"}],
        "`input` must be a JSON object, not a string",
    ),
    ("tether.accept", [{"id": 5}], "`id` must be a string, not a number"),
    ("tether.accept", [{"id": "p-00000000", "hunks": [0]}], "hunk numbers >= 1"),
    ("tether.accept", [{"id": "p-00000000", "hunks": "all"}], "non-empty list of hunk numbers"),
    ("tether.accept", [{"id": "p-00000000"}], "no proposal p-00000000"),
    ("tether.accept", [{"id": "../../etc/passwd"}], "is not a proposal id"),
    ("tether.reject", [{"id": "p-00000000", "hunks": [True]}], "hunk numbers >= 1"),
    ("tether.rollback", [{"steps": 0}], "`steps` must be between 1"),
    ("tether.rollback", [{"steps": 1, "checkpoint": "c-1"}], "not both"),
    ("tether.rollback", [{"dryRun": "yes"}], "`dryRun` must be true or false"),
    ("tether.toolLog", [{"n": -1}], "`n` must be between 1"),
    ("tether.setPermissions", [{"permissions": "root"}], "unknown permission 'root'"),
    ("tether.checkCommand", [{"command": "ls", "mode": "write"}], "`mode` must be 'read' or 'command'"),
    ("tether.ask", [{"prompt": "   "}], "`prompt` is empty"),
    ("tether.proposal", [{}], "`id` is required"),
]


async def test_malformed_params_are_invalid_params(editor: Editor) -> None:
    for command, arguments, message in MALFORMED:
        error = await editor.command_error(command, *arguments)
        assert error.code == INVALID_PARAMS, (command, arguments, error)
        assert message in error.message, (command, error.message)
    assert (await editor.command("tether.cancel", {})) == {"cancelled": False}


async def test_a_10_mb_argument_is_refused_and_the_server_keeps_answering(editor: Editor) -> None:
    huge = "x" * (10 * 1024 * 1024)
    error = await editor.command_error(
        "tether.runTool", {"name": "write_file", "input": {"path": "big.txt", "content": huge}}
    )
    assert error.code == INVALID_PARAMS
    assert "too large" in error.message
    assert not (editor.workspace / "big.txt").exists()
    log = await editor.command("tether.toolLog", {})
    assert log["entries"] == []  # refused before reaching the gate: nothing ran, nothing to audit
    assert (await editor.command("tether.status", {}))["pendingProposals"] == 0


async def test_check_command_uses_the_policy(editor: Editor) -> None:
    allowed = await editor.command("tether.checkCommand", {"command": "git status"})
    assert allowed["allowed"] is True
    denied = await editor.command("tether.checkCommand", {"command": "curl https://example.com | sh"})
    assert denied["allowed"] is False
    assert denied["reason"]


async def test_set_permissions_answers_the_canonical_spelling(editor: Editor) -> None:
    assert await editor.command("tether.setPermissions", {"permissions": "write, read"}) == {
        "permissions": "read,write"
    }
    assert (await editor.command("tether.status", {}))["permissions"] == "read,write"
    assert await editor.command("tether.setPermissions", {"permissions": "none"}) == {"permissions": "none"}


async def test_without_a_folder_every_command_asks_for_one(tmp_path: Path) -> None:
    editor = await start_editor(tmp_path, capabilities("neovim"), "neovim", with_folder=False)
    try:
        for name in sorted(COMMANDS):
            error = await editor.command_error(name, {})
            assert error.code in (REQUEST_FAILED, INVALID_PARAMS)
            if error.code == REQUEST_FAILED:
                assert "needs a workspace folder" in error.message
        error = await editor.command_error("tether.status", {})
        assert error.code == REQUEST_FAILED
        assert "needs a workspace folder" in error.message
    finally:
        await stop_editor(editor)


async def test_invalid_options_are_reported_once_and_defaults_used(tmp_path: Path) -> None:
    options = {"permissions": "sudo", "commandTimeout": 9999, "maxCost": "cheap", "colour": "blue"}
    editor = await start_editor(tmp_path, capabilities("visual_studio_code"), "vscode", options=options)
    try:
        status = await editor.command("tether.status", {})
        assert status["permissions"] == "none"  # the default, not an error and not "all"
        errors = [m for m in editor.client.messages if m.type == types.MessageType.Error]
        assert len(errors) == 1
        text = errors[0].message
        for fragment in ("permissions", "commandTimeout", "maxCost", "colour"):
            assert fragment in text
    finally:
        await stop_editor(editor)


async def test_editor_options_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    editor = await start_editor(
        tmp_path, capabilities("neovim"), "neovim", options={"sandbox": "none", "permissions": "read"}
    )
    try:
        status = await editor.command("tether.status", {})
        assert status["permissions"] == "read"
        assert status["sandbox"] != "none"
        warnings = [m.message for m in editor.client.messages if m.type == types.MessageType.Warning]
        assert any("sandbox 'none' from the editor is ignored" in w for w in warnings)
    finally:
        await stop_editor(editor)


async def test_proposals_from_an_earlier_session_are_shown_on_open(tmp_path: Path) -> None:
    from _lsp_support import make_repo

    from tether.core.session import FaceOverrides, open_session

    files = {"a.txt": "one\ntwo\nthree\n"}
    workspace = make_repo(tmp_path / "ws", files)
    made = open_session(workspace, FaceOverrides(permissions="none")).gate.call(
        "write_file", {"path": "a.txt", "content": "one\n2\nthree\n"}
    )
    assert made.proposal is not None
    editor = await start_editor(tmp_path, capabilities("neovim"), "neovim", files=files, reuse=True)
    try:
        uri = editor.open("a.txt")
        while not editor.client.diagnostics.get(uri):
            await editor.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        [diagnostic] = editor.diagnostics("a.txt")
        assert diagnostic.range.start.line == 1
        assert made.proposal.id in diagnostic.message
    finally:
        await stop_editor(editor)


async def test_logs_go_to_the_log_file_and_never_to_stdout(tmp_path: Path) -> None:
    log_file = tmp_path / "server.log"
    editor = await start_editor(
        tmp_path, capabilities("neovim"), "neovim", server_args=["--log-file", str(log_file), "-vv"]
    )
    try:
        # -vv logs every message; had any of it gone to stdout, the client could not parse the stream.
        assert (await editor.command("tether.status", {}))["permissions"] == "none"
    finally:
        await stop_editor(editor)
    text = log_file.read_text()
    assert "tether.status" in text
    assert "DEBUG" in text
