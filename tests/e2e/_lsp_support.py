"""pytest-lsp harness (helpers; fixtures in conftest.py) for the real `tether serve` over stdio.

`Editor` plays the part of an editor around pytest-lsp's client: it keeps the text and version of
the buffers it opened, sends incremental `didChange` events like a real editor, and answers the
server's `workspace/applyEdit` (pytest-lsp has no default handler) by checking the version and
applying the edits to its buffer. Every server runs with its own XDG dirs and no API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "tether", "serve"]
CLIENTS = ["neovim", "visual_studio_code"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=_git_env()
    ).stdout


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )
    return env


def numbered(n: int, *, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def make_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository with `files` committed: the workspace the server guards."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root.resolve()


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TETHER_"))}
    env.update(
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
    )
    return env


def capabilities(name: str, *, annotations: bool = True) -> types.ClientCapabilities:
    caps = copy.deepcopy(client_capabilities(name))
    if not annotations and caps.workspace is not None and caps.workspace.workspace_edit is not None:
        caps.workspace.workspace_edit.change_annotation_support = None
    return caps


def apply_text_edits(text: str, edits: list[Any]) -> str:
    """Apply LSP TextEdits (all relative to `text`) the way an editor does.

    Positions are converted with one table of line starts; tests use ASCII/BMP text, where UTF-16
    units and code points agree.
    """
    starts = [0]
    newline = text.find("\n")
    while newline != -1:  # str.find, not a loop over characters: an editor applies edits in microseconds,
        starts.append(newline + 1)  # and bench_lsp must not time a slow test client
        newline = text.find("\n", newline + 1)

    def offset(pos: types.Position) -> int:
        if pos.line >= len(starts):
            return len(text)
        line_end = starts[pos.line + 1] - 1 if pos.line + 1 < len(starts) else len(text)
        return min(starts[pos.line] + pos.character, line_end)

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    pieces = []
    cursor = len(text)
    for start, end, new in spans:
        pieces.append(text[end:cursor])
        pieces.append(new)
        cursor = start
    pieces.append(text[:cursor])
    return "".join(reversed(pieces))


class Editor:
    """An editor around the pytest-lsp client: buffers, versions, applyEdit answers."""

    def __init__(
        self, client: LanguageClient, workspace: Path, result: types.InitializeResult, kind: str
    ) -> None:
        self.client = client
        self.workspace = workspace
        self.init_result = result
        self.kind = kind
        self.buffers: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.refuse = False
        self.events: list[Any] = []
        self.turn_updates: list[Any] = []
        """`tether/turn` notifications (clients that declared `chat`), in arrival order."""
        self.lens_refreshes = 0

        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return self._apply_edit(params)

        def lens_refresh(params: None) -> None:
            self.lens_refreshes += 1

        def tether_event(params: Any) -> None:
            self.events.append(params)

        def turn_update(params: Any) -> None:
            self.turn_updates.append(params)

        client.feature(types.WORKSPACE_APPLY_EDIT)(apply_edit)
        client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lens_refresh)
        client.feature("tether/event")(tether_event)
        client.feature("tether/turn")(turn_update)

    def uri(self, rel: str) -> str:
        return (self.workspace / rel).as_uri()

    # --- buffers ---------------------------------------------------------------------------------

    def open(self, rel: str, text: str | None = None) -> str:
        uri = self.uri(rel)
        if text is None:
            text = (self.workspace / rel).read_text(encoding="utf-8")
        self.buffers[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, edits: list[types.TextEdit]) -> None:
        """Apply edits to the buffer and tell the server incrementally (last edit first)."""
        ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
        self.buffers[uri] = apply_text_edits(self.buffers[uri], ordered)
        self.versions[uri] += 1
        changes = [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in ordered]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=changes,
            )
        )

    def replace_line(self, uri: str, line: int, text: str) -> None:
        rng = types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0)
        )
        self.change(uri, [types.TextEdit(range=rng, new_text=text)])

    def save(self, uri: str) -> None:
        path = Path(uri.removeprefix("file://"))
        path.write_text(self.buffers[uri], encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def _apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        if self.refuse:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")
        edit = params.edit
        per_uri: dict[str, list[Any]] = {}
        if edit.document_changes:
            for change in edit.document_changes:
                assert isinstance(change, types.TextDocumentEdit)
                uri = change.text_document.uri
                if (
                    change.text_document.version is not None
                    and change.text_document.version != self.versions.get(uri)
                ):
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
                per_uri.setdefault(uri, []).extend(change.edits)
        for uri, edits in (edit.changes or {}).items():
            per_uri.setdefault(uri, []).extend(edits)
        for uri, edits in per_uri.items():
            if uri not in self.buffers:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} is not open")
            self.change(uri, [types.TextEdit(range=e.range, new_text=e.new_text) for e in edits])
        return types.ApplyWorkspaceEditResult(applied=True)

    # --- commands --------------------------------------------------------------------------------

    async def command(self, name: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
        return await self.client.workspace_execute_command_async(params)

    async def command_error(self, name: str, *arguments: Any) -> JsonRpcException:
        try:
            await self.command(name, *arguments)
        except JsonRpcException as exc:
            return exc
        raise AssertionError(f"{name} did not fail")

    async def raw_request(self, method: str, params: Any) -> Any:
        """A request whose result stays plain JSON.

        pygls' client structures `(Command | CodeAction)[]` results as `Command` (it tries that
        member of the union first), so code actions are checked on the wire format instead.
        """
        protocol = self.client.protocol
        original = protocol.get_result_type
        protocol.get_result_type = lambda method: None  # type: ignore[method-assign]
        try:
            return await protocol.send_request_async(method, params)
        finally:
            protocol.get_result_type = original  # type: ignore[method-assign]

    async def next_diagnostics(self, rel: str) -> list[types.Diagnostic]:
        """Wait for the server's next diagnostics (call right after the change that causes them)."""
        await asyncio.wait_for(self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30)
        return self.diagnostics(rel)

    def diagnostics(self, rel: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(self.uri(rel), []))


