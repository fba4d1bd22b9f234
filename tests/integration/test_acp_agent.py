"""`tether acp` as a real process, driven by the `agent-client-protocol` SDK's own client side, with the
model played by Tether's offline Messages API (`tether fake-api`)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_support import git, init_repo
from acp import spawn_agent_process, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse

README = "".join(f"line {n}\n" for n in range(1, 11))

SCRIPT = {
    "name": "acp",
    "turns": [
        {
            "content": [
                {"text": "I will commit the work so far."},
                {
                    "tool_use": {
                        "id": "toolu_acp_commit",
                        "name": "bash_command",
                        "input": {"command": "git commit --allow-empty -q -m from-acp"},
                    }
                },
            ]
        },
        {
            "content": [
                {"text": "Committed. Now a small edit."},
                {
                    "tool_use": {
                        "id": "toolu_acp_edit",
                        "name": "write_file",
                        "input": {"path": "README.md", "content": README.replace("line 2\n", "line two\n")},
                    }
                },
            ]
        },
        {"content": [{"text": "Done: one commit, one proposed edit."}]},
    ],
}


class RecordingClient:
    """The editor's side: collects session updates and answers permission requests."""

    def __init__(self, choice: str) -> None:
        self.choice = choice
        self.updates: list[Any] = []
        self.questions: list[Any] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.questions.append((tool_call, [o.option_id for o in options]))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.choice))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def on_connect(self, conn: Any) -> None:
        pass


async def _fake_api(tmp_path: Path) -> tuple[asyncio.subprocess.Process, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tether", "fake-api", "--script", str(script), "--port", "0", "--quiet",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    return process, next(w for w in line.split() if w.startswith("http://"))


@pytest.mark.parametrize("choice", ["allow_once", "deny"])
async def test_a_prompt_streams_text_tool_calls_an_approval_and_a_diff(tmp_path: Path, choice: str) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": README})
    api, url = await _fake_api(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "ANTHROPIC_"))}
    env.update(
        ANTHROPIC_BASE_URL=url,
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TETHER_MANAGED_CONFIG=str(tmp_path / "managed.toml"),
    )
    client = RecordingClient(choice)
    before = int(git(ws, "rev-list", "--count", "HEAD").strip())
    try:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "tether",
            "acp",
            "--workspace",
            str(ws),
            "--permissions",
            "read,command",
            env=env,
            cwd=str(tmp_path),  # `--workspace` names the project, not the process's cwd
        ) as (conn, _process):
            init = await conn.initialize(
                protocol_version=1,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="test-editor", version="1"),
            )
            assert init.agent_info.name == "tether"
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            result = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("commit, then edit")]
            )
            assert result.stop_reason == "end_turn"
    finally:
        api.terminate()
        await api.wait()

    kinds = [u.session_update for u in client.updates]
    assert "agent_message_chunk" in kinds
    streamed = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert "I will commit the work so far." in streamed
    assert "Done: one commit, one proposed edit." in streamed
    starts = [u for u in client.updates if u.session_update == "tool_call"]
    assert [u.tool_call_id for u in starts] == ["toolu_acp_commit", "toolu_acp_edit"]
    assert starts[0].kind == "execute"
    ends = {u.tool_call_id: u for u in client.updates if u.session_update == "tool_call_update"}
    # the ask went to the editor as session/request_permission, with Tether's four answers
    (question, options) = client.questions[0]
    assert "git commit" in question.title
    assert "ask.git_state" in question.title
    assert options[0] == "allow_once"
    assert "deny" in options
    after = int(git(ws, "rev-list", "--count", "HEAD").strip())
    if choice == "allow_once":
        assert ends["toolu_acp_commit"].status == "completed"
        assert after == before + 1
    else:
        assert ends["toolu_acp_commit"].status == "failed"
        assert after == before
    # the edit (no write permission) is a proposal, shown as an ACP diff
    edit = ends["toolu_acp_edit"]
    diffs = [c for c in edit.content if c.type == "diff"]
    assert diffs
    assert diffs[0].path == "README.md"
    assert "line two" in diffs[0].new_text
    assert diffs[0].old_text == README
    assert edit.raw_output["proposalId"]
    assert (ws / "README.md").read_text() == README  # nothing written
