"""Cold start benchmark: `tether check` and `tether hook claude-code` against `python3 -c pass`;
and what `--sandbox` adds to one Claude Code Bash call (the hook, then `tether hook run`).

Run: python tests/bench/bench_cold_start.py [--rounds N]
A hook runs once per tool call of another agent, and `tether check` is what scripts call: both pay
the interpreter's start, Tether's imports and opening the session. The baseline is the same
interpreter doing nothing, measured in the same run. Goal (issue "Speed at scale"): check <= 3x.

Tether's modules are byte-compiled first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set
(as on these machines) an editable checkout would otherwise recompile stale modules on every start
and measure the compiler, not Tether.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# What any Python program deciding on a bash command pays before it decides anything: the
# tree-sitter binding and the bash grammar, one parse, and the stdlib modules a command line with a
# TOML config and JSON output imports (dataclasses brings `inspect`). The goal's ratio is measured
# against `pass`; this line shows how much of it is out of Tether's hands.
FLOOR = (
    "import argparse, dataclasses, json, pathlib, re, tomllib, typing\n"
    "import tree_sitter, tree_sitter_bash\n"
    "tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language())).parse(b'ls')"
)


def timed(argv: list[str], rounds: int, stdin: str = "", cwd: Path | None = None) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, cwd=cwd, env=ENV)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def sandboxed_call(ws: Path, command: str, rounds: int) -> tuple[float, float, float]:
    """Medians of: the hook with `--sandbox`, the rewritten command it hands Claude Code (the runner:
    session, secret listing, sandbox, audit line), and `command` run bare by bash, as without Tether."""
    event = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": str(ws),
        }
    )
    hooks, runs, bare = [], [], []
    with tempfile.TemporaryDirectory(prefix="tether-bench-state-") as state:  # grants, outside ws
        env = {**ENV, "XDG_STATE_HOME": state, "CLAUDE_PROJECT_DIR": str(ws)}
        for _ in range(rounds):
            start = time.perf_counter()
            answer = subprocess.run(
                [sys.executable, "-P", "-m", "tether", "hook", "claude-code", "--sandbox"],
                input=event, capture_output=True, text=True, check=True, cwd=ws, env=env,
            )  # fmt: skip
            hooks.append(time.perf_counter() - start)
            rewritten = json.loads(answer.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
            start = time.perf_counter()
            subprocess.run(["bash", "-c", rewritten], capture_output=True, check=False, cwd=ws, env=env)
            runs.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(["bash", "-c", command], capture_output=True, check=False, cwd=ws, env=env)
            bare.append(time.perf_counter() - start)
    return statistics.median(hooks), statistics.median(runs), statistics.median(bare)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    import tether

    compileall.compile_dir(Path(tether.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as tmp:
        ws = Path(tmp)
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        base = timed([sys.executable, "-c", "pass"], args.rounds)
        floor = timed([sys.executable, "-c", FLOOR], args.rounds)
        check = timed([sys.executable, "-m", "tether", "check", "--workspace", str(ws), "ls"], args.rounds)
        event = json.dumps(
            {
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "git status"},
                "cwd": str(ws),
            }
        )
        hook = timed(
            [sys.executable, "-m", "tether", "hook", "claude-code", "--workspace", str(ws)],
            args.rounds,
            event,
        )
        print(f"python3 -c pass:          median {base * 1000:7.1f} ms ({args.rounds} rounds)")
        ratio = check / base
        print(f"tether check ls:          median {check * 1000:7.1f} ms   ratio {ratio:5.1f}x (goal <= 3x)")
        print(f"tether hook claude-code:  median {hook * 1000:7.1f} ms   ratio {hook / base:5.1f}x")
        print(
            f"floor (bash parser + the stdlib a CLI needs, one parse): median {floor * 1000:7.1f} ms   "
            f"ratio {floor / base:5.1f}x; tether check is {check / floor:4.1f}x the floor"
        )
        (ws / "src").mkdir()
        (ws / "src" / "app.py").write_text("print(1)\n")
        with_sandbox, runner, bare = sandboxed_call(ws, "ls src", args.rounds)
        print(
            f"hook --sandbox:           median {with_sandbox * 1000:7.1f} ms; then `tether hook run`: "
            f"median {runner * 1000:7.1f} ms, for `ls src` that takes {bare * 1000:.1f} ms bare "
            f"(+{(with_sandbox + runner - hook) * 1000:.0f} ms a call over the hook without --sandbox)"
        )


if __name__ == "__main__":
    main()