async def start_editor(
    tmp_path: Path,
    caps: types.ClientCapabilities,
    kind: str,
    *,
    files: dict[str, str] | None = None,
    options: Any = None,
    with_folder: bool = True,
    user_config: str | None = None,
    env: dict[str, str] | None = None,
    server_args: list[str] | None = None,
    reuse: bool = False,
) -> Editor:
    """A server over a fresh git workspace (`reuse`: the one already at tmp_path/ws).

    `user_config` is written as the user's config.toml; `server_args` go after `tether serve`.
    """
    if reuse:
        workspace = (tmp_path / "ws").resolve()
    else:
        workspace = make_repo(tmp_path / "ws", files if files is not None else {"README.md": "hello\n"})
    home = tmp_path / "home"
    if user_config is not None:
        config_file = home / "config" / "tether" / "config.toml"
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(user_config, encoding="utf-8")
    config = ClientServerConfig(
        server_command=[*SERVER, *(server_args or [])], server_env={**server_env(home), **(env or {})}
    )
    client = await config.start()
    folders = [types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")] if with_folder else None
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            workspace_folders=folders,
            root_uri=workspace.as_uri() if with_folder else None,
            initialization_options=options if options is not None else {"permissions": "none"},
        )
    )
    return Editor(client, workspace, result, kind)


async def stop_editor(editor: Editor) -> None:
    try:
        await editor.client.shutdown_session()
    finally:
        await editor.client.stop()


@contextlib.asynccontextmanager
async def fake_api_server(tmp_path: Path, script: dict[str, Any]) -> AsyncIterator[str]:
    """The project's offline Messages-API server (`tether fake-api`) playing `script`; yields its URL."""
    path = tmp_path / f"script-{script.get('name', 'test')}.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tether",
        "fake-api",
        "--script",
        str(path),
        "--port",
        "0",
        "--quiet",
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await process.stdout.readline()).decode()
        yield next(word for word in line.split() if word.startswith("http://"))
    finally:
        process.terminate()
        await process.wait()
