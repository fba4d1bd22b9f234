"""When `bash_command` may give git a writable `.git`, and what git may do with it.

Why a module of its own: `.git` is the one part of the workspace no checkpoint restores (its
objects are the history), so the sandbox keeps it read-only — except for a git command the person
allowed (asked, or their own rule). Then everything else in that command must be unable to use the
write access: no other program but read-only ones, no glob whose expansion nobody checked, and git
itself only on the workspace's own repository (a nested repository or a local "remote" brings its
own config, whose filters and drivers run programs) — each refused with how to split the command.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from pathlib import Path

from tether.core.checkpoints.restore import GITLINK, diff_trees
from tether.core.config import EffectiveConfig
from tether.core.gitcmd import Git
from tether.core.gitlinks import gitlinks
from tether.core.lockfiles import lock_file
from tether.core.policy import Decision, decide_argv
from tether.core.policy.asks import git_plain, git_subcommand
from tether.core.policy.types import Redirect
from tether.core.sandbox.profile import placeholder_anchor
from tether.errors import CheckpointError, PolicyDenied

_GLOB = frozenset("*?[")
_REMOTE_SUBCOMMANDS = frozenset({"push", "fetch", "pull", "remote", "submodule"})


def changes_git_state(decision: Decision, ws: Path, config: EffectiveConfig, cwd: Path) -> bool:
    """May this command change the repository's state with the person's leave? Then `.git` is
    writable in the sandbox (but for GIT_KEPT_READ_ONLY); PolicyDenied when the command around
    that git command could abuse it.

    Either the policy asks about a git segment (the gate asks before it runs), or the person's own
    rule allowed a git segment that git's built-in rules would ask about: "Always allow" on `git
    commit` wrote such a rule, and the commit must then work as it did when approved once. A
    built-in *deny* is never opened this way (the policy refuses a rule that would allow an option
    running a program).
    """
    asked = any(a.argv and a.argv[0] == "git" for a in decision.asks)
    policy = config.policy
    if not asked:
        if decision.rule != "allowed.user_rule":
            return False
        strict_rules = tuple(r for r in policy.rules if r.decision != "allow")
        builtin = replace(policy, extra_allowed=(), rules=strict_rules)
        if not any(
            s.argv[0] == "git" and decide_argv(s.argv, "command", ws, builtin, cwd=cwd).verdict == "ask"
            for s in decision.segments
            if s.argv
        ):
            return False
    if not (ws / ".git").is_dir() or (ws / ".git").is_symlink():
        raise _refusal(
            "git.linked_worktree",
            "this workspace has no `.git` directory of its own (a linked worktree or a submodule "
            "checkout has a `.git` file; a folder inside a bigger repository has none): the repository "
            "lies outside the workspace, so the sandbox cannot let git change it",
            "run this git command yourself, in a terminal",
            "git",
        )
    _no_submodule_setup(decision)
    _only_git_beside(decision, ws, config, cwd)
    _nothing_through_new_links(decision)
    _only_this_repository(decision, ws, cwd)
    _no_link_on_an_index_path(ws)
    _no_repository_git_could_record(decision, ws)
    return True


_RECORD_NO_NEW_PATH = frozenset(
    {"commit", "tag", "branch", "notes", "push", "fetch", "remote", "gc", "prune", "repack"}
)
"""Subcommands that never bring a path the index lacks into it (`commit -a` and `commit PATH`
take tracked files only). `stash` is not one: `stash pop` brings back whatever was stashed."""


_SUBMODULE_SETUP = frozenset(
    {"add", "init", "update", "sync", "deinit", "absorbgitdirs", "set-url", "set-branch"}
)


def _no_submodule_setup(decision: Decision) -> None:
    """`git submodule add/init/update/…` write `.git/config` and `.git/modules`, which stay
    read-only in the sandbox (a submodule's config names programs the user's git runs): refused
    before asking, with the way out, rather than failing on a read-only file after an approval."""
    for segment in decision.segments:
        argv = segment.argv
        if argv and argv[0] == "git" and git_subcommand(argv) == "submodule":
            words = [a for a in git_plain(argv)[2:] if not a.startswith("-")]
            if words and words[0] in _SUBMODULE_SETUP:
                raise _refusal(
                    "git.submodule_setup",
                    f"`git submodule {words[0]}` writes `.git/config` and `.git/modules`, which the "
                    "sandbox keeps read-only (a submodule's config names programs your own git runs)",
                    f"run `{' '.join(argv)}` yourself, in a terminal",
                    "git",
                )


def _forces(argv: Sequence[str]) -> bool:
    """`-f`, in a cluster too (`-Af`), or `--force` as git reads it (any prefix from `--fo`)."""
    for word in argv[1:]:
        if word == "--":
            return False
        if word.startswith("--"):
            if len(word) >= 4 and "--force".startswith(word.split("=", 1)[0]):
                return True
        elif word.startswith("-") and "f" in word[1:]:
            return True
    return False


def _no_repository_git_could_record(decision: Decision, ws: Path) -> None:
    """No repository lies in the work tree untracked, where a git command could record it as a
    submodule (`git add .` does, with a warning; so do `apply --index`, a checkout, a merge). The
    user's `git status` looks into every submodule, with that repository's config: an agent-made
    one naming a `core.fsmonitor` program would have it run outside the sandbox. Ignored ones count
    only beside `git add -f`, which can add them."""
    subcommands = {git_subcommand(s.argv) for s in decision.segments if s.argv and s.argv[0] == "git"}
    if subcommands <= _RECORD_NO_NEW_PATH:
        return
    forced = any(
        git_subcommand(s.argv) == "add" and _forces(s.argv)
        for s in decision.segments
        if s.argv and s.argv[0] == "git"
    )
    no_untracked_repository(ws, ignored_too=forced)


def no_untracked_repository(ws: Path, *, ignored_too: bool = False) -> None:
    """Refuse (`git.untracked_repository`) while a repository lies in the work tree untracked —
    ignored ones too with `ignored_too` — where an add could record it as a submodule. Untracked
    files are listed without refreshing (and so writing) the user's index. Also for
    `git_operation add`, which runs outside the sandbox with the same effect."""
    git = Git(git_dir=ws / ".git", work_tree=ws)
    try:
        listed = git.run("ls-files", "-z", "--others", "--exclude-standard").stdout.split(b"\0")
        if ignored_too:  # every ignored file: `--directory` would hide a repository deeper in an ignored one
            listed += git.run("ls-files", "-z", "--others", "--ignored", "--exclude-standard").stdout.split(
                b"\0"
            )
    except CheckpointError as exc:
        raise _refusal(
            "git.untracked_repository",
            f"the work tree could not be listed ({exc}), so it cannot be checked for repositories",
            "run `git status` yourself to see what is wrong",
            "git",
        ) from exc
    for entry in listed:
        name = os.fsdecode(entry)
        if name.endswith("/") and os.path.lexists(ws / name / ".git"):
            raise _refusal(
                "git.untracked_repository",
                f"the work tree holds a repository git does not track, `{name}`: with `.git` writable, a "
                "git command could record it as a submodule, and your own `git status` would then obey "
                "its config (a `core.fsmonitor` program runs outside the sandbox)",
                f"move `{name}` out of the workspace (or delete it), or run the git command yourself",
                "git",
            )


def _no_link_on_an_index_path(ws: Path) -> None:
    """No directory on the way to a file the index holds is a symlink into `.git`. Earlier calls can
    leave the index holding `old/HEAD` and the work tree `old -> .git`; `git rm -rf .` then unlinks
    through the link. (A link elsewhere — a tracked `vendor/` the person replaced by a link — only
    reaches files a checkpoint restores, or the read-only rest of the machine.) One `ls-files` and
    a realpath per directory, only for the rare call that gets a writable `.git`."""
    try:
        listed = Git(git_dir=ws / ".git", work_tree=ws).run("ls-files", "-z").stdout
    except CheckpointError as exc:
        raise _refusal(
            "git.link_in_index_path",
            f"the repository's index could not be read ({exc}), so it cannot be checked for links",
            "run `git status` yourself to see what is wrong",
            "git",
        ) from exc
    directories: set[bytes] = set()
    for entry in listed.split(b"\0"):
        parts = entry.split(b"/")[:-1]
        directories.update(b"/".join(parts[: i + 1]) for i in range(len(parts)))
    git_dir = os.path.realpath(ws / ".git")
    for directory in sorted(directories, key=len):
        path = ws / os.fsdecode(directory)
        if not os.path.islink(path):
            continue
        try:
            real = os.path.realpath(path, strict=False)
            magic = _through_process_links(str(path))
        except OSError:
            real, magic = git_dir, True  # cannot tell where it leads: as if into `.git`
        if magic or real == git_dir or real.startswith(git_dir + os.sep):
            name = os.fsdecode(directory)
            raise _refusal(
                "git.link_in_index_path",
                f"the index holds files under `{name}`, which is now a symbolic link "
                f"(to {os.readlink(ws / name)!r}); git would follow it while `.git` is writable",
                f"remove the link, or run `git rm -r --cached {name}` yourself",
                "git",
            )


def _through_process_links(path: str) -> bool:
    """Whether resolving `path` passes through `/proc` or `/dev` (`/proc/self/cwd`, `/dev/fd/3`):
    such links lead somewhere else for every process — for git, whose working directory is the
    work tree's top, `/proc/self/cwd/.git` is `.git`, whatever it is for Tether. Resolved one
    component at a time, as the kernel does; a loop counts as such a link."""
    pending = path.split("/")
    resolved = "/"
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        if candidate in ("/proc", "/dev") or candidate.startswith(("/proc/", "/dev/")):
            return True
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                return True
            target = os.readlink(candidate)
            pending = target.split("/") + pending
            resolved = "/" if target.startswith("/") else resolved
            continue
        resolved = candidate
    return False


_WORK_TREE_WRITERS = frozenset(
    {
        "apply", "am", "checkout", "switch", "restore", "reset", "stash", "merge", "pull",
        "cherry-pick", "revert", "mv", "rm", "worktree", "rebase", "clean", "submodule",
    }
)  # fmt: skip
"""git subcommands that write the work tree: they may create symlinks (a patch, a branch can hold
one), so paths checked before the command runs may lead elsewhere once they ran."""
_FOLLOW_LINKS = frozenset({"rm", "mv", "worktree", "clean", "submodule"})
"""Of those, the ones that do not check for a symlink on the way (git's checkout machinery does):
`git rm` unlinks `old/HEAD` through `old -> .git`, `git worktree add old/x` creates directories
there. After a work-tree writer in the same command, they are refused."""


def _nothing_through_new_links(decision: Decision) -> None:
    """The policy checked every path before the command ran; a git command that writes the work
    tree can make one a symlink into `.git` meanwhile (`git apply fix.patch` adding `notes.txt ->
    .git/HEAD`). So with `.git` writable: no redirect that writes (only `/dev/null`, `2>&1`, `>&2`
    and input), and after such a git command no `cd` and no `git -C` (a directory it may have just
    turned into a link to another repository)."""
    rewritten = False
    for segment in decision.segments:
        argv = segment.argv
        for redirect in segment.redirects:
            if not _writes_a_file(redirect):
                continue
            raise _refusal(
                "git.state_redirect",
                f"`{' '.join(argv)} {redirect.op} {redirect.target}` writes a file in a command whose git "
                "gets a writable `.git`; a git command may turn that file into a link into `.git` first",
                "write the output in a separate command",
                argv[0] if argv else "",
            )
        sub = git_subcommand(argv) if argv and argv[0] == "git" else None
        if (
            rewritten
            and argv
            and (argv[0] == "cd" or (argv[0] == "git" and "-C" in argv[1:]) or sub in _FOLLOW_LINKS)
        ):
            raise _refusal(
                "git.state_redirect",
                f"`{' '.join(argv)}` comes after a git command that rewrites files, which may have made "
                "its directory a link elsewhere",
                "run it in a separate command",
                argv[0],
            )
        if sub in _WORK_TREE_WRITERS:
            rewritten = True


_INERT_BESIDE_GIT = frozenset(
    {
        "basename", "cat", "comm", "cut", "date", "diff", "dirname", "du", "echo", "false", "fgrep",
        "find", "grep", "egrep", "head", "ls", "nl", "printf", "pwd", "realpath", "rg", "sleep",
        "sort", "stat", "tac", "tail", "tr", "tree", "true", "uniq", "wc",
    }
)  # fmt: skip
"""Programs that only read files and print: what may share a command with a git that has `.git`
writable. Read mode allows more — `cargo --version`, `python3 --version` — but those start
whatever toolchain the work tree names (`rust-toolchain.toml`, a virtualenv), agent-made code."""


def _only_git_beside(decision: Decision, ws: Path, config: EffectiveConfig, cwd: Path) -> None:
    """Git shares the writable `.git` only with `cd` and inert read-only programs: `make lint &&
    git commit` would let an agent-written Makefile delete the repository's objects, and `cargo
    --version` would run the toolchain an agent-written `rust-toolchain.toml` names."""
    for segment in decision.segments:
        name = segment.argv[0] if segment.argv else ""
        if name in ("git", "cd"):
            continue
        # The read-mode check sees the words as written; a glob would be checked as its pattern, not
        # what bash runs (`find [-]delete` with a file named `-delete`): no globs beside git here.
        globbed = any(c in _GLOB for word in segment.argv for c in word)
        read_only = not globbed and decide_argv(segment.argv, "read", ws, config.policy, cwd=cwd).allowed
        if read_only and name in _INERT_BESIDE_GIT:
            continue
        shown = " ".join(segment.argv)
        raise _refusal(
            "git.state_with_programs",
            f"`{shown}` runs in the same command as a git command that changes the repository; it "
            "would share the write access to `.git` that git gets, and no checkpoint restores `.git`",
            f"run `{shown}` in a separate command, then the git command on its own",
            name,
        )


def _writes_a_file(redirect: Redirect) -> bool:
    """`>`, `2>>`, `&>` to a file do; input (`<`), `2>&1`/`>&2` and `/dev/null` do not."""
    op = redirect.op.lstrip("0123456789")
    duplicates = op in (">&", "<&")
    return not (op.startswith("<") or duplicates or redirect.target == "/dev/null")


def _only_this_repository(decision: Decision, ws: Path, cwd: Path) -> None:
    """Every git segment works on the workspace's own repository, found from wherever it runs
    (`cd`, `-C`): not a nested repository or a `.git` file pointing elsewhere, and not a local
    path as remote (`git push ./other`) — their config is nobody's to trust, and git would obey
    it (filters, drivers, `receive.denyCurrentBranch=updateInstead`) while `.git` is writable."""
    root = Path(os.path.realpath(ws))
    bases = [Path(os.path.realpath(cwd))]
    for segment in decision.segments:
        argv = list(segment.argv)
        if not argv:
            continue
        if argv[0] == "cd":
            target = argv[-1]
            if any(c in _GLOB for c in target):
                raise _nested(argv)
            bases += [Path(os.path.realpath(base / target)) for base in bases]
            continue
        if argv[0] != "git":
            continue
        for base in bases:
            start = _start_directory(argv, base)
            if start is None or _repository_of(start, root) != root / ".git":
                raise _nested(argv)
            if _names_a_local_repository(argv, start):
                raise _refusal(
                    "git.local_remote",
                    f"`{' '.join(argv)}` names a repository on this machine as its remote; git would "
                    "obey that repository's config while `.git` is writable",
                    "use a remote configured in your repository (origin), or run it yourself",
                    "git",
                )


def _start_directory(argv: Sequence[str], base: Path) -> Path | None:
    """Where git starts looking for its repository: `base`, then each `-C DIR` in turn."""
    here = base
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-C" and i + 1 < len(argv):
            if any(c in _GLOB for c in argv[i + 1]):
                return None
            here = Path(os.path.realpath(here / argv[i + 1]))
            i += 2
        else:
            i += 1
    return here


def _repository_of(start: Path, root: Path) -> Path | None:
    """The `.git` git discovers from `start` (the first one on the way up), within `root`."""
    here = start
    while True:
        if os.path.lexists(here / ".git"):
            return here / ".git"
        if here == root or root not in here.parents:
            return None
        here = here.parent


def _names_a_local_repository(argv: Sequence[str], start: Path) -> bool:
    """Push, fetch, pull, `remote add/set-url`, `submodule add` given a path or `file:` URL (or a
    word naming a directory here) as the repository: any word after the subcommand, options'
    values included, since which one git takes for the repository depends on its option parsing."""
    sub = git_subcommand(argv)
    if sub not in _REMOTE_SUBCOMMANDS:
        return False
    for word in argv[list(argv).index(sub) + 1 :]:
        value = word.partition("=")[2] if word.startswith("-") else word
        if not value:
            continue
        if value.startswith(("file:", "/", "./", "../", "~")) or value in (".", ".."):
            return True
        if "://" not in value and _looks_like_a_repository(start / value):
            return True  # `git push evil` with no remote of that name pushes to ./evil
    return False


def _looks_like_a_repository(path: Path) -> bool:
    """A directory git would take as a repository: with a `.git`, or laid out bare. A plain
    directory named like a branch (`git push origin docs`) is not one."""
    if not path.is_dir():
        return False
    bare = (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()
    return bare or os.path.lexists(path / ".git")


def _nested(argv: Sequence[str]) -> PolicyDenied:
    return _refusal(
        "git.nested_repository",
        f"`{' '.join(argv)}` would work on another repository than the workspace's (a nested one, or "
        "a directory that cannot be told before it runs); git would obey its config while `.git` is "
        "writable",
        "run git on the workspace's repository, from a directory written out without patterns",
        "git",
    )


def _refusal(rule: str, reason: str, suggestion: str, program: str) -> PolicyDenied:
    return PolicyDenied(
        reason, Decision(allowed=False, rule=rule, reason=reason, suggestion=suggestion, program=program)
    )


@contextlib.contextmanager
def repository_lock(workspace: Path, *, alone: bool, cancel: threading.Event) -> Iterator[bool]:
    """Held around every command run in a repository's work tree, by every Tether process: shared,
    or exclusive for a command that gets a writable `.git`. Yields False when cancelled waiting.

    Why per repository and across processes: a second Tether (an MCP server beside the editor's)
    or a session on a subfolder (ACP opens one per `cwd`) could otherwise swap a checked directory
    for a link into `.git` while that command runs. Every enclosing repository's lock is taken, the
    outermost first (always the same order: no deadlock), since a `.git` planted in a subfolder
    must not move a session onto a lock of its own. `flock` is per open file, so threads exclude
    each other too. Without an enclosing repository nothing gets a writable `.git`: no lock.
    """
    git_dirs = _enclosing_git_dirs(workspace)
    with contextlib.ExitStack() as stack:
        for index, git_dir in enumerate(git_dirs):
            own = index == len(git_dirs) - 1 and (git_dir.parent == Path(os.path.realpath(workspace)))
            exclusive = alone and own
            try:
                flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                fd = os.open(repository_lock_file(git_dir), flags, 0o600)
            except OSError:
                if exclusive:  # the one that needs it cannot have it: fail closed
                    raise
                continue  # nobody can hold it exclusively either: it cannot be created here
            stack.callback(os.close, fd)  # closing also releases the flock
            while True:
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if cancel.is_set():
                        yield False
                        return
                    time.sleep(0.05)
        yield True


def repository_lock_file(git_dir: Path) -> Path:
    """The run lock of the repository whose `.git` is `git_dir` (in Tether's state directory)."""
    return lock_file(f"repository {os.path.realpath(git_dir)}")


def _enclosing_git_dirs(workspace: Path) -> list[Path]:
    """The `.git` directories of the workspace and every folder above it, outermost first."""
    here = Path(os.path.realpath(workspace))
    found = [
        c / ".git" for c in (here, *here.parents) if (c / ".git").is_dir() and not (c / ".git").is_symlink()
    ]
    return found[::-1]


class IndexWatch:
    """What an approved git command may not leave behind, taken before it runs and undone after
    (the sandbox gone, the repository's lock still held):

    * a new gitlink in the index — a repository recorded as a submodule (`git add -Af`, `apply
      --cached` of a "Subproject commit" patch, a checkout of a commit holding one), whose config
      the user's `git status` would obey;
    * the sandbox's placeholders in the index (`git add -f` takes them, as empty files);
    * a new `.git/commondir` or `.git/config.worktree` (they point git at another config);
    * a new `.git/index.lock` (a git the timeout killed): it would block the undo and the user.

    The checks before the question cannot see every way in; this sees the result. Entries go back
    as the last commit has them (`put_back_entries`: nothing on disk changes); if that fails, the
    index saved before the run is put back — never just a warning while a gitlink stays."""

    _REDIRECTS = ("commondir", "config.worktree")

    def __init__(self, ws: Path, protected: Sequence[Path]) -> None:
        self.ws = ws
        self.git_dir = ws / ".git"
        self.git = Git(git_dir=self.git_dir, work_tree=ws)
        anchors = {placeholder_anchor(ws, p) for p in protected}
        self.placeholders = sorted(
            os.path.relpath(a, ws) for a in anchors if a is not None and not os.path.lexists(a)
        )  # where the sandbox will put one
        self.existed = {n for n in (*self._REDIRECTS, "index.lock") if os.path.lexists(self.git_dir / n)}
        self.gitlinks = set(gitlinks(ws))
        self.tracked = self._tracked_placeholders()
        self.refs, self.known = self._refs()
        self.saved: Path | None = None
        if (self.git_dir / "index").is_file():
            fd, name = tempfile.mkstemp(prefix="tether-index-")
            os.close(fd)
            self.saved = Path(name)
            shutil.copyfile(self.git_dir / "index", self.saved)

    def undo(self) -> list[str]:
        """Take out what the command added; one note per kind for the result (empty: nothing)."""
        notes: list[str] = []
        ended = time.time()
        try:
            for name in (*self._REDIRECTS, "index.lock"):
                path = self.git_dir / name
                if name in self.existed or not os.path.lexists(path):
                    continue
                if name == "index.lock" and os.lstat(path).st_mtime > ended:
                    continue  # made after the run: a git of the user's, running now
                os.unlink(path)
                notes.append(f"Tether removed `.git/{name}`, which the command left behind")
            # A new submodule not checked out (an empty directory: a branch holding one) is kept:
            # from the next command on, the sandbox keeps its directory read-only.
            new_links = new_submodule_entries(self.ws, self.git_dir, self.gitlinks)
            new_placeholders = sorted(self._tracked_placeholders() - self.tracked)
            put_back_entries(self.git, [*new_links, *new_placeholders])
            notes += self._refs_back()
        except (CheckpointError, OSError) as exc:
            notes.append(self._put_back(exc))
            return notes
        if new_links:
            names = ", ".join(f"`{p}`" for p in new_links)
            notes.append(
                f"Tether took the new submodule entries {names} out of your index again: a repository in "
                "the work tree recorded as a submodule has your own `git status` obey its config, which "
                "the agent could write. Add one yourself if you meant to."
            )
        if new_placeholders:
            names = ", ".join(f"`{p}`" for p in new_placeholders)
            notes.append(
                f"Tether took its sandbox placeholders {names} out of your index again (empty files that "
                "exist only while a command runs; `git add -f` took them)"
            )
        return notes

    def discard(self) -> None:
        """Drop the saved copy of the index."""
        if self.saved is not None:
            with contextlib.suppress(OSError):
                self.saved.unlink()
            self.saved = None

    def _put_back(self, exc: Exception) -> str:
        index = self.git_dir / "index"
        try:
            if self.saved is not None:
                os.replace(self.saved, index)
                self.saved = None
                what = "put back the index as it was before the command"
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(index)
                what = "removed the index the command made (there was none before)"
        except OSError as failed:
            return (
                f"Tether could not check what the command left in your index ({exc}) nor put the old "
                f"one back ({failed}): do not run git in this repository before `git ls-files --stage` "
                "shows no `160000` entry you did not add yourself"
            )
        return (
            f"Tether could not check what the command left in your index ({exc}), so it {what}: "
            "run `git status` to see where your repository stands"
        )

    def _refs(self) -> tuple[dict[str, str], set[str]]:
        """Where every branch, tag and the stash (and a detached HEAD) point; and every commit any
        ref reaches directly (remote-tracking ones too, tags peeled) — what was there before the
        run is not the command's. Not committer dates: `am` and `rebase
        --committer-date-is-author-date` take those from the agent's patch."""
        listed = self.git.run(
            "for-each-ref", "--format=%(objectname) %(objecttype) %(*objectname) %(*objecttype) %(refname)%00"
        ).stdout
        watched: dict[str, str] = {}
        commits: set[str] = set()
        for entry in listed.split(b"\0"):
            fields = entry.strip(b"\n").split(b" ", 4)  # a ref name holds no space
            if len(fields) < 5:
                continue
            sha, kind, peeled, peeled_kind = (f.decode("ascii") for f in fields[:4])
            name = os.fsdecode(fields[4])
            if name.startswith(("refs/heads/", "refs/tags/")) or name == "refs/stash":
                watched[name] = sha
            if kind == "commit":
                commits.add(sha)
            elif kind == "tag" and peeled_kind == "commit":
                commits.add(peeled)
        if self.git.run("symbolic-ref", "-q", "HEAD", ok_codes=(0, 1)).returncode == 1:  # detached
            head = (
                self.git.run("rev-parse", "--verify", "-q", "HEAD", ok_codes=(0, 1)).stdout.decode().strip()
            )
            if head:
                watched["HEAD"] = head
                commits.add(head)
        return watched, commits

    def _refs_back(self) -> list[str]:
        """Refs the command moved go back where they were when any commit it made records a new
        submodule — in any commit, not only at a tip (added, then removed again, it comes back
        with the user's `git reset HEAD~1`), and whether or not a repository stands there yet (one
        can be made there by the next command: a path only in a commit is not kept read-only).
        The user's checkout or `git restore --staged` would bring that submodule into the index,
        and their `git status` would obey its config. The commits stay; the note names them.
        Commits reachable from a ref before the run — a branch merged, a checkout — are not
        looked at; ones a `pull` fetched in the same command are (safe, if sometimes too strict)."""
        now, _ = self._refs()
        moved = {name: new for name, new in now.items() if self.refs.get(name) != new}
        if not moved:
            return []
        revs = [*moved.values(), *(f"^{sha}" for sha in sorted(self.known))]
        listed = self.git.run("rev-list", "--parents", "--stdin", input="\n".join(revs).encode() + b"\n")
        added: set[str] = set()
        for line in listed.stdout.decode("ascii").splitlines():
            commit, *parents = line.split()
            # new against every parent: a merge of a branch that had the submodule brings none
            per_parent = [self._gitlinks_added(parent, commit) for parent in parents or [_EMPTY_TREE]]
            added |= set.intersection(*per_parent)
        if not added:
            return []
        notes = []
        paths = ", ".join(f"`{p}`" for p in sorted(added))
        for name, new in moved.items():
            old = self.refs.get(name)
            if old is None:
                self.git.run("update-ref", "-d", name, new)
            else:
                self.git.run("update-ref", *(["--no-deref"] if name == "HEAD" else []), name, old, new)
            notes.append(
                f"Tether moved `{name}` back from {new[:12]} to {(old or 'nothing')[:12]}: a commit the "
                f"command made records {paths} as a new submodule, whose "
                f"config your `git status` would obey after a checkout. The commits are still there "
                f"(`git log {new[:12]}`); add a submodule yourself if you meant to."
            )
        return notes

    def _gitlinks_added(self, old: str, new: str) -> set[str]:
        return {
            c.path for c in diff_trees(self.git, old, new) if c.new_mode == GITLINK and c.old_mode != GITLINK
        }

    def _tracked_placeholders(self) -> set[str]:
        if not self.placeholders:
            return set()
        listed = self.git.run(
            "ls-files", "-z", "--", *(f":(top,literal){p}" for p in self.placeholders)
        ).stdout
        return {os.fsdecode(p) for p in listed.split(b"\0") if p}


_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def new_submodule_entries(work_tree: Path, git_dir: Path, before: AbstractSet[str]) -> list[str]:
    """Submodule entries the index holds now and did not in `before`, where a repository stands
    (one not checked out, an empty directory, the sandbox keeps read-only from the next command
    on). `git_dir`: the index's, a linked worktree's own too. CheckpointError when unreadable."""
    return sorted(
        p for p in set(gitlinks(work_tree, git_dir)) - before if os.path.lexists(work_tree / p / ".git")
    )


def put_back_entries(git: Git, paths: Sequence[str]) -> None:
    """The index entries of `paths` as the last commit has them, and none where it has none: a
    tracked file an agent replaced by a repository, staged as a submodule, is the file again — not
    a deletion staged in its place. Nothing on disk changes. CheckpointError when git fails."""
    if not paths:
        return
    raw = [os.fsencode(p) for p in paths]
    committed = git.run(
        "ls-tree", "-z", "--full-tree", "HEAD", "--", *(os.fsdecode(p) for p in raw), ok_codes=(0, 128)
    )
    wanted = set(raw)
    entries = [  # `<mode> <type> <object>\t<path>`, as `update-index --index-info` reads them
        e + b"\0"
        for e in (committed.stdout.split(b"\0") if committed.returncode == 0 else [])
        if e.partition(b"\t")[2] in wanted and not e.startswith(b"040000 ")
    ]
    git.run("update-index", "--force-remove", "-z", "--stdin", input=b"".join(p + b"\0" for p in raw))
    if entries:
        git.run("update-index", "-z", "--index-info", input=b"".join(entries))
