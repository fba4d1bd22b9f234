"""API failures as the real SDK meets them over HTTP (401, 403, 429, 5xx, 529, drops, stalls), and the
API key's confinement: it never reaches logs, conversations, the audit log, the screen or a command."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tether.agent import AgentEvent, create_agent
from tether.agent.anthropic_client import OFFLINE_KEY, resolve_endpoint
from tether.agent.fakeapi import FakeAnthropicServer, parse_script
from tether.agent.render import TerminalRenderer
from tether.core.config import AgentSettings, EffectiveConfig, config_from_mappings
from tether.core.session import FaceOverrides, open_session
from tether.errors import AgentError

MODEL = "claude-sonnet-5-5"
SECRET = "sk-ant-api03-TESTSECRET-0123456789abcdefghijklmnop"
OK = {"content": "Recovered fine."}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _ask(
    ws: Path, steps: list[dict[str, Any]], *, events: list[AgentEvent] | None = None, **client_options: Any
) -> tuple[Any, FakeAnthropicServer]:
    """Run one turn against the script; returns (TurnResult or the AgentError, the server)."""
    options = {"max_retries": 2, "timeout": 30.0, "backoff": 0.01, **client_options}
    with FakeAnthropicServer(parse_script(steps)) as api:
        gate = open_session(ws, FaceOverrides(permissions="read"), config=EffectiveConfig()).gate
        settings = AgentSettings(model=MODEL, base_url=api.url)
        agent = create_agent(
            gate,
            settings,
            on_event=(events.append if events is not None else None),
            environ={},
            client_options=options,
        )
        try:
            outcome: Any = asyncio.run(agent.ask("hello"))
        except AgentError as exc:
            outcome = exc
    return outcome, api


def _statuses(api: FakeAnthropicServer) -> list[int]:
    return [r.status for r in api.requests]


def test_401_is_not_retried_and_says_where_the_key_goes(workspace: Path) -> None:
    error, api = _ask(workspace, [{"error": {"status": 401, "message": "invalid x-api-key"}}, OK])
    assert isinstance(error, AgentError)
    assert "401" in str(error)
    assert "ANTHROPIC_API_KEY" in str(error)
    assert _statuses(api) == [401]


def test_403_suggests_another_model(workspace: Path) -> None:
    error, _ = _ask(workspace, [{"error": {"status": 403, "message": "model not allowed"}}])
    assert isinstance(error, AgentError)
    assert "--model" in str(error)
    assert "model not allowed" in str(error)


def test_429_with_retry_after_is_waited_out_and_shown(workspace: Path) -> None:
    events: list[AgentEvent] = []
    result, api = _ask(workspace, [{"error": {"status": 429, "retry_after": 0.05}}, OK], events=events)
    assert result.text == "Recovered fine."
    assert _statuses(api) == [429, 200]
    assert api.requests[1].headers["x-stainless-retry-count"] == "1"
    notices = [e.text for e in events if e.kind == "retry"]
    assert len(notices) == 1
    assert "rate limited (HTTP 429)" in notices[0]
    assert "0.05s" in notices[0]


def test_429_until_retries_run_out(workspace: Path) -> None:
    error, api = _ask(workspace, [{"error": {"status": 429, "retry_after": 0.05}}] * 3)
    assert isinstance(error, AgentError)
    assert "rate limited (HTTP 429)" in str(error)
    assert "3 attempts" in str(error)
    assert _statuses(api) == [429, 429, 429]


def test_a_retry_after_longer_than_we_wait_fails_at_once(workspace: Path) -> None:
    error, api = _ask(workspace, [{"error": {"status": 429, "retry_after": 3600}}, OK])
    assert isinstance(error, AgentError)
    assert "3600s" in str(error)
    assert _statuses(api) == [429]


@pytest.mark.parametrize(
    ("status", "words"), [(529, "overloaded (HTTP 529)"), (500, "internal error (HTTP 500")]
)
def test_server_errors_are_retried_then_explained(workspace: Path, status: int, words: str) -> None:
    recovered, api = _ask(workspace, [{"error": {"status": status}}, OK])
    assert recovered.text == "Recovered fine."
    assert _statuses(api) == [status, 200]
    error, api = _ask(workspace, [{"error": {"status": status}}] * 3)
    assert isinstance(error, AgentError)
    assert words in str(error)


def test_connection_dropped_before_the_response(workspace: Path) -> None:
    result, _api = _ask(workspace, [{"drop": "before_response"}, OK])
    assert result.text == "Recovered fine."
    error, _ = _ask(workspace, [{"drop": "before_response"}] * 3)
    assert isinstance(error, AgentError)
    assert "could not reach" in str(error)
    assert "fake-api" in str(error)  # offline: the hint is about the local server


def test_connection_dropped_mid_stream_is_restarted_by_us(workspace: Path) -> None:
    events: list[AgentEvent] = []
    result, api = _ask(workspace, [{"drop": "mid_stream"}, OK], events=events)
    assert result.text == "Recovered fine."  # the partial answer was discarded, not glued on
    assert _statuses(api) == [200, 200]
    assert [e.kind for e in events if e.kind in ("restart", "retry")] == ["restart"]
    error, _ = _ask(workspace, [{"drop": "mid_stream"}] * 3)
    assert isinstance(error, AgentError)
    assert "kept dropping" in str(error)


def test_overloaded_error_event_mid_stream_is_restarted(workspace: Path) -> None:
    result, _ = _ask(workspace, [{"error_event": {"type": "overloaded_error", "message": "Overloaded"}}, OK])
    assert result.text == "Recovered fine."


def test_a_stalled_response_times_out(workspace: Path) -> None:
    error, _api = _ask(workspace, [{"drop": "stall"}], timeout=0.5, max_retries=0)
    assert isinstance(error, AgentError)
    assert "timed out" in str(error)


def test_error_turns_are_recorded_in_the_conversation(workspace: Path) -> None:
    error, _ = _ask(workspace, [{"error": {"status": 401}}])
    assert isinstance(error, AgentError)
    events = list((workspace / ".tether" / "conversations").glob("*/events.jsonl"))
    assert len(events) == 1
    assert '"error"' in events[0].read_text()


# --- the key --------------------------------------------------------------------------------------


def test_key_sources_env_then_user_config_never_project() -> None:
    assert (
        resolve_endpoint(AgentSettings(api_key="from-user-config"), {"ANTHROPIC_API_KEY": SECRET}).api_key
        == SECRET
    )
    assert (
        resolve_endpoint(AgentSettings(api_key="from-user-config-123"), {}).api_key == "from-user-config-123"
    )
    project = config_from_mappings({}, {"agent": {"api_key": "evil-key", "base_url": "https://evil.example"}})
    assert project.agent.api_key is None
    assert project.agent.base_url is None
    assert any("only the user config" in w for w in project.warnings)
    with pytest.raises(AgentError, match="ANTHROPIC_API_KEY"):
        resolve_endpoint(project.agent, {})
    offline = resolve_endpoint(AgentSettings(base_url="http://127.0.0.1:9"), {})
    assert offline.offline
    assert offline.api_key == OFFLINE_KEY
    with pytest.raises(AgentError):  # no key and a remote URL: refuse, never send a placeholder there
        resolve_endpoint(AgentSettings(base_url="https://proxy.example.com"), {})
    assert SECRET not in repr(resolve_endpoint(AgentSettings(), {"ANTHROPIC_API_KEY": SECRET}))


def test_the_key_never_reaches_disk_logs_screen_or_the_model(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    screen = io.StringIO()
    renderer = TerminalRenderer(Console(file=screen, width=200), "debug")
    (workspace / "settings.txt").write_text(f"token={SECRET}\n")  # a file that happens to hold it
    steps = [
        {
            "content": [
                {"tool_use": {"name": "read_file", "input": {"path": "notes.txt"}}},
                {"tool_use": {"name": "read_file", "input": {"path": "settings.txt"}}},
            ]
        },
        {"error": {"status": 401}},
    ]
    with FakeAnthropicServer(parse_script(steps)) as api:
        gate = open_session(workspace, FaceOverrides(permissions="read"), config=EffectiveConfig()).gate
        settings = replace(AgentSettings(model=MODEL, base_url=api.url))
        agent = create_agent(
            gate,
            settings,
            on_event=renderer,
            environ={"ANTHROPIC_API_KEY": SECRET},
            client_options={"max_retries": 0},
        )
        with pytest.raises(AgentError) as info:
            asyncio.run(agent.ask("read the notes"))
        received = repr([(r.headers, r.body) for r in api.requests])
    assert SECRET not in str(info.value)
    assert SECRET[:20] not in received  # the model never saw it: the file's copy was redacted
    assert "[REDACTED" in received  # the gate's credential marker or the agent's own
    assert SECRET not in screen.getvalue()
    assert SECRET not in caplog.text
    for path in (workspace / ".tether" / "conversations").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(), path
    counters = workspace / ".tether" / "config.json"
    assert SECRET not in counters.read_text()


PROBE = """\
import os


