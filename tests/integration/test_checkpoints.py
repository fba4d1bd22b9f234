"""Checkpoints and rollback on real git repositories and plain directories, case by case."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
from pathlib import Path

import pytest
from _checkpoint_support import (
    fingerprint,
    git,
    init_repo,
    listing,
    snapshot_files,
    swap_for_a_fifo_once_looked_at,
    user_git_state,
    wait_or_feed_the_fifo,
)

from tether.core.checkpoints import Checkpoints
from tether.core.config import CheckpointSettings, user_state_dir
from tether.core.placeholders import PLACEHOLDER_XATTR, forget_placeholders, record_placeholders
from tether.core.sandbox import profile
from tether.core.sandbox.profile import pinned_protected
from tether.core.sandbox.protected import protected_paths
from tether.errors import CheckpointError, CheckpointRefused


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def tree(path: Path) -> str:
    return fingerprint(listing(path))


def roundtrip(ws: Path, change, settings: CheckpointSettings | None = None) -> Checkpoints:  # type: ignore[no-untyped-def]
    """Checkpoint, change, roll back (tree must be as before), undo (tree must be as changed)."""
    store = Checkpoints(ws, settings or CheckpointSettings())
    store.create("test")
    before = tree(ws)
    change(ws)
    after = tree(ws)
    assert after != before, "the change under test must change the tree"
    store.rollback(steps=1)
    assert tree(ws) == before
    store.rollback(steps=1)
    assert tree(ws) == after
    return store


# --- kinds of workspaces ----------------------------------------------------------------------


def test_empty_repo_without_commits(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / "a.txt").write_text("a\n")
    state = user_git_state(repo)
    roundtrip(repo, lambda ws: (ws / "a.txt").write_text("b\n"))
    assert user_git_state(repo) == state
    assert git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""


def test_detached_head(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "1\n"})
    (repo / "a.txt").write_text("2\n")
    git(repo, "commit", "-qam", "two")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    state = user_git_state(repo)
    roundtrip(repo, lambda ws: (ws / "b.txt").write_text("new\n"))
    assert user_git_state(repo) == state


def test_non_git_workspace_uses_a_shadow_store(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "f.txt").write_text("x\n")
    roundtrip(ws, lambda w: (w / "f.txt").unlink())
    assert not (ws / ".git").exists()
    shadows = list((user_state_dir() / "shadow").iterdir())
    assert len(shadows) == 1
    assert (shadows[0] / "workspace").read_text().strip() == str(ws.resolve())


def test_workspace_in_a_subdirectory_of_a_repo(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"top.txt": "t\n", "sub/a.txt": "a\n"})
    store = roundtrip(repo / "sub", lambda ws: (ws / "a.txt").write_text("changed\n"))
    assert (repo / "top.txt").read_text() == "t\n"
    assert store.list()


def test_bare_repo_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with pytest.raises(CheckpointRefused, match="bare"):
        Checkpoints(bare, CheckpointSettings()).create("t")


@pytest.mark.parametrize("marker", ["MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD"])
def test_mid_operation_is_refused(tmp_path: Path, marker: str) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "1\n"})
    path = repo / ".git" / marker
    if marker.startswith("rebase"):
        path.mkdir()
    else:
        path.write_text(git(repo, "rev-parse", "HEAD"))
    with pytest.raises(CheckpointRefused, match="middle of"):
        Checkpoints(repo, CheckpointSettings()).create("t")


def test_real_merge_conflict_is_refused(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "base\n"})
    git(repo, "checkout", "-qb", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "merge", "other", check=False)
    with pytest.raises(CheckpointRefused, match="git merge --abort"):
        Checkpoints(repo, CheckpointSettings()).create("t")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read everything; permissions cannot be tested")
def test_unreadable_directory_is_refused(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "1\n"})
    secret = repo / "locked"
    secret.mkdir()
    (secret / "x").write_text("x")
    secret.chmod(0)
    try:
        with pytest.raises(CheckpointRefused, match="cannot be read"):
            Checkpoints(repo, CheckpointSettings()).create("t")
    finally:
        secret.chmod(0o755)


def test_a_file_unreadable_during_the_first_snapshot_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first snapshot from scratch (nothing in the user's index to start from) streams files into
    `git fast-import`; one it cannot read stops it before the import commits. (As root no file is
    unreadable, so `os.open` refuses that one path here.)"""
    repo = init_repo(tmp_path / "r", {"a.txt": "1\n", "b.txt": "2\n", "c.txt": "3\n"}, commit=False)
    real_open = os.open

    def refusing_open(path: str | bytes, flags: int, *args: int) -> int:
        if os.fsdecode(path).endswith("b.txt"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    store = Checkpoints(repo, CheckpointSettings())
    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(CheckpointRefused, match=r"cannot be read \(b.txt: Permission denied\)"):
        store.create("t")
    monkeypatch.undo()
    git_dir = repo / ".git" / "tether" / "store"
    assert git(repo, f"--git-dir={git_dir}", "for-each-ref") == ""
    assert not (repo / ".git" / "tether" / "index").exists()
    assert not list((git_dir / "objects" / "pack").glob("*.pack"))
    cp = store.create("t")  # and the next one snapshots everything
    assert snapshot_files(repo, cp.commit) == ["a.txt", "b.txt", "c.txt"]


def test_disabled_checkpoints_say_rollback_is_unavailable(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "1\n"})
    store = Checkpoints(repo, CheckpointSettings(enabled=False))
    with pytest.raises(CheckpointError, match=r"disabled.*rollback is unavailable"):
        store.create("t")
    with pytest.raises(CheckpointError, match="disabled"):
        store.rollback(steps=1)
    assert store.list() == []
    assert not (repo / ".git" / "tether").exists()


