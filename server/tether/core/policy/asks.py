"""What deserves a person: commands the policy answers with *ask* instead of deny.

Why a third verdict: deny is for what escapes or cannot be undone (paths outside the workspace,
secrets, privilege, the network). Some commands are reasonable but change what a checkpoint does
not cover, or what the user would want to see first: their repository's history and branches,
their installed packages, a script in the workspace that no rule knows. Refusing those sends the
agent into workarounds; running them silently surprises the user. So the person is asked, once per
compound command, for exactly these segments (docs/policy.md, "Ask").

Only a *deny* of the built-in checks is ever turned into an ask, and only for the exact shapes
below: a git command with any global option but `-C`/`--no-pager` stays denied, and so does
anything a path check refuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GIT_STATE = frozenset(
    {
        "commit", "checkout", "switch", "reset", "merge", "rebase", "cherry-pick", "revert",
        "stash", "branch", "tag", "restore", "pull", "fetch", "push", "am", "clean", "worktree",
        "submodule", "init", "rm", "mv", "add", "apply", "notes", "gc", "prune", "remote",
    }
)  # fmt: skip
"""git subcommands that change the repository beyond the work tree (refs, index, objects, config)."""

_INSTALLERS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "uninstall", "download"}),
    "pip3": frozenset({"install", "uninstall", "download"}),
    "npm": frozenset({"install", "i", "add", "ci", "uninstall", "remove", "update"}),
    "yarn": frozenset({"add", "install", "remove", "upgrade"}),
    "pnpm": frozenset({"add", "install", "i", "remove", "update"}),
    "bun": frozenset({"add", "install", "i", "remove"}),
    "cargo": frozenset({"add", "install", "remove", "update", "fetch"}),
    "go": frozenset({"get", "install"}),
    "poetry": frozenset({"add", "install", "remove", "update", "lock"}),
    "uv": frozenset({"add", "sync", "remove", "lock", "pip"}),
    "gem": frozenset({"install", "uninstall"}),
    "bundle": frozenset({"install", "add", "update"}),
    "composer": frozenset({"install", "require", "update"}),
}

_NETWORK_NOTE = "; the sandbox has no network, so only what is already cached can be installed"


@dataclass(frozen=True)
class AskReason:
    rule: str
    reason: str


def git_subcommand(argv: Sequence[str]) -> str | None:
    """`git [-C dir] [--no-pager] SUB …` → SUB; None when other global options come first."""
    at = _git_subcommand_at(argv)
    return argv[at] if at is not None else None


def _git_subcommand_at(argv: Sequence[str]) -> int | None:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-C" and i + 1 < len(argv):
            i += 2
        elif argv[i] == "--no-pager":
            i += 1
        else:
            return None
    return i if i < len(argv) else None


def git_plain(argv: Sequence[str]) -> list[str]:
    """`git -C dir --no-pager commit …` → `git commit …`: the form an *allow* rule is matched on.
    Any other global option (`-c`, `--exec-path`, `--git-dir`, …) is kept, so a rule allowing
    `git commit` never allows `git -c core.fsmonitor=… commit`. Another program's argv as it is."""
    if not argv or argv[0] != "git":
        return list(argv)
    at = _git_subcommand_at(argv)
    return [argv[0], *argv[at:]] if at is not None else list(argv)


_GLOBALS_WITH_A_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)


def git_without_globals(argv: Sequence[str]) -> list[str]:
    """`git -c k=v --git-dir x log …` → `git log …`: the form *deny* and *ask* rules are matched on,
    so no global option slips a command past them (git_plain is the narrower form for allow)."""
    if not argv or argv[0] != "git":
        return list(argv)
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GLOBALS_WITH_A_VALUE else 1
    return [argv[0], *argv[i:]]


def git_beyond_rules(argv: Sequence[str]) -> str | None:
    """Why no rule may allow this git command, or None: a global option other than `-C` and
    `--no-pager`, or an option whose value git runs as a program (`rebase --exec`, `fetch
    --upload-pack`, `submodule foreach`). A rule's decision never lets a command escape."""
    at = _git_subcommand_at(argv)
    if at is None:
        return "a git global option other than -C and --no-pager (it can make git run programs)"
    if _git_runs_a_program(argv[at], argv[at + 1 :]):
        return f"an option of `git {argv[at]}` that makes git run a program or write inside `.git`"
    return None


_RUNS_PROGRAMS = (
    "--upload-pack", "--receive-pack", "--exec", "--config", "--template", "--separate-git-dir",
    "--extcmd", "--tree-filter", "--index-filter", "--env-filter", "--msg-filter", "--commit-filter",
    "--parent-filter", "--tag-name-filter",
    "--unsafe-paths",  # `apply`: writes where the patch says, `.git/commondir` and `.git/objects` too
)  # fmt: skip
"""git options whose value is a program (or config that names one), or that let git write inside
`.git` what the agent wrote: git accepts any unambiguous prefix (`--upload-pa=sh`, `--uns`), so a
prefix of one of these keeps the command denied, never asked."""
_SHORT_RUNS: dict[str, str] = {
    "fetch": "u", "pull": "u", "clone": "uc", "ls-remote": "u", "rebase": "x", "difftool": "x",
}  # fmt: skip
"""Short options whose value is a program, per subcommand. Checked in every cluster of short
options, letter by letter, as git reads them: `rebase -fx CMD` is `--force-rebase --exec CMD`."""
_RUNS_SUBCOMMANDS = frozenset({"filter-branch", "mergetool", "config"})
"""Subcommands that run programs (or set config that names them) whatever their options."""


def _git_runs_a_program(sub: str, args: Sequence[str]) -> bool:
    letters = _SHORT_RUNS.get(sub, "")
    for arg in args:
        name = arg.split("=", 1)[0]
        if name.startswith("--") and len(name) > 3 and any(full.startswith(name) for full in _RUNS_PROGRAMS):
            return True
        cluster = arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""
        if any(c in letters for c in cluster):
            return True  # may also catch a letter inside an attached value: refused, never allowed
    if sub in _RUNS_SUBCOMMANDS:
        return True
    return (sub == "submodule" and "foreach" in args) or (sub == "bisect" and "run" in args)


def ask_for(argv: Sequence[str]) -> AskReason | None:
    """The ask class of a command the built-in checks refused, or None (it stays refused)."""
    if not argv:
        return None
    name = argv[0]
    if name == "git":
        sub = git_subcommand(argv)
        if sub in GIT_STATE and not _git_runs_a_program(sub, argv[argv.index(sub) + 1 :]):
            if sub == "clean":
                return AskReason(
                    "ask.destructive",
                    "`git clean` deletes untracked files; ignored build outputs it removes are not "
                    "checkpointed",
                )
            return AskReason("ask.git_state", f"`git {sub}` changes your repository beyond the work tree")
        return None
    if name in ("python", "python3") and list(argv[1:3]) == ["-m", "pip"]:
        argv = ["pip", *argv[3:]]
        name = "pip"
    subs = _INSTALLERS.get(name)
    if subs is not None and len(argv) > 1 and argv[1] in subs:
        return AskReason(
            "ask.package_install", f"`{name} {argv[1]}` changes installed packages{_NETWORK_NOTE}"
        )
    return None


def workspace_program(argv: Sequence[str]) -> bool:
    """A program named by a path (`./scripts/build.sh`, `bin/tool`): one that lives in the workspace."""
    return bool(argv) and "/" in argv[0] and not argv[0].startswith(("/", "~"))
