"""Language-server benchmark (plain script: `python tests/bench/bench_lsp.py`).

Measured at the client, over stdio, against the real `tether serve`:
- accept of a 5-hunk proposal on an open 10,000-line document: `tether.accept` sent → answer
  received, which includes the server's `workspace/applyEdit` round trip, the client applying the
  edits and its `didChange`, and the gate's checkpoint. Goal: median ≤ 50 ms. Baseline in the same
  session: a trivial command (`tether.cancel`), i.e. the bare JSON-RPC round trip.
- server start to `initialized`: process spawn → initialize answered → `initialized` sent. Baseline
  in the same run: a minimal pygls server that registers nothing (the floor for any pygls server).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from _lsp_support import Editor, capabilities, make_repo, server_env  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig  # noqa: E402

LINES = 10_000
HUNKS = 5
ACCEPTS = 15
STARTS = 7
VERBOSE = ["-v"] if "-v" in sys.argv else []
MINIMAL_SERVER = "from pygls.lsp.server import LanguageServer\nLanguageServer('minimal', 'v0').start_io()\n"


def document() -> str:
    return "".join(f"value_{i} = {i}  # some code on line {i}\n" for i in range(LINES))


def five_hunks(text: str, round_: int) -> str:
    lines = text.splitlines(keepends=True)
    for k in range(HUNKS):
        n = 100 + k * (LINES // HUNKS)
        lines[n] = f"value_{n} = {n} + {round_}  # changed\n"
    return "".join(lines)


async def start(command: list[str], env: dict[str, str], workspace: Path) -> tuple[float, object]:
    began = time.perf_counter()
    client = await ClientServerConfig(server_command=command, server_env=env).start()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities("visual_studio_code"),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    return (time.perf_counter() - began) * 1000, client


async def stop(client: object) -> None:
    await client.shutdown_session()  # type: ignore[attr-defined]
    await client.stop()  # type: ignore[attr-defined]


async def bench_start(tmp: Path) -> tuple[float, float]:
    workspace = make_repo(tmp / "start-ws", {"a.txt": "a\n"})
    env = server_env(tmp / "home")
    minimal = tmp / "minimal_server.py"
    minimal.write_text(MINIMAL_SERVER)
    tether_ms, base_ms = [], []
    for _ in range(STARTS):
        for command, bucket in (
            ([sys.executable, "-m", "tether", "serve"], tether_ms),
            ([sys.executable, str(minimal)], base_ms),
        ):
            elapsed, client = await start(command, env, workspace)
            bucket.append(elapsed)
            await stop(client)
    return statistics.median(tether_ms), statistics.median(base_ms)


async def bench_accept(tmp: Path) -> tuple[float, float, float]:
    workspace = make_repo(tmp / "accept-ws", {"big.py": document()})
    _elapsed, client = await start(
        [sys.executable, "-m", "tether", "serve", *VERBOSE], server_env(tmp / "home2"), workspace
    )
    init = types.InitializeResult(capabilities=types.ServerCapabilities())
    editor = Editor(client, workspace, init, "visual_studio_code")  # type: ignore[arg-type]
    try:
        uri = editor.open("big.py")
        accept_ms, propose_ms, trivial_ms = [], [], []
        for round_ in range(ACCEPTS):
            began = time.perf_counter()
            answer = await editor.command(
                "tether.runTool",
                {
                    "name": "write_file",
                    "input": {"path": "big.py", "content": five_hunks(editor.buffers[uri], round_)},
                },
            )
            propose_ms.append((time.perf_counter() - began) * 1000)
            proposal = answer["proposal"]
            assert len(proposal["hunks"]) == HUNKS, proposal["hunks"]
            began = time.perf_counter()
            result = await editor.command("tether.accept", {"id": proposal["id"]})
            accept_ms.append((time.perf_counter() - began) * 1000)
            assert result["applied"] == list(range(1, HUNKS + 1)), result
            assert result["appliedVia"] == "editor"
            began = time.perf_counter()
            await editor.command("tether.cancel", {})
            trivial_ms.append((time.perf_counter() - began) * 1000)
        edits = editor.edits[-1].edit.document_changes[0].edits  # type: ignore[index,union-attr]
        assert len(edits) == HUNKS
        return statistics.median(accept_ms), statistics.median(trivial_ms), statistics.median(propose_ms)
    finally:
        await stop(client)


def bench_gate_accept(tmp: Path) -> float:
    """The same accepts through the gate in-process, written to disk: checkpoint + proposal + write."""
    from tether.core.session import FaceOverrides, open_session

    workspace = make_repo(tmp / "gate-ws", {"big.py": document()})
    gate = open_session(workspace, FaceOverrides(permissions="none")).gate
    times = []
    for round_ in range(ACCEPTS):
        text = (workspace / "big.py").read_text()
        proposal = gate.call("write_file", {"path": "big.py", "content": five_hunks(text, round_)}).proposal
        assert proposal is not None
        began = time.perf_counter()
        result = gate.accept(proposal.id)
        times.append((time.perf_counter() - began) * 1000)
        assert result.ok, result.text
    return statistics.median(times)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        accept, trivial, propose = await bench_accept(tmp)
        gate_only = bench_gate_accept(tmp)
        print(f"accept 5-hunk proposal, open {LINES:,}-line document (round trip at the client, n={ACCEPTS})")
        print(f"  tether.accept (applyEdit + checkpoint)  median {accept:8.1f} ms   goal <= 50 ms")
        ratio = accept / trivial
        print(f"  trivial command round trip (baseline)   median {trivial:8.1f} ms   ratio {ratio:6.1f}x")
        ratio = accept / gate_only
        print(f"  gate.accept on disk, no LSP (baseline)  median {gate_only:8.1f} ms   ratio {ratio:6.1f}x")
        print(f"  tether.runTool write_file (proposal)    median {propose:8.1f} ms")
        tether_start, minimal_start = await bench_start(tmp)
        print(f"server start to initialized (n={STARTS})")
        print(f"  tether serve                            median {tether_start:8.1f} ms")
        ratio = tether_start / minimal_start
        print(
            f"  minimal pygls server (baseline)         median {minimal_start:8.1f} ms   ratio {ratio:6.1f}x"
        )


if __name__ == "__main__":
    asyncio.run(main())