# --- kinds of changes -------------------------------------------------------------------------

ODD_NAMES = [
    "with space.txt",
    "ünïcødé ✓.txt",
    "new\nline.txt",
    "tab\tand'quote\".txt",
    "-dash.txt",
    "*star?.txt",
    '"leading quote.txt',  # fast-import would take it for a quoted path
    "back\\slash\\n and \n newline.txt",
    os.fsdecode(b"latin1-\xe9.txt"),  # not UTF-8
]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_paths(tmp_path: Path, name: str) -> None:
    repo = init_repo(tmp_path / "r", {"keep.txt": "k\n"})
    (repo / name).write_text("original\n")

    def change(ws: Path) -> None:
        (ws / name).write_text("edited\n")
        (ws / "dir with space" / name).parent.mkdir()
        (ws / "dir with space" / name).write_text("created\n")

    roundtrip(repo, change)


def test_symlinks(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "b\n"})
    os.symlink("a.txt", repo / "link")
    os.symlink("d", repo / "dirlink")
    os.symlink("does-not-exist", repo / "dangling")

    def change(ws: Path) -> None:
        (ws / "link").unlink()
        os.symlink("d/b.txt", ws / "link")
        (ws / "dangling").unlink()
        (ws / "dangling").write_text("now a file\n")
        (ws / "dirlink").unlink()
        os.symlink("/etc", ws / "outside")

    roundtrip(repo, change)
    assert os.readlink(repo / "link") == "d/b.txt"


def test_rollback_never_writes_through_a_symlinked_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = init_repo(tmp_path / "r", {"d/x.txt": "x\n"})
    (repo / ".gitignore").write_text("d\n")  # later: `d` is ignored and is a symlink out
    store = Checkpoints(repo, CheckpointSettings())
    (repo / ".gitignore").unlink()
    store.create("t")
    (repo / ".gitignore").write_text("d\n")
    for child in (repo / "d").iterdir():
        child.unlink()
    (repo / "d").rmdir()
    os.symlink(outside, repo / "d")
    plan = store.plan_rollback(steps=1)
    # ignored files are snapshotted too: the symlink `d` was created since, so it goes, and
    # d/x.txt comes back inside a real directory, never through the link
    assert "d" in plan.deleted
    assert "d/x.txt" in plan.created
    store.rollback(steps=1)
    assert list(outside.iterdir()) == []
    assert not (repo / "d").is_symlink()
    assert (repo / "d" / "x.txt").read_text() == "x\n"


def test_exec_bits(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"run.sh": "#!/bin/sh\n", "plain.txt": "p\n"})
    os.chmod(repo / "run.sh", 0o755)

    def change(ws: Path) -> None:
        os.chmod(ws / "run.sh", 0o644)
        os.chmod(ws / "plain.txt", 0o755)

    roundtrip(repo, change)
    assert os.stat(repo / "plain.txt").st_mode & 0o111


@pytest.mark.parametrize("direction", ["file_to_dir", "dir_to_file"])
def test_file_directory_swaps(tmp_path: Path, direction: str) -> None:
    files = {"x": "a file\n"} if direction == "file_to_dir" else {"x/one.txt": "1\n", "x/y/two.txt": "2\n"}
    repo = init_repo(tmp_path / "r", files)

    def change(ws: Path) -> None:
        if direction == "file_to_dir":
            (ws / "x").unlink()
            (ws / "x" / "deep").mkdir(parents=True)
            (ws / "x" / "deep" / "f.txt").write_text("f\n")
        else:
            import shutil

            shutil.rmtree(ws / "x")
            (ws / "x").write_text("now a file\n")

    roundtrip(repo, change)


def test_ignored_files_are_snapshotted_and_ignored_build_outputs_left_alone(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {".gitignore": "*.log\nnode_modules/\n", "a.txt": "a\n"})
    (repo / "old.log").write_text("old\n")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "dep.js").write_text("dep\n")
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("t")
    assert "regenerated:node_modules" in cp.skipped
    (repo / "old.log").write_text("changed\n")
    (repo / "new.log").write_text("new\n")
    (repo / "node_modules" / "pkg.js").write_text("js\n")
    (repo / "a.txt").write_text("b\n")
    plan, _ = store.rollback(steps=1)
    assert plan.restored == ("a.txt", "old.log")
    assert plan.deleted == ("new.log",)
    assert (repo / "old.log").read_text() == "old\n"
    assert not (repo / "new.log").exists()
    assert (repo / "node_modules" / "pkg.js").exists()  # a build output: rebuilt, not rolled back


