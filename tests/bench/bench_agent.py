"""Agent overhead: one turn through the loop vs a bare SDK streaming call, same server, same run.

Run: python tests/bench/bench_agent.py. Prints medians (ms) and the ratio to the baseline. The model is
the offline server, so this measures Tether's own cost per request (conversation files, budget
estimate, events) and per tool round (the gate), not the network.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anthropic

from tether.agent import create_agent
from tether.agent.fakeapi import FakeAnthropicServer, parse_script
from tether.core.config import AgentSettings, EffectiveConfig
from tether.core.session import FaceOverrides, open_session

ROUNDS = 30
TEXT = {"content": "A short answer of a few words, streamed in pieces."}
TOOL = {"content": [{"tool_use": {"name": "read_file", "input": {"path": "a.txt"}}}]}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def _bare(url: str) -> list[float]:
    client = anthropic.AsyncAnthropic(api_key="bench-key-0123456789", base_url=url)
    samples = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        async with client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            await stream.get_final_message()
        samples.append(time.perf_counter() - start)
    await client.close()
    return samples


async def _agent(url: str, ws: Path) -> list[float]:
    gate = open_session(ws, FaceOverrides(permissions="read"), config=EffectiveConfig()).gate
    agent = create_agent(gate, AgentSettings(model="claude-sonnet-5-5", base_url=url), environ={})
    samples = []
    for i in range(ROUNDS):
        start = time.perf_counter()
        await agent.ask("hi", conversation_id=f"c-bench-{i}")
        samples.append(time.perf_counter() - start)
    assert agent.client is not None
    await agent.client.aclose()
    return samples


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "a.txt").write_text("alpha\n" * 100)
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        with FakeAnthropicServer(parse_script([TEXT] * ROUNDS)) as api:
            bare = asyncio.run(_bare(api.url))
        with FakeAnthropicServer(parse_script([TEXT] * ROUNDS)) as api:
            text_turn = asyncio.run(_agent(api.url, ws))
        with FakeAnthropicServer(parse_script([TOOL, TEXT] * ROUNDS)) as api:
            tool_turn = asyncio.run(_agent(api.url, ws))
    base = _median_ms(bare)
    print(f"bare SDK streaming request      median {base:7.2f} ms  (baseline)")
    for name, samples in (
        ("agent turn, 1 request", text_turn),
        ("agent turn, read_file + answer", tool_turn),
    ):
        median = _median_ms(samples)
        print(f"{name:<32} median {median:7.2f} ms  ratio {median / base:5.2f}x")


if __name__ == "__main__":
    main()
