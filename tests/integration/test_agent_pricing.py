"""Prices, budgets and the wire shape of what the loop sends back (thinking blocks, tool results)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tether.agent import create_agent
from tether.agent.fakeapi import FakeAnthropicServer, parse_script
from tether.agent.model import Usage
from tether.agent.pricing import PRICES, price_for
from tether.core.config import AgentSettings, EffectiveConfig
from tether.core.session import FaceOverrides, open_session


@pytest.mark.parametrize(
    ("model", "per_in", "per_out"),
    [
        ("claude-sonnet-5-5", 2.0, 10.0),
        ("claude-opus-5-5", 4.0, 20.0),
        ("claude-haiku-4-5-20251001", 1.0, 5.0),  # a dated id uses its family's price
        ("claude-sonnet-4-5", 3.0, 15.0),
        ("CLAUDE-OPUS-4-1", 15.0, 75.0),
    ],
)
def test_known_prices(model: str, per_in: float, per_out: float) -> None:
    price = price_for(model)
    assert price.known
    assert price.cost(Usage(input_tokens=1_000_000)) == pytest.approx(per_in)
    assert price.cost(Usage(output_tokens=1_000_000)) == pytest.approx(per_out)


def test_cache_tokens_are_priced_and_unknown_models_cost_the_most() -> None:
    price = price_for("claude-sonnet-5-5")
    usage = Usage(cache_creation_input_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    assert price.cost(usage) == pytest.approx(2.0 * 1.25 + 2.0 * 0.1)
    unknown = price_for("claude-future-9")
    assert not unknown.known
    assert unknown.input_per_mtok == max(p.input_per_mtok for p in PRICES.values())
    assert unknown.output_per_mtok == max(p.output_per_mtok for p in PRICES.values())
    assert price.output_tokens_for(0.0) == 0
    assert price.output_tokens_for(0.001) == 100


def test_thinking_blocks_and_tool_results_go_back_verbatim(tmp_path: Path) -> None:
    """Newer models return thinking between tool calls; it must be sent back unchanged, with its signature."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    script = parse_script(
        [
            {
                "content": [
                    {"thinking": "I should read a.txt first."},
                    {"text": "Reading."},
                    {"tool_use": {"name": "read_file", "input": {"path": "a.txt"}}},
                    {"tool_use": {"name": "read_file", "input": {"path": "missing.txt"}}},
                ]
            },
            {
                "content": "Done.",
                "expect": {"tool_results": [{"is_error": False, "contains": "alpha"}, {"is_error": True}]},
            },
        ]
    )
    with FakeAnthropicServer(script) as api:
        gate = open_session(ws, FaceOverrides(permissions="read"), config=EffectiveConfig()).gate
        agent = create_agent(gate, AgentSettings(model="claude-sonnet-5-5", base_url=api.url), environ={})
        result = asyncio.run(agent.ask("read a.txt"))
        assert api.failures == []
        history = api.requests[1].body["messages"]
    assert result.ended_normally
    assistant = history[1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "I should read a.txt first.",
        "signature": "fake-signature-1-1",
    }
    assert assistant[1] == {"type": "text", "text": "Reading."}
    assert assistant[2]["type"] == "tool_use"
    assert set(assistant[2]) == {"type", "id", "name", "input"}
    results = history[2]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_fake_01_03", "toolu_fake_01_04"]
    assert "is_error" not in results[0]
    assert results[1]["is_error"] is True