def test_a_file_that_becomes_ignored_is_still_restored(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / "secret.env").write_text("v1\n")
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t1")
    (repo / ".gitignore").write_text("*.env\n")
    store.create("t2")
    (repo / "secret.env").write_text("v2\n")
    store.rollback(steps=2)
    assert (repo / "secret.env").read_text() == "v1\n"


def test_files_the_users_info_exclude_ignores_are_covered_and_tether_dir_added(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / ".git" / "info" / "exclude").write_text("private/\n")
    (repo / "private").mkdir()
    (repo / "private" / "p.txt").write_text("p\n")
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("t")
    (repo / "private" / "p.txt").write_text("changed\n")
    assert store.files_changed_since(cp) == ["private/p.txt"]
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.startswith("private/\n")
    assert "/.tether/" in exclude
    (repo / ".tether").mkdir(exist_ok=True)
    (repo / ".tether" / "tool_log.jsonl").write_text("{}\n")
    assert store.files_changed_since(cp) == ["private/p.txt"]  # Tether's own state never is


def test_large_files_are_skipped_listed_and_never_overwritten(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"small.txt": "s\n", "grow.bin": "tiny\n"})
    settings = CheckpointSettings(max_file_bytes=1000)
    store = Checkpoints(repo, settings)
    (repo / "big.bin").write_bytes(b"x" * 5000)
    cp1 = store.create("t")
    assert "big.bin" in cp1.skipped
    assert any("big.bin" in w for w in cp1.warnings)
    (repo / "grow.bin").write_bytes(b"y" * 5000)  # a file in the snapshot grows past the limit
    (repo / "small.txt").write_text("changed\n")
    plan, before = store.rollback(steps=1)
    assert "grow.bin" in before.skipped
    assert plan.restored == ("small.txt",)
    assert "grow.bin" in plan.kept
    assert (repo / "grow.bin").read_bytes() == b"y" * 5000
    assert (repo / "big.bin").read_bytes() == b"x" * 5000


def test_configured_excludes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(exclude=("generated/",)))
    cp = store.create("t")
    (repo / "generated").mkdir()
    (repo / "generated" / "g.txt").write_text("g\n")
    (repo / "a.txt").write_text("b\n")
    assert store.files_changed_since(cp) == ["a.txt"]
    assert "exclude:generated/" in cp.skipped
    store.rollback(steps=1)
    assert (repo / "generated" / "g.txt").exists()


