"""The offline Messages API, driven by the real `anthropic` SDK (and raw HTTP) over real sockets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx2
import pytest

from tether.agent.fakeapi import FakeAnthropicServer, load_script, parse_script
from tether.errors import ConfigError

SCRIPTS = Path(__file__).parent.parent / "fixtures" / "scripts"


def _client(api: FakeAnthropicServer, **kw: object) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-test-key-0123456789", base_url=api.url, **kw)  # type: ignore[arg-type]


def _sse_events(raw: str) -> list[tuple[str, dict]]:
    events = []
    for chunk in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_stream_is_the_real_wire_format() -> None:
    script = parse_script(
        [
            {
                "content": [
                    {"text": "Reading the file now."},
                    {"tool_use": {"name": "read_file", "input": {"path": "a.py"}}},
                ]
            }
        ]
    )
    body = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with FakeAnthropicServer(script) as api:
        response = httpx2.post(f"{api.url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(response.text)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    start = events[0][1]["message"]
    assert start["content"] == []
    assert start["stop_reason"] is None
    assert start["usage"]["input_tokens"] > 0
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    tool_json = "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")
    assert text == "Reading the file now."
    assert len([d for d in deltas if d["type"] == "text_delta"]) > 1  # really streamed in pieces
    assert json.loads(tool_json) == {"path": "a.py"}
    block_starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert block_starts[1] == {"type": "tool_use", "id": "toolu_fake_01_02", "name": "read_file", "input": {}}
    message_delta = events[-2][1]
    assert message_delta["delta"]["stop_reason"] == "tool_use"
    assert message_delta["usage"]["output_tokens"] > 0


def test_sdk_streaming_and_plain_json_round_trip() -> None:
    script = parse_script(
        [
            {
                "content": [{"tool_use": {"name": "list_files", "input": {"path": "."}}}],
                "usage": {"input_tokens": 7},
            },
            {"content": "All done.", "expect": {"tool_results": [{"is_error": False, "contains": "a.py"}]}},
        ]
    )
    with FakeAnthropicServer(script) as api:
        client = _client(api)
        with client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "list"}]
        ) as stream:
            first = stream.get_final_message()
        assert first.stop_reason == "tool_use"
        assert first.usage.input_tokens == 7
        tool = first.content[0]
        assert tool.type == "tool_use"
        assert tool.input == {"path": "."}
        second = client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=100,
            messages=[
                {"role": "user", "content": "list"},
                {"role": "assistant", "content": [tool.to_dict()]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "a.py"}],
                },
            ],
        )
        assert second.content[0].text == "All done."
        assert second.stop_reason == "end_turn"
        assert api.failures == []


def test_mismatched_tool_result_ids_fail_loudly() -> None:
    script = parse_script([{"content": [{"tool_use": {"name": "x", "input": {}}}]}, {"content": "never"}])
    with FakeAnthropicServer(script) as api:
        client = _client(api, max_retries=0)
        first = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
        with pytest.raises(anthropic.BadRequestError, match="do not match the tool_use ids"):
            client.messages.create(
                model="m",
                max_tokens=10,
                messages=[
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [first.content[0].to_dict()]},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_wrong", "content": "?"}],
                    },
                ],
            )
        assert len(api.failures) == 1
        assert "toolu_wrong" in api.failures[0]


def test_tool_use_without_any_result_is_rejected() -> None:
    script = parse_script([{"content": "unused"}])
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "x", "input": {}}]},
        {"role": "user", "content": "and then?"},
    ]
    with FakeAnthropicServer(script) as api:
        with pytest.raises(anthropic.BadRequestError, match="toolu_1"):
            _client(api, max_retries=0).messages.create(model="m", max_tokens=10, messages=history)
        assert api.failures


def test_expectation_failure_names_what_was_missing() -> None:
    script = parse_script([{"content": "x", "expect": {"user_contains": ["awaits review"]}}])
    with FakeAnthropicServer(script) as api, pytest.raises(anthropic.BadRequestError, match="awaits review"):
        _client(api, max_retries=0).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )


def test_scripted_errors_and_sdk_retries() -> None:
    script = parse_script(
        [
            {"error": {"status": 429, "retry_after": 0.05}},
            {"drop": "before_response"},
            {"content": "third time lucky"},
            {"error": {"status": 401}},
        ]
    )
    with FakeAnthropicServer(script) as api:
        client = _client(api, max_retries=2)
        message = client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].text == "third time lucky"
        with pytest.raises(anthropic.AuthenticationError):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        requests = api.requests
    assert [r.status for r in requests] == [429, 200, 200, 401]
    assert [r.headers.get("x-stainless-retry-count") for r in requests[:3]] == ["0", "1", "2"]
    # the key reaches the server, but the server keeps only a fingerprint of it
    sent = requests[0].headers.get("x-api-key") or requests[0].headers.get("authorization", "")
    assert sent.startswith("<")
    assert "sk-test-key" not in repr(requests)


def test_missing_key_and_exhausted_script_answer_clear_errors() -> None:
    script = parse_script([{"content": "only one"}])
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    with FakeAnthropicServer(script) as api:
        unauthenticated = httpx2.post(f"{api.url}/v1/messages", json=body)
        assert unauthenticated.status_code == 401
        assert httpx2.post(f"{api.url}/v1/messages", json=body, headers={"x-api-key": "k"}).status_code == 200
        exhausted = httpx2.post(f"{api.url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert exhausted.status_code == 400
    assert "exhausted" in exhausted.json()["error"]["message"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"turns": []}, "non-empty `turns`"),
        ([{"content": "x", "error": {"status": 500}}], "exactly one of"),
        ([{"error": {"status": "bad"}}], "integer `status`"),
        ([{"drop": "sometimes"}], "`drop` should be one of"),
        ([{"content": [{"tool_use": {"input": {}}}]}], "needs a `name`"),
        ([{"content": [{"image": "x"}]}], "unknown block"),
        ([{"content": "x", "expect": {"nope": 1}}], "unknown expect"),
        ([{"content": "x", "hang_after": 0}], "hang_after"),
    ],
)
def test_bad_scripts_are_rejected_with_the_turn_named(data: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=r"turn 1|turns") as info:
        parse_script(data, where="demo.yaml")
    assert needle in str(info.value)


def test_every_fixture_script_parses() -> None:
    scripts = sorted(SCRIPTS.glob("*.yaml"))
    assert scripts, "the fixture scripts are missing"
    for path in scripts:
        assert load_script(path).steps


def test_cli_prints_its_url_and_serves(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"content": "hello from the CLI server"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "fake-api", "--script", str(script), "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = anthropic.Anthropic(api_key="k-0123456789", base_url=url, max_retries=0)
        message = client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].text == "hello from the CLI server"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("turns: [{content: x, bogus: 1}]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tether", "fake-api", "--script", str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "bogus" in proc.stderr
    assert "turn 1" in proc.stderr
