"""The first checkpoint of a git workspace starts from the user's own index (checkpoints/seed.py).

It must record exactly what a snapshot from scratch records (the same tree, the same skipped
files), never trust the index where its blob ids are not the bytes on disk, never write anything of
the user's, and leave a store that needs nothing of the user's object store afterwards.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from _checkpoint_support import (
    git,
    init_repo,
    swap_for_a_fifo_once_looked_at,
    user_git_state,
    wait_or_feed_the_fifo,
)

from tether.core.checkpoints import Checkpoint, Checkpoints
from tether.core.config import CheckpointSettings

SCRATCH = "starts from scratch"


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))  # no ~/.config/git/attributes


def store_blob(repo: Path, commit: str, path: str) -> bytes:
    """The bytes a checkpoint holds for `path`."""
    store = repo / ".git" / "tether" / "store"
    argv = ["git", f"--git-dir={store}", "cat-file", "blob", f"{commit}:{path}"]
    return subprocess.run(argv, capture_output=True, check=True).stdout  # bytes: CRLF stays CRLF


def first_checkpoint(
    repo: Path, caplog: pytest.LogCaptureFixture, settings: CheckpointSettings | None = None
) -> tuple[Checkpoint, bool]:
    """The store's first checkpoint, and whether it started from scratch (it says so in the log)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tether.core.checkpoints.seed"):
        cp = Checkpoints(repo, settings or CheckpointSettings()).create("t")
    return cp, any(SCRATCH in r.getMessage() for r in caplog.records)


def object_files(repo: Path) -> dict[str, tuple[int, int]]:
    objects = repo / ".git" / "objects"
    return {str(p.relative_to(objects)): (p.stat().st_size, p.stat().st_mtime_ns) for p in objects.rglob("*")}


def test_adopted_index_records_what_a_snapshot_from_scratch_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = CheckpointSettings(max_file_bytes=1000, exclude=("data/",))
    repo = init_repo(
        tmp_path / "r",
        {
            "src/app.py": "print(1)\n",
            "src/gone.py": "x\n",
            "README.md": "readme\n",
            "big.bin": "b" * 2000,
            "data/table.csv": "1,2\n",
            ".gitignore": "node_modules/\n.env\nlogs/\n",
        },
    )
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("src/app.py")
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (repo / "logs").mkdir()
    (repo / "logs" / "keep.log").write_text("kept\n")
    git(repo, "add", "run.sh", "link")
    git(repo, "add", "-f", "node_modules/dep/index.js", "logs/keep.log")  # tracked, yet ignored
    git(repo, "commit", "-qm", "more")
    (repo / "src" / "app.py").write_text("print(2)\n")  # changed since the index was written
    (repo / "src" / "gone.py").unlink()
    (repo / "new.txt").write_text("untracked\n")
    (repo / ".env").write_text("KEY=1\n")
    (repo / "logs" / "run.log").write_text("ignored\n")
    state, objects = user_git_state(repo), object_files(repo)

    cp, scratch = first_checkpoint(repo, caplog, settings)

    assert not scratch, "the user's index was not adopted"
    assert user_git_state(repo) == state
    assert object_files(repo) == objects, "the user's object store was written (or its times touched)"
    assert not (repo / ".git" / "tether" / "store" / "objects" / "info" / "alternates").exists()
    plain = tmp_path / "plain"  # the same files where there is no index to start from
    shutil.copytree(repo, plain, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    from_scratch = Checkpoints(plain, settings).create("t")
    assert from_scratch.commit != cp.commit  # commits differ (time, store), trees must not
    store = repo / ".git" / "tether" / "store"
    tree = git(repo, f"--git-dir={store}", "rev-parse", f"{cp.commit}^{{tree}}")
    shadow = next((tmp_path / "state").rglob("shadow/*/store"))
    assert git(plain, f"--git-dir={shadow}", "rev-parse", f"{from_scratch.commit}^{{tree}}") == tree
    assert sorted(cp.skipped) == sorted(from_scratch.skipped)
    assert "big.bin" in cp.skipped
    assert "regenerated:node_modules" in cp.skipped


def test_rollback_needs_nothing_of_the_users_object_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "first\n", "b.txt": "b\n"})
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    (repo / "a.txt").write_text("second\n")
    git(repo, "commit", "-qa", "--amend", "-m", "rewritten")  # "first" is no longer reachable
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "-e", "9a5f0e8ef4fd1e1ad7ea4ee4eb2ba0f1d9ad4e19", check=False) == ""
    Checkpoints(repo, CheckpointSettings()).rollback(to=cp.id)
    assert (repo / "a.txt").read_text() == "first\n"