def test_probe():
    leaked = sorted(k for k, v in os.environ.items() if "TESTSECRET" in v or k.startswith("ANTHROPIC"))
    print("LEAKED:", leaked, "of", len(os.environ))
    assert not leaked
"""


def test_the_key_is_not_in_a_commands_environment(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's own key, taken from the environment, is not passed to the commands it runs."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    # the sandbox passes PATH through: put this interpreter's pytest on it
    monkeypatch.setenv(
        "PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )  # overridden by the settings below
    (workspace / "test_env_probe.py").write_text(PROBE)
    gate = open_session(workspace, FaceOverrides(permissions="read,command"), config=EffectiveConfig()).gate
    probe = gate.call("bash_command", {"command": "pytest -q -s test_env_probe.py"}, source="cli")
    if not probe.ok and "sandbox" in probe.text.lower() and "LEAKED" not in probe.text:
        pytest.skip(f"no sandbox here: {probe.text[:200]}")
    steps = [
        {
            "content": [
                {
                    "tool_use": {
                        "name": "bash_command",
                        "input": {"command": "pytest -q -s test_env_probe.py"},
                    }
                }
            ]
        },
        {
            "content": "No key in the environment.",
            "expect": {"tool_results": [{"is_error": False, "contains": "LEAKED: []"}]},
        },
    ]
    with FakeAnthropicServer(parse_script(steps)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        agent = create_agent(gate, AgentSettings(model=MODEL))  # key and URL from the real environment
        result = asyncio.run(agent.ask("is the key visible to commands?"))
        assert api.failures == []
    assert result.ended_normally
    assert "LEAKED: []" in result.tool_calls[0].outcome.content
    assert SECRET not in (workspace / ".tether" / "tool_log.jsonl").read_text()


def test_cli_rides_out_the_resilience_script(workspace: Path) -> None:
    from tether.agent.fakeapi import load_script

    script = load_script(Path(__file__).parent.parent / "fixtures" / "scripts" / "resilience.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["XDG_CONFIG_HOME"] = str(workspace.parent / "xdg")
    with FakeAnthropicServer(script) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tether",
                "ask",
                "--workspace",
                str(workspace),
                "--permissions",
                "read",
                "hi",
            ],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=100,
        )
        assert api.steps_left == 0
    assert proc.returncode == 0, proc.stderr
    assert "rate limited (HTTP 429); retrying in 0.2s" in proc.stdout
    assert "API overloaded (HTTP 529)" in proc.stdout
    assert "connection dropped mid-response" in proc.stdout
    assert proc.stdout.count("Got through in the end: the answer arrives once, complete.") == 1
