"""Benchmark: full policy decision vs a bare tree-sitter parse of the same ~250 commands.

Plain script (run by `make bench`): prints per-command medians of both, the median ratio, and the
ratio of total time. Goal: a decision costs at most 3x the bare parse. Both are measured in this
run, on this machine, on the benign corpus of tests/unit/test_policy_corpus.py.

    python tests/bench/bench_policy.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
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


_FS_CALLS = ("lstat", "stat", "scandir", "readlink")
_SCANDIR = os.scandir


def _fs_calls(decide_once: Callable[[], object]) -> list[tuple[Callable[..., object], tuple[object, ...]]]:
    """The file-system calls one decision makes (paths resolved one component at a time, globs
    listed, the bare-repository trap looked for), recorded by wrapping `os`: what any policy that
    checks paths against the real file system must do, in any language."""
    recorded: list[tuple[Callable[..., object], tuple[object, ...]]] = []
    originals = {name: getattr(os, name) for name in _FS_CALLS}

    def recording(fn: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            recorded.append((fn, args))
            return fn(*args, **kwargs)

        return call

    try:
        for name, fn in originals.items():
            setattr(os, name, recording(fn))
        decide_once()
    finally:
        for name, fn in originals.items():
            setattr(os, name, fn)
    return recorded


def _parse_and_replay(source: bytes, calls: list[tuple[Callable[..., object], tuple[object, ...]]]) -> None:
    parser().parse(source)
    for fn, args in calls:
        try:
            result = fn(*args)
            if fn is _SCANDIR:
                list(result)  # type: ignore[call-overload]  # reading the entries is the cost
        except OSError:
            pass


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
        parse_us, visit_us, fs_us, decide_us = [], [], [], []
        for command, mode in corpus:
            source = command.encode()
            parse_us.append(_per_command_median(lambda s=source: p.parse(s), args.rounds))
            visit_us.append(_per_command_median(lambda s=source: _visit_all(s), args.rounds))
            calls = _fs_calls(lambda c=command, m=mode: decide(c, m, ws, settings))
            fs_us.append(_per_command_median(lambda s=source, c=calls: _parse_and_replay(s, c), args.rounds))
            decide_us.append(
                _per_command_median(lambda c=command, m=mode: decide(c, m, ws, settings), args.rounds)
            )
    ratios = [d / b for d, b in zip(decide_us, parse_us, strict=True)]
    worst = sorted(zip(ratios, (c for c, _ in corpus), strict=True), reverse=True)[:5]
    print(f"policy benchmark: {len(corpus)} commands x {args.rounds} rounds (denied: {len(denied)})")
    rows = (
        ("bare tree-sitter parse", parse_us),
        ("parse + visit every node", visit_us),
        ("parse + its file calls", fs_us),
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
    fs_ratio = statistics.median(f / b for f, b in zip(fs_us, parse_us, strict=True))
    print(
        f"  floor: the parse and the file-system calls the decision makes, replayed: median "
        f"{fs_ratio:4.2f} x the parse; what the goal leaves for all the rest (quote removal, rules, "
        f"schemas, path rules) is {max(0.0, 3 - fs_ratio):4.2f} x the parse, "
        f"{max(0.0, 3 - fs_ratio) * statistics.median(parse_us):4.1f} us"
    )
    print("  slowest relative to their parse:")
    for ratio, command in worst:
        print(f"    {ratio:6.2f} x  {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