def test_nested_repo_without_commits_is_skipped_not_fatal(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    init_repo(repo / "fresh")
    (repo / "fresh" / "f.txt").write_text("f\n")
    cp = Checkpoints(repo, CheckpointSettings()).create("t")
    assert "fresh" in cp.skipped


def test_nested_repos_are_never_touched(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")  # before the nested repo exists
    nested = init_repo(repo / "nested", {"n.txt": "n\n"})
    (nested / "n.txt").write_text("dirty\n")
    plan, _ = store.rollback(steps=1)
    assert "nested" in plan.kept
    assert (nested / "n.txt").read_text() == "dirty\n"
    assert (nested / ".git").is_dir()


# --- the sandbox's placeholders ---------------------------------------------------------------


def _xattrs_or_skip(path: Path) -> None:
    probe = path / ".xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, PLACEHOLDER_XATTR, b"1")
    except OSError as exc:
        pytest.skip(f"this filesystem has no user xattrs: {exc}")
    finally:
        probe.unlink()


@pytest.mark.parametrize("first", [True, False], ids=["first-snapshot", "incremental"])
def test_a_checkpoint_taken_while_a_command_runs_leaves_the_sandbox_placeholders_out(
    tmp_path: Path, first: bool
) -> None:
    """A command runs in the sandbox (its placeholders stand in the work tree, some of them
    git-ignored) while another call takes a checkpoint: rolling back to that checkpoint later must
    not create files the user never had."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", ".gitignore": ".envrc\n"})
    _xattrs_or_skip(repo)
    store = Checkpoints(repo, CheckpointSettings())
    if not first:
        store.create("before")
    before = tree(repo)
    with pinned_protected(repo, protected_paths(repo)) as pinned:
        names = {p.relative_to(repo).as_posix() for p in pinned.placeholders}
        assert {".envrc", ".vscode"} <= names  # one ignored, one not
        cp = store.create("meanwhile")
    assert names.isdisjoint(snapshot_files(repo, cp.commit))
    (repo / "a.txt").write_text("changed\n")
    store.rollback(to=cp.id)
    assert tree(repo) == before  # no placeholder came back as a file


def test_placeholders_are_listed_before_they_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint taken while the sandbox is still making its placeholders leaves out the ones
    already made: each is listed before any exists."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    _xattrs_or_skip(repo)
    store = Checkpoints(repo, CheckpointSettings())
    store.create("before")
    made = profile._create_placeholder
    taken: list[str] = []

    def checkpoint_meanwhile(path: Path) -> tuple[int, int] | None:
        created = made(path)
        if not taken:
            taken.append(store.create("meanwhile").commit)
        return created

    monkeypatch.setattr(profile, "_create_placeholder", checkpoint_meanwhile)
    with pinned_protected(repo, (repo / ".envrc", repo / ".vscode")):
        pass
    assert snapshot_files(repo, taken[0]) == ["a.txt"]


def test_a_placeholder_once_recorded_leaves_the_snapshot(tmp_path: Path) -> None:
    """Recorded once (by an older version, or in a race), an unchanged placeholder never shows in
    `git status` again: it must leave the private index all the same."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    _xattrs_or_skip(repo)
    store = Checkpoints(repo, CheckpointSettings())
    with pinned_protected(repo, (repo / ".envrc",)):
        forget_placeholders(repo)  # as if listed too late
        assert ".envrc" in snapshot_files(repo, store.create("recorded").commit)
        record_placeholders(repo, [repo / ".envrc"])
        assert ".envrc" not in snapshot_files(repo, store.create("left out").commit)


def test_a_file_rolled_back_over_a_placeholder_gets_a_normal_mode(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", ".envrc": "export A=1\n"})
    _xattrs_or_skip(repo)
    (repo / ".envrc").chmod(0o644)
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("before")
    (repo / ".envrc").unlink()
    with pinned_protected(repo, (repo / ".envrc",)) as pinned:
        assert pinned.placeholders == (repo / ".envrc",)
        store.rollback(to=cp.id)
    assert (repo / ".envrc").read_text() == "export A=1\n"
    assert stat.S_IMODE((repo / ".envrc").stat().st_mode) & 0o200  # writable, not the placeholder's 0444


def test_a_file_marked_like_a_placeholder_by_a_command_is_still_recorded(tmp_path: Path) -> None:
    """A command can set the sandbox's mark on files of its own: only the paths the sandbox listed
    are left out, so rolling the call back still removes a planted file and restores an emptied one."""
    repo = init_repo(tmp_path / "r", {"notes.txt": "keep me\n"})
    _xattrs_or_skip(repo)
    store = Checkpoints(repo, CheckpointSettings())
    store.create("before the call")
    before = tree(repo)
    notes, planted = repo / "notes.txt", repo / ".envrc"
    notes.write_bytes(b"")
    planted.write_bytes(b"")
    for dressed in (notes, planted):
        os.setxattr(dressed, PLACEHOLDER_XATTR, b"1")
        dressed.chmod(0o444)
    cp = store.create("after the call")
    assert {"notes.txt", ".envrc"} <= set(snapshot_files(repo, cp.commit))
    store.rollback(steps=2)  # the last call, then the one before it: back to "before the call"
    assert tree(repo) == before


# --- hostile repository configuration ---------------------------------------------------------


def test_filters_hooks_and_fsmonitor_of_the_repo_never_run(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    marker = tmp_path / "ran"
    script = f"sh -c 'echo $0 >> {marker}; cat'"
    git(repo, "config", "filter.evil.clean", script)
    git(repo, "config", "filter.evil.smudge", script)
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "core.fsmonitor", f"touch {marker}; true")
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / ".gitattributes").write_text("* filter=evil\n*.crlf text eol=lf\n")
    (repo / "b.crlf").write_bytes(b"one\r\ntwo\r\n")
    (repo / "c.txt").write_text("c\n")
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("t")
    (repo / "b.crlf").write_bytes(b"changed\n")
    (repo / "c.txt").unlink()
    store.rollback(to=cp.id)
    assert not marker.exists(), "a filter, hook or fsmonitor from the repository ran"
    assert (repo / "b.crlf").read_bytes() == b"one\r\ntwo\r\n", "bytes must be stored exactly"
    assert (repo / "c.txt").read_text() == "c\n"
    # control: the same repository does run the filter for the user's own git
    git(repo, "hash-object", "c.txt")
    assert marker.exists()


def test_inherited_git_environment_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    decoy = init_repo(tmp_path / "decoy", {"d.txt": "d\n"})
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    before = (decoy / ".git" / "index").read_bytes()
    roundtrip(repo, lambda ws: (ws / "a.txt").write_text("b\n"))
    assert (decoy / ".git" / "index").read_bytes() == before


# --- listing, ids, retention, gc ---------------------------------------------------------------


def test_list_ids_and_changed_files(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    first = store.create("edit_file")
    (repo / "b.txt").write_text("b\n")
    second = store.create("bash_command", message="note")
    (repo / "a.txt").write_text("changed\n")
    listed = store.list()
    assert [cp.id for cp in listed] == [second.id, first.id]
    assert listed[1].message.startswith("pre-tool: edit_file at ")
    assert listed[0].message == "note"
    assert store.get(first.id[:6]) == first
    assert store.files_changed_since_many(listed) == {second.id: ["a.txt"], first.id: ["a.txt", "b.txt"]}
    with pytest.raises(CheckpointError, match="no checkpoint"):
        store.get("zzzz")
    with pytest.raises(CheckpointError, match="only 2"):
        store.plan_rollback(steps=3)


def test_retention_keeps_the_newest_and_they_restore(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "0\n"})
    store = Checkpoints(repo, CheckpointSettings(keep_count=3))
    trees = {}
    for i in range(1, 8):
        (repo / "a.txt").write_text(f"{i}\n")
        (repo / f"f{i}.txt").write_text(f"{i}\n")
        cp = store.create(f"t{i}")
        trees[cp.id] = tree(repo)
    removed = store.prune()
    assert len(removed) == 4
    kept = store.list()
    assert len(kept) == 3
    git_dir = repo / ".git" / "tether" / "store"
    subprocess.run(["git", f"--git-dir={git_dir}", "fsck", "--strict", "--no-dangling"], check=True)
    for cp in kept:
        store.rollback(to=cp.id)
        assert tree(repo) == trees[cp.id]


def test_gc_in_the_users_repo_loses_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    (repo / "tmp.txt").write_text("only in a checkpoint\n")
    cp = store.create("t")
    (repo / "tmp.txt").unlink()
    git(repo, "gc", "-q", "--prune=now", "--aggressive")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    store.rollback(to=cp.id)
    assert (repo / "tmp.txt").read_text() == "only in a checkpoint\n"


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "gone.txt": "g\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / "a.txt").write_text("b\n")
    (repo / "gone.txt").unlink()
    (repo / "new.txt").write_text("n\n")
    before = tree(repo)
    plan = store.plan_rollback(steps=1)
    assert (plan.restored, plan.deleted, plan.created) == (("a.txt",), ("new.txt",), ("gone.txt",))
    assert tree(repo) == before
    assert len(store.list()) == 1


def _worker(ws: str, n: int, state: str) -> None:
    os.environ["XDG_STATE_HOME"] = state
    store = Checkpoints(Path(ws), CheckpointSettings())
    for i in range(n):
        Path(ws, f"w{os.getpid()}-{i}.txt").write_text("x")
        store.create("concurrent")


def test_two_processes_checkpointing_at_once(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(str(repo), 5, os.environ["XDG_STATE_HOME"])) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    listed = Checkpoints(repo, CheckpointSettings()).list()
    assert len(listed) == 10
    assert len({cp.ref for cp in listed}) == 10


def test_stale_git_lock_from_a_killed_process_is_cleared(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / ".git" / "tether" / "index.lock").write_text("")
    store.create("t2")
    assert len(store.list()) == 2


def test_restored_files_get_umask_permissions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / "a.txt").unlink()
    store.rollback(steps=1)
    mode = stat.S_IMODE(os.stat(repo / "a.txt").st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_age_retention_keeps_the_newest(tmp_path: Path) -> None:
    import time

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(keep_days=1e-5))  # under a second
    for i in range(3):
        (repo / "a.txt").write_text(f"{i}\n")
        store.create(f"t{i}")
    time.sleep(1.1)
    newest = store.list()[0]
    assert len(store.prune()) == 2
    assert store.list() == [newest]


def test_time_budget_warning(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    cp = Checkpoints(repo, CheckpointSettings(time_budget_seconds=0)).create("t")
    assert any("over the 0 s budget" in w for w in cp.warnings)


def test_corrupt_private_index_is_rebuilt(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / ".git" / "tether" / "index").write_bytes(b"DIRC garbage")
    (repo / "a.txt").write_text("b\n")
    cp = store.create("t2")
    assert store.files_changed_since(cp) == []
    plan = store.plan_rollback(steps=2)
    assert plan.restored == ("a.txt",)


def test_a_rebuilt_private_index_writes_no_second_copy_of_the_tree(tmp_path: Path) -> None:
    """The private index is a cache: rebuilt (ignore rules changed, file lost), it finds the
    store's objects again and writes only what is new, and the snapshot is the same."""
    repo = init_repo(tmp_path / "r", {f"d{i % 7}/f{i}.txt": f"{i}\n" for i in range(300)})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    store_dir = repo / ".git" / "tether" / "store"

    def objects() -> int:  # loose and packed, duplicates across packs counted twice
        counts = dict(
            line.split(": ")
            for line in git(repo, f"--git-dir={store_dir}", "count-objects", "-v").splitlines()
        )
        return int(counts["count"]) + int(counts["in-pack"])

    before = objects()
    (repo / ".git" / "tether" / "index").unlink()
    (repo / "d0" / "f0.txt").write_text("changed\n")
    cp = store.create("t2")
    # new: the changed blob, the two trees above it, the commit — not 300 blobs and 8 trees again
    assert objects() - before <= 5
    assert store.files_changed_since(cp) == []
    assert store.plan_rollback(steps=2).restored == ("d0/f0.txt",)


@pytest.mark.parametrize("adopted", [True, False], ids=["adopted", "from-scratch"])
def test_a_checkpoint_refreshes_stat_data_that_changed_without_the_bytes(
    tmp_path: Path, adopted: bool
) -> None:
    """Files touched but not changed (a copied repository, a branch checked out and back) get
    their new stat data into the private index, so the next status does not hash them again."""
    files = {f"d{i % 3}/f{i}.txt": f"{i}\n" for i in range(30)}
    ws = init_repo(tmp_path / "r", files) if adopted else tmp_path / "plain"
    if not adopted:
        for rel, content in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(content)
    store = Checkpoints(ws, CheckpointSettings())
    store.create("first")
    for rel in files:  # long ago: older than the index, so no entry is "racily clean"
        os.utime(ws / rel, (1_700_000_000, 1_700_000_000))
    cp = store.create("touched")
    places = (ws / ".git" / "tether" / "index", *user_state_dir().rglob("index"))
    index = next(p for p in places if p.is_file())
    store_dir = index.parent / "store"
    debug = subprocess.run(
        ["git", f"--git-dir={store_dir}", "ls-files", "--debug"],
        env={**os.environ, "GIT_INDEX_FILE": str(index)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mtimes = [line.split()[1] for line in debug.splitlines() if line.strip().startswith("mtime:")]
    assert len(mtimes) == len(files)
    assert set(mtimes) == {"1700000000:0"}, "the touched files' entries still hold their old stat data"
    assert store.files_changed_since(cp) == []


def test_files_the_global_excludes_file_ignores_are_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "my-ignores").write_text(".idea/\n")
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/my-ignores\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / ".idea").mkdir()
    (repo / ".idea" / "workspace.xml").write_text("<x/>\n")
    (repo / "a.txt").write_text("b\n")
    plan, _ = store.rollback(steps=1)
    assert plan.deleted == (".idea/workspace.xml",)
    assert not (repo / ".idea" / "workspace.xml").exists()


def test_a_symlinked_tether_dir_does_not_redirect_rollback_writes(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    os.symlink(outside, repo / ".tether")
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / "a.txt").write_text("b\n")
    store.rollback(steps=1)
    assert (repo / "a.txt").read_text() == "a\n"
    assert list(outside.iterdir()) == []
    assert not any(p.name.startswith(".tether-rollback") for p in repo.iterdir())


def test_an_ignored_nested_repository_is_left_alone(tmp_path: Path) -> None:
    """A cloned dependency under an ignored directory (`vendor/` with its own `.git`) is neither
    walked into (git cannot store a `.git` path: the checkpoint failed) nor touched by rollback."""
    repo = init_repo(tmp_path / "r", {".gitignore": "vendor/\n", "a.txt": "a\n"})
    vendor = init_repo(repo / "vendor", {"v.txt": "v\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (vendor / "v.txt").write_text("changed by the user\n")
    (repo / "a.txt").write_text("changed\n")
    store.rollback(steps=1)
    assert (repo / "a.txt").read_text() == "a\n"
    assert (vendor / "v.txt").read_text() == "changed by the user\n"
    assert (vendor / ".git").is_dir()


def test_an_ignored_directory_that_replaced_a_file_is_snapshotted(tmp_path: Path) -> None:
    """`.env` (ignored) was a file and is a directory now: git's status names only the deleted file
    and none of the ignored files inside, so `.env/prod` was silently missing from the snapshot."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", ".gitignore": ".env\n"})
    (repo / ".env").write_text("K=1\n")
    store = Checkpoints(repo, CheckpointSettings())
    store.create("call 1")
    (repo / ".env").unlink()
    (repo / ".env").mkdir()
    (repo / ".env" / "prod").write_text("SECRET=precious\n")
    store.create("call 2")
    (repo / ".env" / "prod").unlink()
    store.rollback(steps=1)
    assert (repo / ".env" / "prod").read_text() == "SECRET=precious\n"


def test_a_nested_repository_that_loses_its_git_is_snapshotted(tmp_path: Path) -> None:
    """`rm -rf sub/.git` makes a recorded nested repository a plain directory; git's status says
    nothing about a gitlink it cannot look into, so sub/'s files never entered a snapshot."""
    import shutil

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    sub = init_repo(repo / "sub", {"n.txt": "precious\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("call 1")
    store.create("call 2")
    shutil.rmtree(sub / ".git")
    store.create("call 3")
    (sub / "n.txt").unlink()
    store.rollback(steps=1)
    assert (sub / "n.txt").read_text() == "precious\n"


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_fifos_and_sockets_in_an_ignored_directory_are_left_out(tmp_path: Path, kind: str) -> None:
    """A dev server's socket or pipe in an ignored `tmp/`: git cannot store one, and it must not fail
    every checkpoint (first or later); the files beside it are snapshotted."""
    import socket

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", ".gitignore": "tmp/\n"})
    (repo / "tmp").mkdir()
    (repo / "tmp" / "cache.txt").write_text("c\n")
    server = None
    if kind == "fifo":
        os.mkfifo(repo / "tmp" / "server")
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(repo / "tmp" / "server"))
    try:
        store = Checkpoints(repo, CheckpointSettings())
        first = store.create("first")
        (repo / "tmp" / "cache.txt").write_text("changed\n")
        (repo / "a.txt").write_text("b\n")
        store.create("later")
        store.rollback(to=first.id)
        assert (repo / "tmp" / "cache.txt").read_text() == "c\n"
        assert (repo / "a.txt").read_text() == "a\n"
        assert stat.S_ISFIFO(os.lstat(repo / "tmp" / "server").st_mode) == (kind == "fifo")
    finally:
        if server is not None:
            server.close()


def test_rollback_recreates_a_directory_a_symlink_replaced(tmp_path: Path) -> None:
    """`a/b` moved away and a symlink to it left in its place: rollback deletes the link and must
    write `a/b/c.txt` back (it looked at `a/b/c.txt` through the link it deletes, and kept it)."""
    import shutil

    repo = init_repo(tmp_path / "r", {"a/b/c.txt": "c\n", "x.txt": "x\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    shutil.move(repo / "a" / "b", repo / "other")
    os.symlink("../other", repo / "a" / "b")
    plan, _ = store.rollback(steps=1)
    assert not (repo / "a" / "b").is_symlink()
    assert (repo / "a" / "b" / "c.txt").read_text() == "c\n"
    assert plan.kept == ()


def test_nested_repos_config_never_runs(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    nested = init_repo(repo / "nested", {"n.txt": "n\n"})
    marker = tmp_path / "ran"
    git(nested, "config", "core.fsmonitor", f"touch {marker}; true")
    git(nested, "config", "filter.evil.clean", f"touch {marker}; cat")
    (nested / ".gitattributes").write_text("* filter=evil\n")
    (nested / "n.txt").write_text("dirty\n")
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create("t")
    (nested / "n.txt").write_text("dirtier\n")
    store.files_changed_since(cp)
    store.rollback(steps=1)
    assert not marker.exists()
    assert (nested / "n.txt").read_text() == "dirtier\n"


def test_linked_worktree(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    wt = tmp_path / "wt"
    state = user_git_state(repo)
    roundtrip(wt, lambda ws: (ws / "a.txt").write_text("changed in worktree\n"))
    assert (repo / ".git" / "worktrees" / "wt" / "tether" / "store").is_dir()
    assert "/.tether/" in (repo / ".git" / "info" / "exclude").read_text()
    assert (repo / "a.txt").read_text() == "a\n"
    assert user_git_state(repo) == state


def test_many_changed_paths_go_into_one_pack(tmp_path: Path) -> None:
    """From 256 changed paths on, the new blobs are streamed into one pack (bulk check-in) instead
    of a loose object each; skipped paths must stay skipped, and the pack must restore."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    init_repo(repo / "fresh")  # nested repository without a commit: its files are not ours
    (repo / "fresh" / "inner.txt").write_text("inner\n")
    (repo / "big.bin").write_bytes(b"x" * 2000)
    for i in range(400):
        (repo / "many" / f"d{i % 7}").mkdir(parents=True, exist_ok=True)
        (repo / "many" / f"d{i % 7}" / f"f{i}.txt").write_text(f"{i}\n")
    store = Checkpoints(repo, CheckpointSettings(max_file_bytes=1000))
    cp = store.create("t")
    assert {"big.bin", "fresh"} <= set(cp.skipped)
    files = snapshot_files(repo, cp.commit)
    assert len(files) == 401
    objects = repo / ".git" / "tether" / "store" / "objects"
    # one pack copied from the user's store (the index's a.txt), one for the 400 new blobs
    assert len(list((objects / "pack").glob("*.pack"))) == 2
    loose = list(objects.glob("??/*"))
    assert len(loose) < 100  # the trees (write-tree writes those loose), not the 401 blobs
    assert "big.bin" not in files
    assert "fresh/inner.txt" not in files
    for i in range(0, 400, 3):
        (repo / "many" / f"d{i % 7}" / f"f{i}.txt").unlink()
    plan, _ = store.rollback(steps=1)
    assert len(plan.created) == 134
    assert (repo / "big.bin").exists()


def test_the_second_checkpoint_keeps_the_private_index(tmp_path: Path) -> None:
    """The first checkpoint adds `/.tether/` to the user's info/exclude; the store's copy of those
    rules must already hold it, or the next checkpoint sees changed rules and rehashes every file.
    (The index file itself may be rewritten once: git splits the adopted index.)"""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("first")
    rules = repo / ".git" / "tether" / "store" / "info" / "exclude"
    before = (rules.stat().st_ino, rules.stat().st_mtime_ns)
    store.create("second")
    assert (rules.stat().st_ino, rules.stat().st_mtime_ns) == before, "the rules changed: index rebuilt"
    assert (repo / ".git" / "tether" / "index").is_file()


def test_secrets_in_call_summaries_are_not_stored(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    cp = store.create(
        "bash_command: curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'\nrm x",
        message="export API_KEY=sk-ant-api03-0123456789abcdef",
    )
    store_dir = repo / ".git" / "tether" / "store"
    raw = subprocess.run(
        ["git", f"--git-dir={store_dir}", "cat-file", "commit", cp.commit],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "abcdefghijklmnop" not in raw
    assert "0123456789abcdef" not in raw
    assert "\nrm x" not in store.list()[0].tool


def test_stale_ref_lock_from_a_killed_process_is_cleared(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    refs = repo / ".git" / "tether" / "store" / "refs" / "tether" / "checkpoints"
    (refs / "0000000002.lock").write_text("")
    store.create("t2")
    assert len(store.list()) == 2


def test_restored_files_keep_their_private_permissions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    secret = repo / "id_key"
    secret.write_text("v1\n")
    secret.chmod(0o600)
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    secret.write_text("v2\n")
    store.rollback(steps=1)
    assert secret.read_text() == "v1\n"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    secret.chmod(0o700)  # becomes executable: git records only that bit
    store.create("t2")
    secret.chmod(0o600)
    store.rollback(steps=1)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o700


def test_a_file_swapped_for_a_fifo_during_the_first_snapshot_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first snapshot looks at each file, then reads it. A FIFO put in a file's place between the
    two must not make the read wait for a writer forever (with the store's lock held): like any FIFO,
    it is left out, and the next snapshot sees what is there then."""
    import threading

    ws = tmp_path / "plain"  # not a repository: the first snapshot reads every file itself
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / "pipe").write_text("a file, until the snapshot has looked at it\n")
    monkeypatch.setattr(os, "lstat", swap_for_a_fifo_once_looked_at("pipe", "_import_stream"))
    store = Checkpoints(ws, CheckpointSettings())
    made: list[object] = []
    worker = threading.Thread(target=lambda: made.append(store.create("first")), daemon=True)
    worker.start()
    wait_or_feed_the_fifo(worker, ws / "pipe", "the snapshot")
    monkeypatch.undo()
    assert made, "the snapshot failed"
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)
    (ws / "a.txt").write_text("changed\n")
    store.rollback(steps=1)
    assert (ws / "a.txt").read_text() == "a\n"  # the rest of the snapshot was taken


def test_a_file_under_a_write_lease_is_waited_for_not_left_out(tmp_path: Path) -> None:
    """A file server (Samba's oplocks, NFS delegations) holds a write lease on a file: an open for
    reading waits until the lease is given back. The first snapshot must wait too: a file it left
    out would be deleted by a rollback to it."""
    import sys
    import textwrap

    ws = tmp_path / "plain"  # not a repository: the first snapshot reads every file itself
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / "doc.txt").write_text("held under a lease\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import fcntl, os, signal, time
                fd = os.open({str(ws / "doc.txt")!r}, os.O_RDWR)
                def give_back(*_):  # what a file server does when the kernel breaks its lease
                    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
                signal.signal(signal.SIGIO, give_back)
                try:
                    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
                except OSError as exc:
                    print("no lease:", exc, flush=True)
                else:
                    print("lease taken", flush=True)
                time.sleep(60)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        said = holder.stdout.readline().strip()
        if said != "lease taken":
            pytest.skip(f"this file system gives no leases ({said})")
        store = Checkpoints(ws, CheckpointSettings())
        store.create("first")
    finally:
        holder.kill()
        holder.wait()
    (ws / "a.txt").write_text("changed\n")
    store.rollback(steps=1)
    assert (ws / "doc.txt").read_text() == "held under a lease\n"
    assert (ws / "a.txt").read_text() == "a\n"


def test_a_warning_names_the_first_ten_skipped_files_and_counts_the_rest(tmp_path: Path) -> None:
    """A data folder of thousands of files over the budget made every call's warning list them all
    (in the editor, the audit log and each checkpoint's metadata); `skipped` keeps every one."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / "data").mkdir()
    for i in range(25):
        (repo / "data" / f"sample{i:02d}.bin").write_bytes(b"x" * 2000)
    (repo / "data" / "README").write_text("small\n")  # else the folder is named, not its files
    cp = Checkpoints(repo, CheckpointSettings(max_file_bytes=1000)).create("t")
    assert len([s for s in cp.skipped if s.startswith("data/")]) == 25
    (warning,) = [w for w in cp.warnings if "over" in w]
    assert warning.count("data/sample") == 10
    assert "data/sample00.bin" in warning
    assert "data/sample09.bin" in warning
    assert "and 15 more (`tether checkpoints --json` lists them all under `skipped`)" in warning
