"""kill -9 at random moments during checkpoints and rollbacks (200 iterations, real processes).

Each iteration runs one operation in a child process and SIGKILLs it after a random delay. Then:
the audit log parses and its chain verifies (a torn last line is skipped); the store passes
`git fsck`; after `recover()` (which every later call runs first) the tree is wholly the state
before or wholly the target state; and every listed checkpoint restores exactly its tree.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _checkpoint_support import init_repo, listing

from tether.core.checkpoints import Checkpoints
from tether.core.config import CheckpointSettings

CHILD = r"""
import sys
from pathlib import Path
from tether.core.audit import AuditLog, make_entry
from tether.core.checkpoints import Checkpoints
from tether.core.config import CheckpointSettings

ws, op, arg = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
store = Checkpoints(ws, CheckpointSettings(keep_count=40))
log = AuditLog(ws)
print("ready", flush=True)
sys.stdin.readline()
if op == "create":
    cp = store.create("crash-test")
    commit = cp.id
else:
    _plan, before = store.rollback(to=arg)
    commit = before.id
log.append(make_entry(tool=op, input={"blob": "x" * 300_000}, result=None, success=True, dry_run=False,
                      duration_ms=0, conversation_id=None, git_commit=commit, error=None, decision=None,
                      sandbox=None))
print("done", flush=True)
"""

SETTINGS = CheckpointSettings(keep_count=40)


def tree_of(store_dir: Path, commit: str) -> dict[str, tuple[str, str]]:
    out = subprocess.run(
        ["git", f"--git-dir={store_dir}", "ls-tree", "-r", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout
    files: dict[str, tuple[str, str]] = {}
    for item in out.split(b"\0"):
        if not item:
            continue
        meta, _, path = item.partition(b"\t")
        mode, _kind, sha = meta.decode().split(" ")
        files[os.fsdecode(path)] = (mode, sha)
    return files


def mutate(ws: Path, rng: random.Random, i: int) -> None:
    names = sorted(p.name for p in (ws / "data").iterdir())
    for name in rng.sample(names, k=min(len(names), rng.randint(5, 20))):
        path = ws / "data" / name
        roll = rng.random()
        if roll < 0.7:
            path.write_bytes(os.urandom(8) * rng.randint(1, 12_000))
        elif roll < 0.85:
            path.unlink()
        else:
            os.chmod(path, path.stat().st_mode ^ 0o100)
    for j in range(rng.randint(0, 6)):
        (ws / "data" / f"new-{i}-{j}.bin").write_bytes(os.urandom(16) * rng.randint(1, 8000))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_kill_minus_nine_during_checkpoints_and_rollbacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    files = {f"data/f{i:03d}.bin": "seed\n" * 2000 for i in range(60)}
    ws = init_repo(tmp_path / "ws", files)
    store = Checkpoints(ws, SETTINGS)
    store_dir = ws / ".git" / "tether" / "store"
    rng = random.Random(20261122)
    store.create("seed")
    stats = {"create": 0, "rollback": 0, "killed": 0, "mid_rollback": 0, "torn_log": 0}
    env = dict(os.environ)
    for i in range(200):
        cps = store.list()
        if i % 2 == 0 or len(cps) < 2:
            mutate(ws, rng, i)
            op, arg, expected = "create", "-", None
        else:
            target = rng.choice(cps)
            op, arg, expected = "rollback", target.id, tree_of(store_dir, target.commit)
        stats[op] += 1
        before = listing(ws)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(ws), op, arg],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdin is not None
        assert child.stdout.readline() == b"ready\n"
        child.stdin.write(b"go\n")
        child.stdin.flush()
        time.sleep(rng.uniform(0, 0.25))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            stats["killed"] += 1
        child.communicate(timeout=60)
        if child.returncode == 0:
            pass
        else:
            assert child.returncode == -signal.SIGKILL, f"child failed on its own: rc={child.returncode}"

        log_path = ws / ".tether" / "tool_log.jsonl"
        if log_path.exists() and not log_path.read_bytes().endswith(b"\n"):
            stats["torn_log"] += 1
        from tether.core.audit import AuditLog

        audit = AuditLog(ws)
        audit.read()
        verdict = audit.verify()
        assert verdict.ok, verdict.reason

        if (ws / ".git" / "tether" / "rollback-journal.json").exists():
            stats["mid_rollback"] += 1
        store.recover()
        after = listing(ws)
        if op == "create":
            assert after == before, f"iteration {i}: a checkpoint changed the tree"
        else:
            assert after in (before, expected), f"iteration {i}: tree is neither before nor after"
        subprocess.run(
            [
                "git",
                f"--git-dir={store_dir}",
                "fsck",
                "--connectivity-only",
                "--no-dangling",
                "--no-progress",
            ],
            check=True,
            capture_output=True,
        )
    # every listed checkpoint restores exactly its tree
    for cp in store.list():
        store.rollback(to=cp.id)
        assert listing(ws) == tree_of(store_dir, cp.commit)
    print(stats)
    assert stats["killed"] > 50
    assert stats["mid_rollback"] > 0, "no kill landed inside a rollback: the test did not test recovery"
