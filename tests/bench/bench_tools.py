"""Benchmarks for the file/search tools and proposals (plain script: `python tests/bench/bench_tools.py`).

Prints medians and ratios against baselines measured in the same run:
- grep: ripgrep engine vs the pure-Python fallback on the same generated tree;
- list_files: ripgrep `--files` vs the Python walk;
- atomic_write (temp + fsync + rename) vs a plain `Path.write_bytes`;
- proposal create + plan_accept on a 5000-line file vs `difflib.unified_diff` alone;
- the audit log's redaction of a 10,000-line file (every write_file's content goes through it) vs
  `json.dumps` of the same text, which the audit line pays anyway.
"""

from __future__ import annotations

import difflib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))

from tether.core import fsutil  # noqa: E402
from tether.core.proposals import ProposalStore  # noqa: E402
from tether.core.redact import redact_text  # noqa: E402
from tether.core.tools.files import list_paths  # noqa: E402
from tether.core.tools.grep import Query, run_search  # noqa: E402


def median_ms(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def make_tree(root: Path, files: int = 400, lines: int = 200) -> None:
    (root / ".gitignore").write_text("build/\n")
    for i in range(files):
        sub = root / f"pkg{i % 20}"
        sub.mkdir(exist_ok=True)
        body = "".join(
            f"def function_{i}_{n}(x):\n    return x + {n}  # TODO check\n"
            if n % 50 == 0
            else f"    value_{n} = {n}\n"
            for n in range(lines)
        )
        (sub / f"mod{i}.py").write_text(body)
    (root / "build").mkdir()
    (root / "build" / "big.txt").write_text("TODO\n" * 10000)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root)
        query = Query("TODO", root, root, False, 0, 0, "content", None, 100_000)
        rg = median_ms(lambda: run_search(query, engine="ripgrep"))
        py = median_ms(lambda: run_search(query, engine="python"))
        print(
            f"grep (400 files x 200 lines): ripgrep {rg:.1f} ms, python {py:.1f} ms, "
            f"python/ripgrep {py / rg:.1f}x"
        )

        lrg = median_ms(lambda: list_paths(root, root, hidden=False, depth=None, engine="ripgrep"))
        lpy = median_ms(lambda: list_paths(root, root, hidden=False, depth=None, engine="python"))
        print(f"list_files: ripgrep {lrg:.1f} ms, python {lpy:.1f} ms, python/ripgrep {lpy / lrg:.1f}x")

        data = b"x = 1\n" * 2000
        target = root / "w.txt"
        target.write_bytes(data)
        plain = median_ms(lambda: target.write_bytes(data), repeat=21)
        atomic = median_ms(lambda: fsutil.atomic_write(target, data, root, display="w.txt"), repeat=21)
        print(f"write 12 KB: plain {plain:.3f} ms, atomic+fsync {atomic:.3f} ms, ratio {atomic / plain:.1f}x")

        base = "".join(f"line {i}\n" for i in range(5000))
        new = base.replace("line 100\n", "LINE 100\n").replace("line 4000\n", "changed\n")
        store = ProposalStore(root)

        def propose_and_plan() -> None:
            p = store.create("big.py", base, new, "bench")
            store.plan_accept(p.id, None, base)

        raw = median_ms(lambda: list(difflib.unified_diff(base.splitlines(True), new.splitlines(True))))
        full = median_ms(propose_and_plan)
        print(
            f"proposal 5000 lines: difflib alone {raw:.1f} ms, create+plan_accept {full:.1f} ms, "
            f"ratio {full / raw:.1f}x"
        )

    source = "".join(f"value_{i} = {i}  # some code on line {i}\n" for i in range(10_000))
    for label, text in (
        ("ASCII", source),
        ("with tokens, URLs", source.replace("# some code", "# token https://example.com/x")),
        ("non-ASCII", source.replace("# some", "# ſome é")),
    ):
        encode = median_ms(lambda t=text: json.dumps(t, ensure_ascii=False))
        redact = median_ms(lambda t=text: redact_text(t))
        print(
            f"audit redaction, 10,000 lines {label} ({len(text) // 1000} K chars): "
            f"json.dumps {encode:.1f} ms, redact_text {redact:.1f} ms, ratio {redact / encode:.1f}x"
        )


if __name__ == "__main__":
    main()
