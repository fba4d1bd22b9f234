"""Nothing is ever lost: a rollback restores ignored files too, byte for byte (issue "Workspace mode").

The bug this pins: in command mode `echo oops > .env` (a git-ignored file) was allowed, overwrote the
file, and `tether rollback 1` restored nothing. Here every destructive shape runs against a
workspace holding tracked, untracked and ignored files, executable bits and symlinks; the tree after
`rollback 1` must equal the tree before (path → mode and content or link target), the user's git
state must not change, and only ignored build outputs (`node_modules/`) are left alone.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from _checkpoint_support import git, init_repo, listing, snapshot_files, tether, user_git_state

from tether.core.checkpoints import Checkpoint, Checkpoints
from tether.core.checkpoints.regenerated import regenerated_dir
from tether.core.config import CheckpointSettings
from tether.core.sandbox import auto_choice

GITIGNORE = ".env\n*.db\nsecrets/\nnode_modules/\n*.log\n"


def workspace(root: Path) -> Path:
    repo = init_repo(root, {".gitignore": GITIGNORE, "src/app.py": "print('app')\n", "README.md": "hi\n"})
    (repo / ".env").write_text("API_KEY=sk-live-123\n")
    (repo / "local.db").write_bytes(bytes(range(256)) * 4)
    (repo / "secrets").mkdir()
    (repo / "secrets" / "id.key").write_text("KEY\n")
    (repo / "secrets" / "deep").mkdir()
    (repo / "secrets" / "deep" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "secrets" / "deep" / "run.sh").chmod(0o755)
    os.symlink("../.env", repo / "secrets" / "env-link")
    os.symlink("src", repo / "dir-link")
    os.symlink("missing", repo / "dangling.log")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "tool.sh").write_text("#!/bin/sh\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    return repo


def manifest(repo: Path) -> dict[str, tuple[str, str]]:
    return listing(repo, skip_dirs=("node_modules",))


def everything_gone(ws: Path) -> None:
    """`rm -rf ./* .[!.]*` as a program in workspace mode would run it (`.git` kept)."""
    for child in ws.iterdir():
        if child.name in (".git", ".tether"):
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def find_delete(ws: Path) -> None:
    """`find . -path ./.git -prune -o -type f -delete`."""
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".tether")]
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))


def rename_dirs(ws: Path) -> None:
    (ws / "secrets").rename(ws / "moved-secrets")
    (ws / "src").rename(ws / "source")


def chmod_and_truncate(ws: Path) -> None:
    (ws / "tool.sh").chmod(0o644)
    (ws / "src" / "app.py").chmod(0o755)
    (ws / "local.db").write_bytes(b"")
    (ws / "secrets" / "deep" / "run.sh").chmod(0o600)


def rewrite_loop(ws: Path) -> None:
    for path in (ws / ".env", ws / "local.db", ws / "secrets" / "id.key", ws / "README.md"):
        path.write_text("oops\n")
    (ws / "created.log").write_text("new ignored file\n")
    (ws / "secrets" / "new").mkdir()
    (ws / "secrets" / "new" / "x.key").write_text("x\n")


def links_swapped(ws: Path) -> None:
    (ws / "secrets" / "env-link").unlink()
    (ws / "secrets" / "env-link").write_text("now a file\n")
    (ws / "dir-link").unlink()
    os.symlink("secrets", ws / "dir-link")
    (ws / ".env").unlink()
    os.symlink("/etc/passwd", ws / ".env")


@pytest.mark.parametrize(
    "destroy",
    [everything_gone, find_delete, rename_dirs, chmod_and_truncate, rewrite_loop, links_swapped],
)
def test_rollback_restores_every_file_ignored_ones_included(
    tmp_path: Path, destroy: Callable[[Path], None]
) -> None:
    repo = workspace(tmp_path / "ws")
    state = user_git_state(repo)
    before = manifest(repo)
    assert {".env", "local.db", "secrets/id.key", "secrets/env-link", "dangling.log"} <= set(before)
    store = Checkpoints(repo, CheckpointSettings())
    store.create("destructive call")
    destroy(repo)
    assert manifest(repo) != before
    store.rollback(steps=1)
    assert manifest(repo) == before
    assert user_git_state(repo) == state


def test_ignored_build_outputs_are_left_out_and_reported(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "web" / "node_modules" / "x").mkdir(parents=True)
    (repo / "web" / "node_modules" / "x" / "a.js").write_text("a\n")
    cp = Checkpoints(repo, CheckpointSettings()).create("t")
    assert "regenerated:node_modules" in cp.skipped
    assert "regenerated:web/node_modules" in cp.skipped
    stored = snapshot_files(repo, cp.commit)
    assert ".env" in stored
    assert not any("node_modules" in path for path in stored)
    assert regenerated_dir("web/node_modules/x/a.js") == "web/node_modules"
    assert regenerated_dir("src/build.py") is None


def test_a_tracked_directory_named_like_a_build_output_is_snapshotted(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "ws", {"build/recipe.txt": "mine\n", ".gitignore": "build/cache/\n"})
    (repo / "build" / "cache").mkdir()
    (repo / "build" / "cache" / "c.bin").write_text("cached\n")
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / "build" / "recipe.txt").write_text("changed\n")
    (repo / "build" / "cache" / "c.bin").write_text("changed\n")
    store.rollback(steps=1)
    assert (repo / "build" / "recipe.txt").read_text() == "mine\n"
    # `build/cache` is ignored and lies in a directory named `build`: a build output, left alone
    assert (repo / "build" / "cache" / "c.bin").read_text() == "changed\n"


def test_configured_excludes_stay_out_even_when_ignored(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    store = Checkpoints(repo, CheckpointSettings(exclude=("local.db",)))
    store.create("t")
    (repo / "local.db").write_text("changed\n")
    (repo / ".env").write_text("changed\n")
    store.rollback(steps=1)
    assert (repo / "local.db").read_text() == "changed\n"
    assert (repo / ".env").read_text() == "API_KEY=sk-live-123\n"


# --- the reported bug, end to end through the CLI ---------------------------------------------------


@pytest.fixture
def sandboxed() -> None:
    if auto_choice() is None:
        pytest.skip("no sandbox backend works on this machine (see `tether doctor`)")


@pytest.mark.usefixtures("sandboxed")
def test_echo_over_an_ignored_file_then_rollback_restores_it(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "notes.log").write_text("my notes\n")  # ignored (*.log), not a secret
    done = tether(repo, "run", "--permissions", "command", "echo oops > notes.log", home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "notes.log").read_text() == "oops\n"
    back = tether(repo, "rollback", "1", "--yes", home=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert (repo / "notes.log").read_text() == "my notes\n"
    # the reported case itself no longer runs: `.env` is a secret (docs/secrets.md)
    refused = tether(repo, "run", "--permissions", "command", "echo oops > .env", home=tmp_path)
    assert refused.returncode == 1
    assert "path.secret" in refused.stdout
    assert (repo / ".env").read_text() == "API_KEY=sk-live-123\n"


def test_write_file_over_an_ignored_file_then_rollback_restores_it(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "debug.log").write_text("the user's log\n")  # ignored (*.log)
    tool_input = json.dumps({"path": "debug.log", "content": "overwritten\n"})
    done = tether(repo, "tool", "write_file", "--permissions", "all", "--input", tool_input, home=tmp_path)
    assert json.loads(done.stdout)["state"] == "executed", done.stdout + done.stderr
    created = json.dumps({"path": "new.log", "content": "created by the call\n"})
    tether(repo, "tool", "write_file", "--permissions", "all", "--input", created, home=tmp_path)
    back = tether(repo, "rollback", "2", "--yes", home=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert (repo / "debug.log").read_text() == "the user's log\n"
    assert not (repo / "new.log").exists()


# --- what the checkpoint cannot take is never changed --------------------------------------------------


def _small_budget(home: Path) -> None:
    config = home / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[checkpoints]\nmax_file_bytes = 1000\n")


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize("command", ["echo oops > big.db", "truncate -s 0 big.db", "rm -f big.db"])
def test_a_file_over_the_budget_is_read_only_to_commands(tmp_path: Path, command: str) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "big.db").write_bytes(b"x" * 5000)  # ignored (*.db), over the 1000-byte budget
    _small_budget(tmp_path)
    done = tether(repo, "run", "--json", "--permissions", "workspace", command, home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] in ("executed", "failed"), result
    assert "not snapshotted" in " ".join(result.get("warnings", [])) or result["state"] == "failed"
    assert (repo / "big.db").read_bytes() == b"x" * 5000


def test_write_file_refuses_a_file_the_checkpoint_could_not_take(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "big.log").write_text("y" * 5000)
    _small_budget(tmp_path)
    tool_input = json.dumps({"path": "big.log", "content": "overwritten\n"})
    done = tether(repo, "tool", "write_file", "--permissions", "all", "--input", tool_input, home=tmp_path)
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert "rollback could not restore it" in result["text"]
    assert (repo / "big.log").read_text() == "y" * 5000


# --- names git cannot store (`.GIT/x`, `git~1`) ----------------------------------------------------------

UNSTORABLE = {".GIT/x": "upper-case git dir\n", "git~1": "an NTFS short name\n", "src/.git.": "dotted\n"}


def _unstorable_files(root: Path) -> None:
    for rel, text in UNSTORABLE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.mark.parametrize("kind", ["repository", "plain directory"])
def test_a_name_git_cannot_store_is_reported_and_never_touched_by_rollback(tmp_path: Path, kind: str) -> None:
    """In a plain directory every checkpoint used to fail (`read-tree`: invalid path), refusing every
    call that changes the workspace; in a repository git dropped the file without a word."""
    if kind == "repository":
        root = workspace(tmp_path / "ws")
    else:
        root = tmp_path / "plain"
        root.mkdir()
        (root / "a.txt").write_text("a\n")
    _unstorable_files(root)
    store = Checkpoints(root, CheckpointSettings())
    first = store.create("t")
    assert {".GIT", "git~1", "src/.git."} <= set(first.uncovered)  # `.GIT/x` by its refused part
    assert any("git cannot store these names" in w and "git~1" in w for w in first.warnings)
    (root / "git~1").write_text("changed after the checkpoint\n")
    (root / "b.txt").write_text("new\n")
    plan, before = store.rollback(steps=1)
    assert plan.deleted == ("b.txt",)
    assert "git~1" in before.uncovered
    assert (root / "git~1").read_text() == "changed after the checkpoint\n"
    assert (root / ".GIT" / "x").read_text() == UNSTORABLE[".GIT/x"]


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize("command", ["echo oops > git~1", "rm -f src/.git.", "truncate -s 0 git~1"])
def test_a_name_git_cannot_store_is_read_only_to_commands(tmp_path: Path, command: str) -> None:
    repo = workspace(tmp_path / "ws")
    _unstorable_files(repo)
    done = tether(repo, "run", "--json", "--permissions", "workspace", command, home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] in ("executed", "failed"), result
    assert any("git cannot store these names" in w for w in result.get("warnings", [])), result
    for rel, text in UNSTORABLE.items():
        assert (repo / rel).read_text() == text


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("git~1", "git cannot store a file named git~1"),  # exists: no checkpoint holds it
        ("src/.git.", "git cannot store a file named src/.git."),
        ("GIT~1.", "git cannot store a file named GIT~1."),  # new: rollback could not delete it
        (".GIT/new.txt", "is a protected file"),  # the policy's answer comes first
    ],
)
def test_write_file_refuses_a_name_git_cannot_store(tmp_path: Path, name: str, why: str) -> None:
    repo = workspace(tmp_path / "ws")
    _unstorable_files(repo)
    tool_input = json.dumps({"path": name, "content": "written\n"})
    done = tether(repo, "tool", "write_file", "--permissions", "all", "--input", tool_input, home=tmp_path)
    result = json.loads(done.stdout)
    assert result["isError"] is True, result
    assert why in result["text"]
    assert (repo / name).exists() == (name in UNSTORABLE)
    if name in UNSTORABLE:
        assert (repo / name).read_text() == UNSTORABLE[name]


def test_a_name_git_ignores_at_staging_is_reported_not_dropped(tmp_path: Path) -> None:
    """Should a git's rule ever differ from `git_can_store`, `update-index` says "Ignoring path" and
    goes on: the name comes back as left out, for the checkpoint to report."""
    from tether.core.checkpoints.snapshots import _update_index
    from tether.core.checkpoints.store import locate, store_git

    repo = workspace(tmp_path / "ws")
    _unstorable_files(repo)
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    git = store_git(locate(repo, tmp_path / "state"))
    nested, vanished, refused = _update_index(git, ["README.md", "git~1", "notes.txt"], repo)
    assert (nested, vanished, refused) == ([], [], ["git~1"])


def test_a_gitmodules_symlink_and_a_repository_named_git_1_in_a_plain_directory(tmp_path: Path) -> None:
    """The first snapshot of a plain directory (fast-import, then read-tree) failed on either."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    os.symlink("a.txt", root / ".gitmodules")
    init_repo(root / "GIT~1", {"f.txt": "nested\n"})
    cp = Checkpoints(root, CheckpointSettings()).create("t")
    assert {".gitmodules", "GIT~1"} <= set(cp.uncovered)
    assert "a.txt" in snapshot_files_of(root, cp)


