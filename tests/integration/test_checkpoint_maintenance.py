"""Checkpoint maintenance runs off the call's path, beside checkpoints being written, and survives a kill.

Issue "Speed at scale": a full repack inside one `tether checkpoint` took 6.8 s. Now a checkpoint only
drops expired refs (one transaction) and marks packing due; `pack_objects()` runs after the call on a
thread of its own, without the store's lock. These tests check what makes that safe: the store stays
whole (`git fsck`), every kept checkpoint restores, while packing runs beside new checkpoints and when
the packing process is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _checkpoint_support import init_repo

from tether.core.checkpoints import MAINTENANCE_EVERY, Checkpoints
from tether.core.config import CheckpointSettings


def store_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", f"--git-dir={repo / '.git' / 'tether' / 'store'}", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def packs(repo: Path) -> int:
    out = store_git(repo, "count-objects", "-v").stdout
    return int(next(line.split(":")[1] for line in out.splitlines() if line.startswith("packs")))


def whole(repo: Path, store: Checkpoints) -> None:
    """The store is consistent and every kept checkpoint's tree is complete."""
    fsck = store_git(repo, "fsck", "--no-dangling", "--connectivity-only")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    for cp in store.list():
        listed = store_git(repo, "ls-tree", "-r", cp.commit)
        assert listed.returncode == 0, listed.stderr


def churn(repo: Path, store: Checkpoints, rounds: int, start: int = 0) -> None:
    for i in range(start, start + rounds):
        (repo / f"f{i % 7}.txt").write_text(f"round {i}\n" * (i % 5 + 1))
        store.create(f"round {i}")


def many_packs(repo: Path, store: Checkpoints, count: int) -> None:
    for i in range(count):
        churn(repo, store, 1, start=1000 + i)
        store_git(repo, "repack", "-d", "-q")  # one small pack per checkpoint


def test_a_checkpoint_never_packs_it_only_marks_packing_due(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "ws", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(keep_count=5))
    many_packs(repo, store, 12)
    before = packs(repo)
    assert before > 10
    churn(repo, store, MAINTENANCE_EVERY)  # crosses a maintenance point
    assert store.packing_due
    assert packs(repo) == before  # nothing was packed inside create
    assert len(store.list()) < 5 + MAINTENANCE_EVERY  # retention itself ran, at the maintenance point
    store.pack_objects()
    assert not store.packing_due
    assert packs(repo) <= 2  # one pack, plus a cruft pack for what became unreachable
    whole(repo, store)
    oldest = store.list()[-1]
    store.rollback(to=oldest.id)


def test_packing_beside_checkpoints_being_written_loses_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "ws", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(keep_count=50))
    many_packs(repo, store, 12)
    stop = threading.Event()
    errors: list[BaseException] = []

    def keep_packing() -> None:
        other = Checkpoints(repo, CheckpointSettings(keep_count=50))
        while not stop.is_set():
            try:
                other.pack_objects()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return

    packer = threading.Thread(target=keep_packing)
    packer.start()
    try:
        churn(repo, store, 40)
    finally:
        stop.set()
        packer.join(60)
    assert not errors
    whole(repo, store)
    newest = store.list()[0]
    (repo / "f0.txt").write_text("changed after\n")
    store.rollback(to=newest.id)
    assert (repo / "f0.txt").read_text() == "round 35\n"


def test_a_kill_during_packing_loses_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "ws", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(keep_count=20))
    many_packs(repo, store, 15)
    code = (
        "import sys; from pathlib import Path\n"
        "from tether.core.checkpoints import Checkpoints\n"
        "from tether.core.config import CheckpointSettings\n"
        "Checkpoints(Path(sys.argv[1]), CheckpointSettings(keep_count=20)).pack_objects()\n"
    )
    for delay in (0.05, 0.15, 0.3):
        proc = subprocess.Popen([sys.executable, "-c", code, str(repo)], start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)  # python and the git it runs, mid-way
        proc.wait()
        whole(repo, store)
    store.pack_objects()  # the next run finishes the job
    whole(repo, store)
    # Bounded, not "one pack": a kill can land after a full repack wrote its pack but before it
    # removed the old ones, leaving a few packs, which is below the repack threshold (10) and left
    # alone; above it, this run would have repacked (under load a fixed `<= 2` was flaky).
    assert packs(repo) <= 10


def test_packing_never_touches_what_a_checkpoint_in_flight_uses(tmp_path: Path) -> None:
    """Packing runs without the lock, beside a checkpoint: it must not sync the excludes or drop the
    private index (a checkpoint between `add` and `write-tree` would snapshot an empty tree). A
    store opened with other exclude settings is what would make it do both."""
    repo = init_repo(tmp_path / "ws", {"a.txt": "a\n"})
    Checkpoints(repo, CheckpointSettings()).create("first")
    index = repo / ".git" / "tether" / "index"
    excludes = repo / ".git" / "tether" / "store" / "info" / "exclude"
    before = (index.stat().st_ino, index.stat().st_mtime_ns, excludes.read_bytes())
    Checkpoints(repo, CheckpointSettings(exclude=("*.log",))).pack_objects()
    assert (index.stat().st_ino, index.stat().st_mtime_ns, excludes.read_bytes()) == before


def test_a_fanout_directory_pruned_under_a_checkpoint_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maintenance's `prune` empties and removes `objects/ab/` while a checkpoint writes an object
    there: git fails that write ("unable to create temporary file: No such file or directory"), and
    the checkpoint failed with it (seen in CI beside the packing test above). The race is git's own
    and cannot be timed from outside, so a `git` on PATH fails the first `commit-tree` with git's
    message, then hands every call to the real git."""
    repo = init_repo(tmp_path / "ws", {"a.txt": "a\n"})
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    once = tmp_path / "failed-once"
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" commit-tree "*) if [ ! -e "{once}" ]; then touch "{once}"; '
        'echo "error: unable to create temporary file: No such file or directory" >&2; '
        'echo "fatal: failed to write commit object" >&2; exit 128; fi;; esac\n'
        f'exec "{real_git}" "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("t")
    assert once.exists(), "the failure was injected"
    (repo / "a.txt").write_text("changed\n")
    store.rollback(to=cp.id)
    assert (repo / "a.txt").read_text() == "a\n"
