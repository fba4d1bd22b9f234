"""A rollback cut short (deterministically, half-way through its writes) is finished by the next call."""

from __future__ import annotations

from pathlib import Path

import pytest
from _checkpoint_support import fingerprint, init_repo, listing

from tether.core.checkpoints import Checkpoints, restore
from tether.core.config import CheckpointSettings
from tether.errors import CheckpointError


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so nothing on the way catches it."""


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.mark.parametrize("next_call", ["create", "rollback", "recover"])
def test_interrupted_rollback_is_completed_by_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, next_call: str
) -> None:
    repo = init_repo(tmp_path / "r", {f"f{i}.txt": f"{i}\n" for i in range(10)})
    store = Checkpoints(repo, CheckpointSettings())
    target = store.create("t")
    state_a = fingerprint(listing(repo))
    for i in range(10):
        (repo / f"f{i}.txt").write_text(f"changed {i}\n")
    (repo / "extra.txt").write_text("created since\n")
    state_b = fingerprint(listing(repo))

    real_write = restore._write_one
    calls = {"n": 0}

    def dying_write(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise Crash
        real_write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(restore, "_write_one", dying_write)
    with pytest.raises(Crash):
        store.rollback(to=target.id)
    monkeypatch.setattr(restore, "_write_one", real_write)

    half = fingerprint(listing(repo))
    assert half not in (state_a, state_b), "the crash must have left a half-restored tree"
    assert (repo / ".git" / "tether" / "rollback-journal.json").exists()

    fresh = Checkpoints(repo, CheckpointSettings())  # a new process, in effect
    with pytest.raises(CheckpointError, match="interrupted"):
        fresh.plan_rollback(steps=1)  # a preview now would describe the wrong starting point
    if next_call == "create":
        fresh.create("next tool")
    elif next_call == "recover":
        assert fresh.recover() is not None
    else:
        fresh.rollback(to=target.id)  # recovers first, then rolls back (to the same place here)
    assert fingerprint(listing(repo)) == state_a
    assert not (repo / ".git" / "tether" / "rollback-journal.json").exists()
    tools = [cp.tool for cp in fresh.list()]
    assert "rollback-recovery" in tools
    assert fresh.recover() is None, "recovery runs once"
