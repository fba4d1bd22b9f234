"""Benchmark: full policy decision vs a bare tree-sitter parse of the same ~250 commands.

Plain script (run by `make bench`): prints per-command medians of both, the median ratio, and the
ratio of total time. Goal: a decision costs at most 3x the bare parse. Both are measured in this
run, on this machine, on the benign corpus of tests/unit/test_policy_corpus.py.

    python tests/bench/bench_policy.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from test_policy_corpus import BENIGN_COMMAND, BENIGN_READ  # noqa: E402

from tether.core.policy import PolicySettings, decide  # noqa: E402
from tether.core.policy.parse import parser  # noqa: E402


def _workspace(root: Path) -> Path:
    ws = root / "project"
    for rel in ("src/app.py", "src/config.py", "tests/test_app.py", "README.md", "pyproject.toml"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    (ws / ".git").mkdir()
    return ws


def _visit_all(source: bytes) -> int:
    """Parse and touch every node once from Python: the floor for any tree-walking policy."""
    stack = [parser().parse(source).root_node]
    count = 0
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children)
    return count


def _per_command_median(fn: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000.0  # microseconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200, help="timed repetitions per command")
    args = ap.parse_args()
    corpus = [(c, "read") for c in BENIGN_READ] + [(c, "command") for c in BENIGN_COMMAND]
    settings = PolicySettings()
    p = parser()
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp))
        denied = [c for c, m in corpus if not decide(c, m, ws, settings).allowed]  # also warms caches
        parse_us, visit_us, decide_us = [], [], []
        for command, mode in corpus:
            source = command.encode()
            parse_us.append(_per_command_median(lambda s=source: p.parse(s), args.rounds))
            visit_us.append(_per_command_median(lambda s=source: _visit_all(s), args.rounds))
            decide_us.append(
                _per_command_median(lambda c=command, m=mode: decide(c, m, ws, settings), args.rounds)
            )
    ratios = [d / b for d, b in zip(decide_us, parse_us, strict=True)]
    worst = sorted(zip(ratios, (c for c, _ in corpus), strict=True), reverse=True)[:5]
    print(f"policy benchmark: {len(corpus)} commands x {args.rounds} rounds (denied: {len(denied)})")
    rows = (
        ("bare tree-sitter parse", parse_us),
        ("parse + visit every node", visit_us),
        ("full decision", decide_us),
    )
    for label, values in rows:
        print(f"  {label:24} median {statistics.median(values):8.1f} us   total {sum(values):9.1f} us")
    print(
        f"  ratio decision/parse     median {statistics.median(ratios):8.2f} x    "
        f"of totals {sum(decide_us) / sum(parse_us):5.2f} x   (goal <= 3x)"
    )
    visit_ratio = statistics.median(d / v for d, v in zip(decide_us, visit_us, strict=True))
    print(f"  ratio decision/(parse+visit) median {visit_ratio:5.2f} x")
    print("  slowest relative to their parse:")
    for ratio, command in worst:
        print(f"    {ratio:6.2f} x  {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