def _assume_unchanged(repo: Path) -> None:
    git(repo, "update-index", "--assume-unchanged", "a.txt")


def _skip_worktree(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "a.txt")


@pytest.mark.parametrize(
    "mark", [_assume_unchanged, _skip_worktree], ids=["assume-unchanged", "skip-worktree"]
)
def test_entries_git_would_not_look_at_again_are_not_trusted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mark
) -> None:  # type: ignore[no-untyped-def]
    repo = init_repo(tmp_path / "r", {"a.txt": "old\n"})
    mark(repo)
    (repo / "a.txt").write_text("the user's newer text\n")
    cp, scratch = first_checkpoint(repo, caplog)
    assert scratch
    assert store_blob(repo, cp.commit, "a.txt") == b"the user's newer text\n"


def _autocrlf(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")


def _autocrlf_bare_key(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core]\n\tautocrlf\n")  # a key without a value is true


def _autocrlf_since_switched_off(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")
    yield
    git(repo, "config", "core.autocrlf", "false")


def _tracked_attributes(repo: Path) -> None:
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    (repo / ".gitattributes").write_text("*.txt filter=upper\n")
    git(repo, "add", ".gitattributes")


def _attributes_since_deleted(repo: Path) -> None:
    """An LFS-like clean filter whose .gitattributes was removed and committed: the index still
    holds the filtered blob, and git never looks at the unchanged file again."""
    _tracked_attributes(repo)
    yield
    git(repo, "rm", "-q", ".gitattributes")
    git(repo, "commit", "-qm", "no more filter")


def _attributes_of_another_branch(repo: Path) -> None:
    """Checked out on a branch with an end-of-line rule, then a branch without it: same blob, the
    file keeps its CRLF."""
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    git(repo, "checkout", "-q", "-b", "crlf")
    yield
    git(repo, "checkout", "-q", "-b", "plain")
    git(repo, "rm", "-q", ".gitattributes")
    git(repo, "commit", "-qm", "no attributes")


def _untracked_attributes(repo: Path) -> None:
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitattributes").write_text("*.txt filter=upper\n")


def _info_attributes(repo: Path) -> None:
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.txt filter=upper\n")


def _global_attributes(repo: Path) -> None:
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "attributes"
    path.parent.mkdir(parents=True)
    path.write_text("*.txt filter=upper\n")


CONVERSIONS = [
    _autocrlf,
    _autocrlf_bare_key,
    _autocrlf_since_switched_off,
    _tracked_attributes,
    _attributes_since_deleted,
    _attributes_of_another_branch,
    _untracked_attributes,
    _info_attributes,
    _global_attributes,
]


@pytest.mark.parametrize("convert", CONVERSIONS, ids=lambda f: f.__name__.strip("_"))
def test_a_blob_that_is_not_the_bytes_on_disk_is_never_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, convert
) -> None:  # type: ignore[no-untyped-def]
    """A clean filter (Git LFS, git-crypt) or an end-of-line conversion makes the user's blob differ
    from the file — also after the rule is gone, as git never reads an unchanged file again:
    recorded, a rollback would write the converted bytes back over the user's file."""
    repo = init_repo(tmp_path / "r", {"keep.md": "k\n"})
    steps = convert(repo)  # a generator: the part before the file is added, then the part after
    if steps is not None:
        next(steps)
    (repo / "sub").mkdir(exist_ok=True)
    data = b"line one\r\nline two\r\n"
    (repo / "sub" / "a.txt").write_bytes(data)
    git(repo, "add", "sub/a.txt")
    git(repo, "commit", "-qm", "converted on the way in")
    time.sleep(1.1)  # then the user's next git writes the index a second later: not "racily clean"
    git(repo, "update-index", "-q", "--refresh")
    if steps is not None:
        next(steps, None)
    assert (repo / "sub" / "a.txt").read_bytes() == data
    index = subprocess.run(
        ["git", "ls-files", "-s", "sub/a.txt"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    blob = subprocess.run(
        ["git", "cat-file", "blob", index.stdout.split()[1]],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    assert blob.stdout not in (b"", data), "the conversion under test must have happened"
    assert git(repo, "status", "--porcelain", "sub/a.txt") == "", "git must trust the entry as it is"
    cp, _ = first_checkpoint(repo, caplog)
    assert store_blob(repo, cp.commit, "sub/a.txt") == data
    (repo / "sub" / "a.txt").write_text("changed\n")
    Checkpoints(repo, CheckpointSettings()).rollback(to=cp.id)
    assert (repo / "sub" / "a.txt").read_bytes() == data


def test_a_file_changed_in_the_second_the_index_was_written_is_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Git trusts an entry whose stat data matches unless the file changed in the same second as
    the index was written ("racily clean"): the copy keeps the index's time so git still checks."""
    repo = init_repo(tmp_path / "r", {"other.txt": "o\n"})
    time.sleep(1 - time.time() % 1)  # the start of a second: what follows fits in it
    (repo / "a.txt").write_text("version 1\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("version 2\n")  # same size, same second
    index_time = (repo / ".git" / "index").stat().st_mtime_ns
    os.utime(repo / "a.txt", ns=(index_time, index_time))  # the same time, to the nanosecond
    time.sleep(1.1)  # the copy is made a second later
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert store_blob(repo, cp.commit, "a.txt") == b"version 2\n"


def test_a_file_added_with_intent_to_add_is_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / "new.txt").write_text("only on disk\n")
    git(repo, "add", "-N", "new.txt")
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert store_blob(repo, cp.commit, "new.txt") == b"only on disk\n"
    (repo / "new.txt").unlink()
    Checkpoints(repo, CheckpointSettings()).rollback(to=cp.id)
    assert (repo / "new.txt").read_text() == "only on disk\n"


def test_a_workspace_inside_a_repository_starts_from_scratch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The index's paths are the repository's, not the sub-folder's."""
    repo = init_repo(tmp_path / "r", {"sub/a.txt": "a\n", "top.txt": "t\n"})
    cp, scratch = first_checkpoint(repo / "sub", caplog)
    assert scratch
    store = next((repo / ".git" / "tether" / "sub").glob("*/store"))
    names = git(repo, f"--git-dir={store}", "ls-tree", "-r", "--name-only", cp.commit).split()
    assert names == ["a.txt"]


def test_an_adoption_cut_short_leaves_nothing_a_later_snapshot_would_trust(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while the objects are copied, the copy must not already be the private index: every
    later snapshot would trust entries whose objects the store does not have."""
    from tether.core.checkpoints import seed

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "b/c.txt": "c\n"})

    def killed(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(seed, "_copy_objects", killed)
    with pytest.raises(KeyboardInterrupt):
        Checkpoints(repo, CheckpointSettings()).create("t")
    monkeypatch.undo()
    assert not (repo / ".git" / "tether" / "index").exists()
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert store_blob(repo, cp.commit, "b/c.txt") == b"c\n"
    assert not list((repo / ".git" / "tether").glob(".index.adopt-*"))
    (repo / "a.txt").write_text("changed\n")
    Checkpoints(repo, CheckpointSettings()).rollback(to=cp.id)
    assert (repo / "a.txt").read_text() == "a\n"


def test_tethers_own_tracked_files_stay_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A committed `.tether/config.toml` is never recorded (from scratch it is not either): a
    rollback must not put back a looser project config."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", ".tether/config.toml": "[checkpoints]\n"})
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    store = repo / ".git" / "tether" / "store"
    assert git(repo, f"--git-dir={store}", "ls-tree", "-r", "--name-only", cp.commit).split() == ["a.txt"]


def test_the_size_budget_is_the_size_on_disk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = init_repo(tmp_path / "r", {"shrunk.txt": "s" * 2000, "grown.txt": "g\n"})
    (repo / "shrunk.txt").write_text("small now\n")
    (repo / "grown.txt").write_text("g" * 2000)
    cp, scratch = first_checkpoint(repo, caplog, CheckpointSettings(max_file_bytes=1000))
    assert not scratch
    assert store_blob(repo, cp.commit, "shrunk.txt") == b"small now\n"
    assert cp.skipped == ("grown.txt",)


def test_a_checkpoint_stopped_while_the_adoption_runs_leaves_no_index_behind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped in its status (Ctrl-C) while the index is being checked on the adoption's thread: the
    thread is waited for (it writes the index) and the index dropped before the lock is let go."""
    from tether.core import gitcmd

    repo = init_repo(tmp_path / "r", {f"d{i}/f{i}.txt": f"{i}\n" for i in range(200)})
    real_run = gitcmd.Git.run

    def stopped(self: gitcmd.Git, *args: str, **kwargs: object) -> gitcmd.GitResult:
        if args[0] == "status":
            raise KeyboardInterrupt
        return real_run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gitcmd.Git, "run", stopped)
    with pytest.raises(KeyboardInterrupt):
        Checkpoints(repo, CheckpointSettings()).create("t")
    monkeypatch.undo()
    tether_dir = repo / ".git" / "tether"
    assert not (tether_dir / "index").exists()
    assert not (tether_dir / "adopting").exists()
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert store_blob(repo, cp.commit, "d7/f7.txt") == b"7\n"


def _crlf_repo(path: Path, files: dict[str, bytes]) -> Path:
    """A repository whose index holds LF blobs for CRLF files (`core.autocrlf`), trusted by git."""
    repo = init_repo(path)
    git(repo, "config", "core.autocrlf", "true")
    for name, data in files.items():
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "crlf")
    time.sleep(1.1)
    git(repo, "update-index", "-q", "--refresh")
    return repo


def test_a_path_ending_in_a_carriage_return_is_checked_against_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """git reads `notes\\r` back from a line as `notes`: hashed that way, the stale blob of
    `notes\\r` matched its LF sibling `notes`."""
    repo = _crlf_repo(tmp_path / "r", {"notes\r": b"one\r\ntwo\r\n", "notes": b"one\ntwo\n"})
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert store_blob(repo, cp.commit, "notes\r") == b"one\r\ntwo\r\n"


@pytest.mark.parametrize("becomes", ["deleted", "a directory"])
def test_a_file_gone_after_the_status_looked_at_it_is_not_recorded_from_the_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, becomes: str
) -> None:
    """The status runs beside the check: it may pass an entry as unchanged just before the file
    goes. Such an entry cannot be checked, so it must not stay (its blob was never the bytes)."""
    from tether.core import gitcmd
    from tether.core.checkpoints import seed

    repo = _crlf_repo(tmp_path / "r", {"a.txt": b"real 1\r\nreal 2\r\n", "b.txt": b"b\n"})
    status_done = threading.Event()
    real_check, real_run = seed.Adoption._check_and_copy, gitcmd.Git.run

    def after_the_status(self: seed.Adoption, *args: object) -> list[str]:
        status_done.wait(30)
        return real_check(self, *args)  # type: ignore[arg-type]

    def run(self: gitcmd.Git, *args: str, **kwargs: object) -> gitcmd.GitResult:
        result = real_run(self, *args, **kwargs)  # type: ignore[arg-type]
        if args[0] == "status" and not status_done.is_set():
            (repo / "a.txt").unlink()
            if becomes == "a directory":
                (repo / "a.txt").mkdir()
                (repo / "a.txt" / "inner").write_text("i\n")
            status_done.set()
        return result

    monkeypatch.setattr(seed.Adoption, "_check_and_copy", after_the_status)
    monkeypatch.setattr(gitcmd.Git, "run", run)
    cp, scratch = first_checkpoint(repo, caplog)
    monkeypatch.undo()
    assert not scratch
    store = repo / ".git" / "tether" / "store"
    assert "a.txt" not in git(repo, f"--git-dir={store}", "ls-tree", "--name-only", cp.commit).split()
    assert store_blob(repo, cp.commit, "b.txt") == b"b\n"


def _nested(path: Path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "nested")


@pytest.mark.parametrize("broken", ["no commit yet", "a .git file naming nothing"])
def test_a_gitlink_over_a_repository_git_cannot_read_leaves_the_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: str
) -> None:
    """git's status passes a gitlink whose commit it cannot read as unchanged: kept from the user's
    index, the folder's files were in no checkpoint, and a rollback left the agent's change."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    _nested(repo / "sub", {"s.txt": "s\n"})
    git(repo, "add", "sub")
    git(repo, "commit", "-qm", "a submodule-like gitlink")
    shutil.rmtree(repo / "sub" / ".git")
    if broken == "no commit yet":
        git(repo / "sub", "init", "-q")
    else:
        (repo / "sub" / ".git").write_text("gitdir: /nonexistent/modules/sub\n")
    cp, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    store = repo / ".git" / "tether" / "store"
    names = git(repo, f"--git-dir={store}", "ls-tree", "-r", "--name-only", cp.commit).split()
    if broken == "no commit yet":
        assert "sub" in cp.skipped  # as from scratch: a repository without a commit is left out
        assert names == ["a.txt"]
    else:
        assert names == ["a.txt", "sub/s.txt"]  # as from scratch: a plain folder
        (repo / "sub" / "s.txt").write_text("agent overwrote\n")
        Checkpoints(repo, CheckpointSettings()).rollback(to=cp.id)
        assert (repo / "sub" / "s.txt").read_text() == "s\n"


@pytest.mark.parametrize("adopted", [True, False], ids=["adopted", "from-scratch"])
def test_a_tracked_file_a_repository_replaced_is_watched_like_any_nested_repository(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, adopted: bool
) -> None:
    """Status says `T` for it, not `d/`: it was recorded as a gitlink but not listed as one, so when
    its `.git` went later, its files were in no checkpoint."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "d": "a file\n"})
    store = Checkpoints(repo, CheckpointSettings())
    if not adopted:
        store.create("the file d")  # from scratch: d enters the private index as a file
    (repo / "d").unlink()
    _nested(repo / "d", {"x.txt": "x\n"})
    cp = store.create("d is a repository now")
    assert cp.skipped == ()
    shutil.rmtree(repo / "d" / ".git")
    (repo / "d" / "x.txt").write_text("x2\n")
    after = store.create("d is a folder now")
    assert store_blob(repo, after.commit, "d/x.txt") == b"x2\n"


def test_a_tracked_file_swapped_for_a_fifo_while_it_is_checked_starts_from_scratch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check looks at each tracked file, then `git hash-object` reads it. A FIFO put in a file's
    place between the two makes git wait for a writer forever: the wait must end as soon as git is
    seen on it (not after the 600 s timeout), and the first checkpoint start from scratch, which
    leaves the FIFO out."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "pipe": "a file, until the check has looked at it\n"})
    state = user_git_state(repo)
    monkeypatch.setattr(os, "lstat", swap_for_a_fifo_once_looked_at("pipe", "_check_and_copy"))
    made: list[tuple[Checkpoint, bool]] = []
    worker = threading.Thread(target=lambda: made.append(first_checkpoint(repo, caplog)), daemon=True)
    worker.start()
    wait_or_feed_the_fifo(worker, repo / "pipe", "the first checkpoint")
    monkeypatch.undo()
    assert made, "the first checkpoint failed"
    cp, from_scratch = made[0]
    assert from_scratch
    assert store_blob(repo, cp.commit, "a.txt") == b"a\n"
    assert "is no longer the file it was" in caplog.text
    assert user_git_state(repo) == state


def _git_waiting_on_a_fifo(repo: Path) -> int | None:
    """The pid of a `git hash-object` working in `repo` that waits in the open of a FIFO."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes()
            waiting = Path(entry.path, "wchan").read_text() == "wait_for_partner"
            here = os.readlink(Path(entry.path, "cwd")) == str(repo)
        except OSError:
            continue
        if b"hash-object" in argv and here and waiting:
            return int(entry.name)
    return None


@pytest.mark.parametrize("then", ["removed", "replaced", "the original back"])
def test_git_stuck_on_a_fifo_is_seen_after_the_fifo_is_gone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """Once git waits in the open of a FIFO, it waits for that FIFO, even when its path is then
    removed or names another file: the watch must still see that git no longer reads the file it
    was given. "the original back": the path names the very inode that was handed to git again
    (as a new file does that gets the freed inode number back, which made "replaced" fail now and
    then): an inode compared alone looked the same."""
    import signal

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "pipe": "a file, until the check has looked at it\n"})
    os.link(repo / "pipe", tmp_path / "kept")  # the original inode outlives its path
    monkeypatch.setattr(os, "lstat", swap_for_a_fifo_once_looked_at("pipe", "_check_and_copy"))
    made: list[tuple[Checkpoint, bool]] = []
    worker = threading.Thread(target=lambda: made.append(first_checkpoint(repo, caplog)), daemon=True)
    worker.start()
    pid = None
    for _ in range(400):
        pid = _git_waiting_on_a_fifo(repo)
        if pid is not None or not worker.is_alive():
            break
        time.sleep(0.005)
    if pid is None:
        worker.join()
        pytest.skip("git was not seen waiting on the FIFO (/proc/<pid>/wchan)")
    if then == "removed":
        os.unlink(repo / "pipe")
    elif then == "replaced":
        (repo / "pipe.new").write_text("another file\n")
        os.rename(repo / "pipe.new", repo / "pipe")
    else:
        os.rename(tmp_path / "kept", repo / "pipe")
    worker.join(30)  # not a speed limit: without the watch, git waits 600 s
    if worker.is_alive():
        os.kill(pid, signal.SIGKILL)
        worker.join()
        pytest.fail(f"the first checkpoint still waited on the FIFO after it was {then}")
    monkeypatch.undo()
    assert made, "the first checkpoint failed"
    cp, from_scratch = made[0]
    assert from_scratch
    assert store_blob(repo, cp.commit, "a.txt") == b"a\n"


def test_an_adopted_gitlink_is_listed_and_its_loss_seen(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The adoption writes the list of gitlinks the index keeps (the snapshot used to list the whole
    index to find them): a repository whose `.git` goes later is a folder of files from then on."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    _nested(repo / "sub", {"s.txt": "s\n"})
    git(repo, "add", "sub")
    git(repo, "commit", "-qm", "a submodule-like gitlink")
    _first, scratch = first_checkpoint(repo, caplog)
    assert not scratch
    assert (repo / ".git" / "tether" / "gitlinks").read_bytes() == b"sub\0"
    shutil.rmtree(repo / "sub" / ".git")
    (repo / "sub" / "s.txt").write_text("s2\n")
    after = Checkpoints(repo, CheckpointSettings()).create("sub is a folder now")
    assert store_blob(repo, after.commit, "sub/s.txt") == b"s2\n"
