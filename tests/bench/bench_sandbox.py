"""Sandbox benchmark: spawn overhead per backend vs a plain spawn, and memory while capping 1 GB.

Run: python tests/bench/bench_sandbox.py [--rounds N]
Baselines are measured in the same run: a plain `subprocess` spawn of `true`, and the process's own
peak RSS before the big output. Goals (from issue 3): the preferred backend adds ≤ 10 ms over the
plain spawn; capping a 1 GB output grows peak memory by ≤ 32 MB. Goals are reported, not asserted.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tether.core.sandbox import STRENGTH_ORDER, RunRequest, auto_choice, make_runner, probe_backend

SPAWN_GOAL_MS = 10.0
MEMORY_GOAL_MB = 32.0


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def plain_spawn(rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(["true"], check=True)
        samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def backend_spawn(
    name: str,
    ws: Path,
    rounds: int,
    protected: tuple[Path, ...] | None = None,
    read_only: bool = False,
    masked: tuple[Path, ...] = (),
) -> float:
    runner = make_runner(name)
    request = RunRequest(
        read_only_workspace=read_only,
        argv=("true",),
        script=None,
        cwd=ws,
        workspace=ws,
        timeout=30,
        max_output_bytes=10_000,
        protected=protected if protected is not None else (ws / ".git",),
        masked=masked,
    )
    runner.run(request)  # warm-up (page cache, lazy imports)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = runner.run(request)
        samples.append(time.perf_counter() - start)
        if result.exit_code != 0:
            raise SystemExit(f"{name}: `true` failed: {result.stderr}")
    return _median_ms(samples)


@contextmanager
def raw_command(backend: str, ws: Path, protected: tuple[Path, ...]) -> Iterator[list[str] | None]:
    """The command line of `backend` (bubblewrap or firejail) running `true` with the same profile
    but no Tether around it, or None when it is not installed. The missing protected paths are made
    by hand for as long as it is used (what Tether's placeholders do on every run): what is left
    is the backend mounting each read-only — the floor for that profile."""
    from tether.core.sandbox.bwrap import bwrap_args, find_bwrap
    from tether.core.sandbox.firejail import find_firejail, firejail_args

    found = find_bwrap() if backend == "bubblewrap" else find_firejail()
    if found is None:
        yield None
        return
    made = [p for p in protected if not p.exists()]
    made_dirs = sorted({p.parent for p in made if not p.parent.exists()})
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    request = RunRequest(argv=("true",), script=None, cwd=ws, workspace=ws, timeout=30, max_output_bytes=1)
    build = bwrap_args if backend == "bubblewrap" else firejail_args
    try:
        yield build(request, protected, found[0])
    finally:
        for path in made:
            path.unlink()
        for directory in reversed(made_dirs):
            directory.rmdir()


def raw_spawn(backend: str, ws: Path, rounds: int, protected: tuple[Path, ...] | None = None) -> float | None:
    """Median of `raw_command` (with only `.git` pinned unless `protected` is given): separates the
    backend's cost from ours."""
    with raw_command(backend, ws, protected if protected is not None else (ws / ".git",)) as argv:
        if argv is None:
            return None
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def tether_share_over_raw_bwrap(root: Path, rounds: int) -> tuple[float, float] | None:
    """Medians of a Tether bubblewrap run with the real protected set, and of the per-round
    difference to `raw_command` with the same paths, the two taken in turn.

    Why in turn: on a shared machine the cost of a spawn drifts by several milliseconds within
    seconds, more than what Tether adds, so two medians taken one after the other compare two
    loads. Each side has a workspace of its own: the raw side's pre-made files would otherwise look
    like the user's to Tether, which then makes no placeholders at all.
    """
    from tether.core.sandbox.protected import protected_paths

    ours, raw_ws = root / "tether-side", root / "raw-side"
    for ws in (ours, raw_ws):
        (ws / ".git").mkdir(parents=True)
    runner = make_runner("bubblewrap")
    request = RunRequest(
        argv=("true",), script=None, cwd=ours, workspace=ours, timeout=30, max_output_bytes=10_000,
        protected=protected_paths(ours),
    )  # fmt: skip
    with raw_command("bubblewrap", raw_ws, protected_paths(raw_ws)) as argv:
        if argv is None:
            return None
        runner.run(request)  # warm-up
        subprocess.run(argv, check=True)
        ours_s, diffs = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            result = runner.run(request)
            middle = time.perf_counter()
            subprocess.run(argv, check=True)
            end = time.perf_counter()
            if result.exit_code != 0:
                raise SystemExit(f"bubblewrap: `true` failed: {result.stderr}")
            ours_s.append(middle - start)
            diffs.append((middle - start) - (end - middle))
    return _median_ms(ours_s), _median_ms(diffs)


def masks_and_spawn(name: str, ws: Path, rounds: int, base: float, protected: tuple[Path, ...]) -> None:
    """The secret mask's cost: finding the secret files (per command) and mounting over them."""
    from tether.core.policy.secrets import SecretSettings
    from tether.core.secret_files import find_secret_paths

    (ws / ".env").write_text("KEY=1\n")
    (ws / ".env.local").write_text("KEY=2\n")
    (ws / "certs").mkdir(exist_ok=True)
    for index in range(20):
        (ws / "certs" / f"service{index}.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (ws / ".ssh").mkdir(exist_ok=True)
    (ws / "src").mkdir(exist_ok=True)
    for index in range(2000):  # a tree to search: the finder must walk it
        (ws / "src" / f"m{index}.py").write_text("x = 1\n")
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        masked = tuple(find_secret_paths(ws, SecretSettings()))
        samples.append(time.perf_counter() - start)
    find_ms = _median_ms(samples)
    unmasked = backend_spawn(name, ws, rounds, protected)
    med = backend_spawn(name, ws, rounds, protected, masked=masked)
    print(
        f"{name:>10} secret mask of {len(masked)} paths (2,000-file tree): finding them {find_ms:.2f} ms, "
        f"spawn {med:.2f} ms vs {unmasked:.2f} ms unmasked (+{med - unmasked:.2f} ms for the mounts), "
        f"+{med + find_ms - base:.2f} ms over a plain spawn in all"
    )


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_while_capping(name: str, ws: Path) -> tuple[float, float, int]:
    runner = make_runner(name)
    request = RunRequest(
        argv=None,
        script="head -c 1000000000 /dev/zero | tr '\\0' 'x'",
        cwd=ws,
        workspace=ws,
        timeout=300,
        max_output_bytes=500_000,
    )
    before = rss_mb()
    start = time.perf_counter()
    result = runner.run(request)
    seconds = time.perf_counter() - start
    if result.stdout_bytes != 1_000_000_000:
        raise SystemExit(f"{name}: expected 1e9 bytes, read {result.stdout_bytes}")
    return rss_mb() - before, seconds, len(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    preferred = auto_choice()
    print(f"preferred backend (auto): {preferred}")
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as tmp:
        ws = Path(tmp).resolve()
        (ws / ".git").mkdir()
        base = plain_spawn(args.rounds)
        print(f"plain spawn of `true`: median {base:.2f} ms ({args.rounds} rounds)")
        raw = raw_spawn("bubblewrap", ws, args.rounds)
        if raw is not None:
            print(
                f"raw bwrap (same profile, no Tether): median {raw:.2f} ms, +{raw - base:.2f} ms over plain"
            )
        from tether.core.sandbox.protected import protected_paths

        full = protected_paths(ws)
        # the floor for the protected set: bwrap mounting the same paths, made beforehand, no Tether
        raw_full = raw_spawn("bubblewrap", ws, args.rounds, full) if preferred == "bubblewrap" else None
        overheads: dict[str, tuple[float, float]] = {}  # name -> (base profile, real protected set)
        for name in STRENGTH_ORDER:
            status = probe_backend(name)
            if not status.available:
                print(f"{name:>10}: skipped ({status.reason})")
                continue
            med = backend_spawn(name, ws, args.rounds)
            over = med - base
            goal = ""
            if name == preferred:
                verdict = "meets" if over <= SPAWN_GOAL_MS else "MISSES"
                goal = f"  [{verdict} goal ≤ {SPAWN_GOAL_MS:g} ms over plain]"
            print(
                f"{name:>10}: median {med:.2f} ms, +{over:.2f} ms over plain, ratio {med / base:.1f}x{goal}"
            )
            overheads[name] = (over, backend_spawn(name, ws, args.rounds, full) - base)
        if preferred in overheads:
            ref_base, ref_full = overheads[preferred]
            for name, (over, over_full) in overheads.items():
                if name == preferred:
                    continue
                verdict = "meets" if over_full <= 2 * ref_full else "MISSES"
                print(
                    f"{name:>10} against {preferred}: overhead {over / ref_base:.1f}x with the base profile, "
                    f"{over_full / ref_full:.1f}x with the {len(full)} protected paths "
                    f"(+{over_full:.2f} ms against +{ref_full:.2f} ms)  [{verdict} goal ≤ 2x]"
                )
                raw_other = raw_spawn(name, ws, args.rounds, full) if name == "firejail" else None
                if raw_other is not None and raw_full is not None:
                    # Tether's own share is the same for both backends and narrows the ratio: the
                    # backends' own costs, without Tether, are what the goal cannot go below.
                    own, bwrap_own = raw_other - base, raw_full - base
                    print(
                        f"  floor: raw {name} with the same {len(full)} paths (made beforehand, no Tether): "
                        f"+{own:.2f} ms over plain, {own / bwrap_own:.1f}x raw bwrap's +{bwrap_own:.2f} ms"
                    )
        if preferred is not None:
            med = backend_spawn(preferred, ws, args.rounds, full)
            print(
                f"{preferred:>10} with the policy's {len(full)} protected paths (most need a placeholder): "
                f"median {med:.2f} ms, +{med - base:.2f} ms over plain"
            )
            if raw_full is not None:
                print(
                    f"  floor: raw bwrap mounting the same {len(full)} paths read-only (made beforehand, "
                    f"no Tether): median {raw_full:.2f} ms, +{raw_full - base:.2f} ms over plain"
                )
            share = tether_share_over_raw_bwrap(Path(tmp), args.rounds) if preferred == "bubblewrap" else None
            if share is not None:
                print(
                    f"  taken in turn with that floor: Tether's run {share[0]:.2f} ms, its own share "
                    f"(placeholders, checks, arguments) is +{share[1]:.2f} ms (median per-round difference)"
                )
            med = backend_spawn(preferred, ws, args.rounds, full, read_only=True)
            print(
                f"{preferred:>10} read-mode command (read-only workspace, no placeholders): "
                f"median {med:.2f} ms, +{med - base:.2f} ms over plain"
            )
            masks_and_spawn(preferred, ws, args.rounds, base, full)
            growth, seconds, kept = memory_while_capping(preferred, ws)
            verdict = "meets" if growth <= MEMORY_GOAL_MB else "MISSES"
            print(
                f"1 GB output through {preferred}: peak RSS growth {growth:.1f} MB "
                f"[{verdict} goal ≤ {MEMORY_GOAL_MB:g} MB], kept {kept} chars, "
                f"{seconds:.1f} s ({1000 / seconds:.0f} MB/s)"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
