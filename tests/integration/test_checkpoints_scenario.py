"""The long scenario of the issue: a busy real repository, 20 mutating calls, 5 rollbacks, an undo.

After every step the whole working tree is compared (every file's mode and bytes) with what it was
when the relevant checkpoint was taken, and the user's git state (HEAD, index bytes, refs, stash,
reflog, config, nested `.git`) with what it was before Tether ran.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from _checkpoint_support import dir_digest, fingerprint, git, init_repo, listing, user_git_state

from tether.core.checkpoints import Checkpoints
from tether.core.config import CheckpointSettings


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def busy_repo(tmp: Path) -> Path:
    files = {f"src/mod{i}.py": f"x = {i}\n" for i in range(8)}
    files.update({"README.md": "# demo\n", ".gitignore": "*.log\nbuild/\n", "docs/guide.md": "guide\n"})
    repo = init_repo(tmp / "repo", files)
    # a submodule, from a local repository
    upstream = init_repo(tmp / "upstream", {"lib.c": "int f(void){return 1;}\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "vendor/lib")
    git(repo, "commit", "-q", "-m", "add submodule")
    # branches, a stash, staged/unstaged/untracked changes
    git(repo, "branch", "feature")
    git(repo, "branch", "release/1.0")
    (repo / "src/mod0.py").write_text("x = 'stashed'\n")
    git(repo, "stash", "-q")
    (repo / "src/mod1.py").write_text("x = 'staged'\n")
    git(repo, "add", "src/mod1.py")
    (repo / "src/mod2.py").write_text("x = 'unstaged'\n")
    (repo / "notes.txt").write_text("untracked\n")
    # an unrelated nested repository (not a submodule) and an ignored file
    init_repo(repo / "nested", {"inner.txt": "inner\n"})
    (repo / "debug.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"\x00\x01ignored")
    return repo


def mutate(repo: Path, rng: random.Random, step: int) -> None:
    """One 'tool call': a few random edits, creations, deletions, mode and type changes."""
    candidates = sorted(
        p for p in listing(repo, skip_suffixes=(".log",), skip_dirs=("nested", "vendor/lib", "build"))
    )
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(["edit", "create", "delete", "chmod", "symlink", "dirswap", "deep"])
        target = repo / rng.choice(candidates) if candidates else repo / "a.txt"
        if target.name in (".gitignore", ".gitmodules"):
            action = "create"
        if action == "edit" and target.is_file() and not target.is_symlink():
            target.write_text(f"edit {step} {rng.random()}\n")
        elif action == "create":
            new = repo / "src" / f"new {step} ü{rng.randint(0, 99)}.txt"
            new.parent.mkdir(parents=True, exist_ok=True)
            new.write_text(f"created at {step}\n")
        elif action == "delete" and target.exists() and not target.is_dir():
            target.unlink()
        elif action == "chmod" and target.is_file() and not target.is_symlink():
            os.chmod(target, target.stat().st_mode ^ 0o111)
        elif action == "symlink":
            link = repo / f"link{step}"
            if not os.path.lexists(link):
                os.symlink(f"src/mod{rng.randint(0, 7)}.py", link)
        elif action == "dirswap":
            swap = repo / "swap"
            if swap.is_dir() and not swap.is_symlink():
                for child in swap.iterdir():
                    child.unlink()
                swap.rmdir()
                swap.write_text(f"file at {step}\n")
            else:
                if os.path.lexists(swap):
                    swap.unlink()
                swap.mkdir()
                (swap / "inner.txt").write_text(f"dir at {step}\n")
        elif action == "deep":
            deep = repo / "a" / "b" / f"c{step}" / "weird\nname.txt"
            deep.parent.mkdir(parents=True, exist_ok=True)
            deep.write_text("deep\n")


def tree(repo: Path) -> str:
    return fingerprint(listing(repo, skip_suffixes=(".log",), skip_dirs=("build",)))


def test_twenty_calls_five_rollbacks_and_an_undo(tmp_path: Path) -> None:
    repo = busy_repo(tmp_path)
    before_git = user_git_state(repo)
    nested_git = dir_digest(repo / "nested" / ".git")
    submodule_git = dir_digest(repo / ".git" / "modules" / "vendor" / "lib")
    ignored = (repo / "debug.log").read_bytes(), (repo / "build" / "out.bin").read_bytes()
    store = Checkpoints(repo, CheckpointSettings())
    rng = random.Random(4)
    states: dict[str, str] = {}  # checkpoint commit -> tree fingerprint when it was taken

    def call(step: int) -> None:
        cp = store.create(f"tool{step}")
        states[cp.commit] = tree(repo)
        mutate(repo, rng, step)

    def rollback(steps: int) -> None:
        now = tree(repo)
        target = store.list()[steps - 1]
        dry = store.plan_rollback(steps=steps)
        plan, before = store.rollback(steps=steps)
        assert plan == dry, "the dry run must list exactly what the rollback did"
        assert plan.target == target
        states[before.commit] = now
        assert tree(repo) == states[target.commit]

    step = 0
    rollback_schedule = {4: 1, 8: 3, 12: 2, 15: 5, 19: 1}
    for step in range(1, 21):
        call(step)
        if step in rollback_schedule:
            rollback(rollback_schedule[step])
    # undo the last rollback: `rollback 1` right after a rollback returns to where we were
    pre_undo = tree(repo)
    rollback(1)
    rollback(1)
    assert tree(repo) == pre_undo

    # an ignored file changed between calls is left alone by rollbacks
    (repo / "debug.log").write_text("changed but ignored\n")
    cp = store.create("tool-x")
    states[cp.commit] = tree(repo)
    (repo / "src" / "mod3.py").write_text("changed\n")
    rollback(1)
    assert (repo / "debug.log").read_text() == "changed but ignored\n"
    (repo / "debug.log").write_bytes(ignored[0])

    assert user_git_state(repo) == before_git
    assert dir_digest(repo / "nested" / ".git") == nested_git
    assert dir_digest(repo / ".git" / "modules" / "vendor" / "lib") == submodule_git
    assert (repo / "build" / "out.bin").read_bytes() == ignored[1]
    assert "refs/tether" not in git(repo, "for-each-ref")
    assert "/.tether/" in (repo / ".git" / "info" / "exclude").read_text()
    # every listed checkpoint still restores to exactly the tree recorded for it
    for cp in store.list()[:6]:
        store.rollback(to=cp.id)
        assert tree(repo) == states[cp.commit]
    assert user_git_state(repo) == before_git