def snapshot_files_of(root: Path, cp: Checkpoint) -> list[str]:
    from tether.core.checkpoints.store import locate, store_git
    from tether.core.config import user_state_dir

    git = store_git(locate(root, user_state_dir()))
    return git.run("ls-tree", "-r", "--name-only", cp.commit).stdout.decode().split("\n")


def test_a_directory_of_unstorable_files_is_one_path(tmp_path: Path) -> None:
    """30,000 files under `GIT~1/` were 30,000 warnings and 30,000 sandbox mounts (the command line
    grew past the kernel's limit): the refused part is named, and held, once."""
    repo = workspace(tmp_path / "ws")
    (repo / "GIT~1" / "deep").mkdir(parents=True)
    for i in range(200):
        (repo / "GIT~1" / "deep" / f"f{i}.txt").write_text(f"{i}\n")
    cp = Checkpoints(repo, CheckpointSettings()).create("t")
    assert [p for p in cp.uncovered if "GIT~1" in p] == ["GIT~1"]
    assert sum(w.count("GIT~1") for w in cp.warnings) == 1


def test_a_file_that_became_a_gitmodules_symlink_leaves_the_snapshot(tmp_path: Path) -> None:
    """The index held the regular `.gitmodules` it was; left there, every later snapshot kept it and
    a rollback wrote it back over the user's symlink."""
    repo = init_repo(tmp_path / "r", {".gitmodules": "B\n", "a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings())
    store.create("t")
    (repo / ".gitmodules").unlink()
    os.symlink("a.txt", repo / ".gitmodules")
    second = store.create("t")
    assert ".gitmodules" in second.uncovered
    assert ".gitmodules" not in snapshot_files(repo, second.commit)
    (repo / "a.txt").write_text("changed\n")
    plan, _ = store.rollback(steps=1)
    assert plan.restored == ("a.txt",)
    assert os.readlink(repo / ".gitmodules") == "a.txt"


def test_an_index_holding_a_name_git_refuses_is_not_adopted(tmp_path: Path) -> None:
    """Committed with `core.protectNTFS` off: adopted, the private index could never drop it, and
    a rollback claimed to cover a file no snapshot could restore."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / "git~1").write_text("the user's\n")
    git(repo, "-c", "core.protectNTFS=false", "add", "git~1")
    git(repo, "-c", "core.protectNTFS=false", "commit", "-q", "-m", "x")
    cp = Checkpoints(repo, CheckpointSettings()).create("t")
    assert "git~1" in cp.uncovered
    assert "git~1" not in snapshot_files(repo, cp.commit)
    assert "a.txt" in snapshot_files(repo, cp.commit)


@pytest.mark.usefixtures("sandboxed")
def test_a_dangling_unstorable_symlink_does_not_stop_commands(tmp_path: Path) -> None:
    """The sandbox cannot hold a symlink in place: protected, `sub/git~1 -> x` refused every
    command that writes. It stays writable, and the checkpoint's warning names it."""
    repo = workspace(tmp_path / "ws")
    (repo / "sub").mkdir()
    os.symlink("x", repo / "sub" / "git~1")
    done = tether(repo, "run", "--json", "--permissions", "workspace", "touch made.txt", home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] == "executed", result
    assert any("sub/git~1" in w for w in result.get("warnings", [])), result
    assert (repo / "made.txt").exists()


def test_an_entry_git_will_not_remove_drops_the_private_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should a git's rule differ from `git_can_store`, an entry it refuses to name would stay in
    every snapshot: the private index (a cache) goes, loudly, and the next snapshot rebuilds it."""
    from tether.core.checkpoints import snapshots
    from tether.core.checkpoints.store import locate
    from tether.core.config import user_state_dir
    from tether.errors import CheckpointError

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    store = Checkpoints(repo, CheckpointSettings(max_file_bytes=1000))
    store.create("t")
    (repo / "git~1").write_bytes(b"x" * 5000)  # over the budget: its entry is removed by name
    monkeypatch.setattr(snapshots, "git_can_store", lambda path, symlink=False: True)
    with pytest.raises(CheckpointError, match="would not remove an entry"):
        store.create("t")
    assert not locate(repo, user_state_dir()).index.exists()
    monkeypatch.undo()
    cp = store.create("t")
    assert "git~1" in cp.uncovered


def test_no_proposal_is_made_for_a_name_git_cannot_store(tmp_path: Path) -> None:
    """Accepted in the editor, it could not be undone either: refused before the proposal."""
    repo = workspace(tmp_path / "ws")
    tool_input = json.dumps({"path": "GIT~1", "content": "proposed\n"})
    done = tether(repo, "tool", "write_file", "--input", tool_input, home=tmp_path)  # dry run
    result = json.loads(done.stdout)
    assert result["isError"] is True, result
    assert "git cannot store a file named GIT~1" in result["text"]
    assert "proposal" not in json.dumps(result.get("result") or {})
    assert not (repo / "GIT~1").exists()


def test_a_folder_of_files_over_the_budget_is_held_once(tmp_path: Path) -> None:
    """3,500 files over the budget in an ignored data folder were 3,500 read-only mounts: bubblewrap
    refused every command that writes ("Exceeded maximum number of arguments 9000"). A folder that
    holds nothing else is named, and held, once; a folder with anything else keeps its files apart."""
    repo = workspace(tmp_path / "ws")
    for folder in ("data/train", "data/test", "mixed"):
        (repo / folder).mkdir(parents=True)
        for i in range(3):
            with open(repo / folder / f"s{i}.db", "wb") as f:  # ignored (*.db), sparse
                f.truncate(2000)
    (repo / "mixed" / "small.txt").write_text("small\n")
    (repo / "data" / "empty").mkdir()  # an empty folder keeps `data` apart too
    cp = Checkpoints(repo, CheckpointSettings(max_file_bytes=1000)).create("t")
    held = [p for p in cp.uncovered if p.startswith(("data", "mixed"))]
    assert held == ["data/test", "data/train", "mixed/s0.db", "mixed/s1.db", "mixed/s2.db"]
    # `skipped` (in `tether checkpoints --json`) still names each file, as it always has
    assert {"data/train/s0.db", "data/test/s2.db"} <= set(cp.skipped)
    assert "data/train" not in cp.skipped
    assert any("data/train/ (every file in it)" in w for w in cp.warnings)
    (repo / "data" / "empty").rmdir()
    again = Checkpoints(repo, CheckpointSettings(max_file_bytes=1000)).create("t")
    assert [p for p in again.uncovered if p.startswith("data")] == ["data"]


@pytest.mark.usefixtures("sandboxed")
def test_commands_and_write_file_run_beside_thousands_of_files_over_the_budget(tmp_path: Path) -> None:
    repo = workspace(tmp_path / "ws")
    (repo / "data").mkdir()
    for i in range(3500):
        with open(repo / "data" / f"s{i}.db", "wb") as f:  # ignored (*.db), over the budget
            f.truncate(2000)
    _small_budget(tmp_path)
    done = tether(repo, "run", "--json", "--permissions", "workspace", "touch made.txt", home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] == "executed", result
    assert (repo / "made.txt").exists()
    refused = tether(repo, "run", "--json", "--permissions", "workspace", "rm -f data/s7.db", home=tmp_path)
    assert (repo / "data" / "s7.db").exists(), refused.stdout
    tool_input = json.dumps({"path": "data/new.txt", "content": "x\n"})
    write = tether(repo, "tool", "write_file", "--permissions", "all", "--input", tool_input, home=tmp_path)
    assert "rollback could not restore it" in json.loads(write.stdout)["text"]
    assert not (repo / "data" / "new.txt").exists()


def test_write_file_follows_no_folder_swapped_since_it_was_prepared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between `prepare` and the write come the question to the user and the checkpoint: a parallel
    command that swaps `x/` for a symlink to the held `data/` then led the write into a file no
    checkpoint held (and a rollback deleted it)."""
    from tether.core.config import EffectiveConfig
    from tether.core.gate import Gate
    from tether.core.session import FaceOverrides, open_session

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    for folder in ("data", "x"):
        (repo / folder).mkdir()
        (repo / folder / "big.txt").write_text("y" * 2000 + "\n")  # over the budget below
    config = EffectiveConfig(checkpoints=CheckpointSettings(max_file_bytes=1000))
    session = open_session(repo, FaceOverrides(permissions="all"), config=config)
    take = Gate._take_checkpoint

    def swapped_first(gate: Gate, summary: str) -> object:
        os.rename(repo / "x", repo / "x.old")
        os.symlink("data", repo / "x")
        return take(gate, summary)

    monkeypatch.setattr(Gate, "_take_checkpoint", swapped_first)
    result = session.gate.call("write_file", {"path": "x/big.txt", "content": "clobbered\n"})
    assert result.state != "executed", result
    assert "rollback could not restore it" in result.text
    assert (repo / "data" / "big.txt").read_text() == "y" * 2000 + "\n"


@pytest.mark.parametrize("name", ["regenerated:notes.txt", "exclude:data.txt"])
def test_a_file_named_like_a_skipped_tag_is_held_like_any_other(tmp_path: Path, name: str) -> None:
    """`skipped` tags the user's exclusions and build outputs `exclude:…` and `regenerated:…`; a
    file over the budget named that way was taken for a tag, and written over with no checkpoint."""
    repo = workspace(tmp_path / "ws")
    (repo / name).write_text("y" * 5000)
    _small_budget(tmp_path)
    tool_input = json.dumps({"path": name, "content": "overwritten\n"})
    done = tether(repo, "tool", "write_file", "--permissions", "all", "--input", tool_input, home=tmp_path)
    result = json.loads(done.stdout)
    assert result["isError"] is True, result
    assert "rollback could not restore it" in result["text"]
    assert (repo / name).read_text() == "y" * 5000


@pytest.mark.usefixtures("sandboxed")
def test_thousands_of_files_over_the_budget_beside_small_ones_are_held_by_their_folders(
    tmp_path: Path,
) -> None:
    """`samples/<id>/{data.db,meta.json}`: no folder holds only big files, so each was its own
    mount (and its folder a pinned one), past bubblewrap's 9,000 arguments: no command that writes
    ran. Past 1,000 held paths, their folders are held instead, one level up at a time."""
    repo = workspace(tmp_path / "ws")
    for i in range(3500):
        sample = repo / "samples" / f"{i:04d}"
        sample.mkdir(parents=True)
        with open(sample / "data.db", "wb") as f:  # ignored (*.db), over the budget
            f.truncate(2000)
        (sample / "meta.json").write_text("{}\n")
    _small_budget(tmp_path)
    done = tether(repo, "run", "--json", "--permissions", "workspace", "touch made.txt", home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] == "executed", result
    (warning,) = [w for w in result["warnings"] if "too many to hold read-only one by one" in w]
    assert warning.startswith("3501 files over 0.001 MB"), warning  # local.db is one too
    assert warning.endswith("snapshotted as usual): local.db, samples/"), warning  # a file at the top
    listed = json.loads(tether(repo, "checkpoints", "--json", home=tmp_path).stdout)["checkpoints"][0]
    assert "samples/0007/data.db" in listed["skipped"]  # what is not snapshotted, not what is held
    assert "samples" not in listed["skipped"]
    held = tether(
        repo, "run", "--json", "--permissions", "workspace", "rm samples/0007/meta.json", home=tmp_path
    )
    assert (repo / "samples" / "0007" / "meta.json").exists(), held.stdout
    assert (repo / "samples" / "0007" / "data.db").exists()


@pytest.mark.parametrize(
    ("paths", "at_most", "held"),
    [
        (["a/1", "a/2", "b/c/3"], 3, ["a/1", "a/2", "b/c/3"]),  # within the budget: as they are
        (["a/1", "a/2", "b/c/3"], 2, ["a", "b/c"]),
        (["a/1", "a/b/2", "a-c/3", "x"], 2, ["a", "a-c", "x"]),  # top: x stays; a-c is not inside a
        (["x", "y", "z"], 1, ["x", "y", "z"]),  # nothing above the top of the workspace
        (["s/1/d", "s/2/d", "s/3/d", "t"], 2, ["s", "t"]),
    ],
)
def test_held_paths_past_the_budget_are_held_by_their_folders(
    paths: list[str], at_most: int, held: list[str]
) -> None:
    from tether.core.checkpoints.snapshots import _by_folder_up_to

    assert _by_folder_up_to(paths, at_most) == held
