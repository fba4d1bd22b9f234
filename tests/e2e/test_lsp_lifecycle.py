"""The server's life: an editor that crashes mid-turn must not leave an orphaned `tether serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from _lsp_support import make_repo, server_env

from tether.agent.fakeapi import FakeAnthropicServer, parse_script


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    pipe.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    pipe.flush()


def test_the_server_exits_when_its_client_dies_during_a_turn(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    script = parse_script({"name": "stall", "turns": [{"drop": "stall"}]}, where="test")
    with FakeAnthropicServer(script) as api:
        env = server_env(tmp_path / "home")
        env["ANTHROPIC_BASE_URL"] = api.url
        server = subprocess.Popen(
            [sys.executable, "-m", "tether", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ws,
        )
        try:
            assert server.stdin is not None
            _send(
                server.stdin,
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": {}},
                },
            )
            _send(server.stdin, {"method": "initialized", "params": {}})
            ask = {"command": "tether.ask", "arguments": [{"prompt": "hello"}]}
            _send(server.stdin, {"id": 2, "method": "workspace/executeCommand", "params": ask})
            for _ in range(600):  # the turn is under way once the model was asked
                if api.requests:
                    break
                time.sleep(0.05)
            assert api.requests, "the server never asked the model"
            server.stdin.close()  # the editor is gone, without shutdown or exit
            # The stalled response would hold a careless server for the SDK's 10-minute timeout.
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


def test_the_server_exits_when_its_client_dies_while_an_edit_awaits_it(tmp_path: Path) -> None:
    """An accept waits for the editor's answer to workspace/applyEdit: the editor never answers."""
    ws = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    server = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path / "home"),
        cwd=ws,
    )
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        caps = {"workspace": {"applyEdit": True}}
        init = {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": caps}
        _send(server.stdin, {"id": 1, "method": "initialize", "params": init})
        _send(server.stdin, {"method": "initialized", "params": {}})
        uri = (ws / "a.txt").as_uri()
        document = {"uri": uri, "languageId": "plaintext", "version": 1, "text": "a\n"}
        _send(server.stdin, {"method": "textDocument/didOpen", "params": {"textDocument": document}})
        write = {"name": "write_file", "input": {"path": "a.txt", "content": "b\n"}}
        _send(
            server.stdin,
            {"id": 2, "method": "workspace/executeCommand", "params": _command("tether.runTool", write)},
        )
        proposal_id = _result(server.stdout, 2)["result"]["proposalId"]
        _send(
            server.stdin,
            {
                "id": 3,
                "method": "workspace/executeCommand",
                "params": _command("tether.accept", {"id": proposal_id}),
            },
        )
        _wait_for(server.stdout, "workspace/applyEdit")
        server.stdin.close()  # the editor dies before answering
        assert server.wait(timeout=120) == 0
        assert (ws / "a.txt").read_text() == "a\n"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _command(name: str, argument: dict[str, Any]) -> dict[str, Any]:
    return {"command": name, "arguments": [argument]}


def _read(pipe: IO[bytes]) -> dict[str, Any]:
    length = 0
    while line := pipe.readline().strip():
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(pipe.read(length))
    return message


def _result(pipe: IO[bytes], request_id: int) -> Any:
    while True:
        message = _read(pipe)
        if message.get("id") == request_id and "method" not in message:
            assert "error" not in message, message
            return message["result"]


def _wait_for(pipe: IO[bytes], method: str) -> None:
    while _read(pipe).get("method") != method:
        pass
