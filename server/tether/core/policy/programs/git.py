"""git, read-only: status, log, diff, show, blame, grep, listing branches/tags/remotes, …

Why so strict: git runs programs from many places — pagers (`-p`), external diff and textconv
drivers, `-c`/`--config-env` settings (`core.pager`, `core.fsmonitor`, `diff.external`),
`--exec-path`, `--upload-pack`, and a `--git-dir`/`--work-tree` pointing at a directory the agent
wrote. We accept a short list of global options, a read-only set of subcommands, and for each its
own option allowlist. Positional arguments (revisions or paths) must stay inside the workspace.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence

from tether.core.policy.argspec import Kind, Parsed, Spec, parse_args, spec
from tether.core.policy.programs.base import Program
from tether.core.policy.types import Deny, Mode

_GLOBAL_FLAGS = frozenset(
    [
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--no-advice",
    ]
)
_GLOBAL_DENIED = {
    "-c": "sets configuration (can run programs via core.pager, diff.external, …)",
    "--config-env": "sets configuration from the environment",
    "--exec-path": "changes where git finds its programs",
    "-p": "runs a pager",
    "--paginate": "runs a pager",
    "--git-dir": "points git at another repository",
    "--work-tree": "points git at another tree",
    "--namespace": "changes the ref namespace",
    "--bare": "treats the directory as a bare repository",
    "--super-prefix": "internal option",
    "--html-path": "not needed",
    "--man-path": "not needed",
    "--info-path": "not needed",
    "--help": "opens a pager or browser",
    "--list-cmds": "not needed",
    "--attr-source": "reads attributes (textconv drivers) from another tree",
}
_COMMON_DENIED = {
    "--output": "writes to a file",
    "--ext-diff": "runs an external diff program",
    "--textconv": "runs textconv filter programs",
    "--show-signature": "runs gpg",
    "--open-files-in-pager": "runs a pager",
    "-O": "runs a pager",
    "--no-index": "compares files outside the repository",
    "--upload-pack": "runs a program",
    "--exec": "runs a program",
    "--receive-pack": "runs a program",
}

_DIFF_FLAGS = (
    "-p -u -s --patch --no-patch --raw --patch-with-raw --patch-with-stat --numstat --shortstat "
    "--summary --name-only --name-status -z --full-index --binary --no-renames -R -a --text -b -w "
    "--ignore-space-change --ignore-all-space --ignore-blank-lines --ignore-space-at-eol "
    "--ignore-cr-at-eol -W --function-context --no-color --minimal --patience --histogram "
    "--no-ext-diff --no-textconv --no-prefix --default-prefix --exit-code --quiet --pickaxe-all "
    "--pickaxe-regex --indent-heuristic --no-indent-heuristic --compact-summary --check "
    "--ita-invisible-in-index --ita-visible-in-index --no-relative --irreversible-delete -D "
    "--find-copies-harder --no-abbrev --no-color-moved --no-color-moved-ws "
    "--cached --staged --merge-base -1 -2 -3 --base --ours --theirs"
)
_DIFF_VALUED: dict[str, Kind] = {
    "--diff-algorithm": "text",
    "--word-diff-regex": "text",
    "--src-prefix": "text",
    "--dst-prefix": "text",
    "--unified": "int",
    "--inter-hunk-context": "int",
    "--diff-filter": "text",
    "--anchored": "text",
    "--stat-width": "int",
    "--stat-name-width": "int",
    "--stat-count": "int",
    "--stat-graph-width": "int",
    "-G": "text",
    "-S": "text",
    "-U": "int",
    "-l": "int",
    "--output-indicator-new": "text",
    "--output-indicator-old": "text",
    "--output-indicator-context": "text",
    "--line-prefix": "text",
    "--skip-to": "text",
    "--rotate-to": "text",
    "--find-object": "text",
    "-I": "text",
    "--ignore-matching-lines": "text",
}
_DIFF_OPTIONAL: dict[str, Kind] = {
    "--stat": "text",
    "--dirstat": "text",
    "--abbrev": "text",
    "--find-renames": "text",
    "--find-copies": "text",
    "--break-rewrites": "text",
    "--relative": "text",
    "--color": "text",
    "--color-words": "text",
    "--word-diff": "text",
    "--color-moved": "text",
    "--ignore-submodules": "text",
    "--submodule": "text",
    "--dirstat-by-file": "text",
    "--cumulative": "text",
    "--color-moved-ws": "text",
}
_DIFF_SHORT_OPTIONAL: dict[str, Kind] = {"-M": "text", "-C": "text", "-B": "text", "-X": "text"}

_LOG_FLAGS = (
    "--oneline --graph --no-decorate --all --first-parent --no-merges --merges --reverse -i "
    "--regexp-ignore-case -E -F -P --extended-regexp --fixed-strings --perl-regexp --all-match "
    "--invert-grep --abbrev-commit --no-abbrev-commit --relative-date --parents --children "
    "--left-right --cherry-pick --cherry-mark --cherry --boundary --topo-order --date-order "
    "--author-date-order --follow --full-history --simplify-by-decoration --ancestry-path "
    "--source --use-mailmap --mailmap --no-mailmap --log-size --walk-reflogs -g "
    "--remove-empty --dense --sparse --simplify-merges --show-pulls --left-only --right-only "
    "--not --reflog --no-notes --notes --show-notes --standard-notes --no-standard-notes "
    "--full-diff --no-expand-tabs --expand-tabs --clear-decorations --count -m -c --cc "
    "--combined-all-paths --no-diff-merges --dd -t --no-min-parents --no-max-parents"
)
_LOG_VALUED: dict[str, Kind] = {
    "-n": "int",
    "--max-count": "int",
    "--skip": "int",
    "--since": "text",
    "--after": "text",
    "--until": "text",
    "--before": "text",
    "--author": "text",
    "--committer": "text",
    "--grep": "text",
    "--grep-reflog": "text",
    "--format": "text",
    "--date": "text",
    "--encoding": "text",
    "-L": "text",
    "--min-parents": "int",
    "--max-parents": "int",
    "--since-as-filter": "text",
    "--decorate-refs": "text",
    "--decorate-refs-exclude": "text",
    "--diff-merges": "text",
    "--exclude": "text",
}
_LOG_OPTIONAL: dict[str, Kind] = {
    "--pretty": "text",
    "--decorate": "text",
    "--branches": "text",
    "--tags": "text",
    "--remotes": "text",
    "--glob": "text",
    "--no-walk": "text",
    "--expand-tabs": "text",
    "--show-linear-break": "text",
}


def _git_spec(
    name: str,
    flags: str,
    valued: Mapping[str, Kind] | None = None,
    optional: Mapping[str, Kind] | None = None,
    short_optional: Mapping[str, Kind] | None = None,
    **kw: object,
) -> Spec:
    return spec(
        f"git {name}",
        flags,
        valued,
        optional=dict(optional or {}),
        short_optional=dict(short_optional or {}),
        denied=dict(_COMMON_DENIED),
        **{"positional": "path", **kw},
    )


_DIFFLOG = _DIFF_FLAGS + " " + _LOG_FLAGS
SPECS: dict[str, Spec] = {
    "status": _git_spec(
        "status",
        "-s --short -b --branch --long -v --verbose -z --no-ahead-behind --ahead-behind "
        "--renames --no-renames --show-stash --no-column",
        {"--find-renames": "text"},
        {
            "--porcelain": "text",
            "--untracked-files": "text",
            "--ignored": "text",
            "--ignore-submodules": "text",
            "--column": "text",
            "--find-renames": "text",
        },
        {"-u": "text", "-M": "text"},
    ),
    "log": _git_spec(
        "log",
        _DIFFLOG,
        {**_DIFF_VALUED, **_LOG_VALUED},
        {**_DIFF_OPTIONAL, **_LOG_OPTIONAL},
        _DIFF_SHORT_OPTIONAL,
        numeric_flag=True,
    ),
    "show": _git_spec(
        "show",
        _DIFFLOG,
        {**_DIFF_VALUED, **_LOG_VALUED},
        {**_DIFF_OPTIONAL, **_LOG_OPTIONAL},
        _DIFF_SHORT_OPTIONAL,
        numeric_flag=True,
    ),
    "diff": _git_spec("diff", _DIFF_FLAGS, _DIFF_VALUED, _DIFF_OPTIONAL, _DIFF_SHORT_OPTIONAL),
    "blame": _git_spec(
        "blame",
        "-w -e -s -l -t -b -f -n -c -p --porcelain --line-porcelain --root --show-stats --show-name "
        "--show-number --show-email --incremental --first-parent --color-lines --color-by-age "
        "--minimal --progress --no-progress --score-debug",
        {
            "-L": "text",
            "--date": "text",
            "--ignore-rev": "text",
            "--ignore-revs-file": "path",
            "--contents": "path",
            "-S": "path",
            "--reverse": "text",
            "--encoding": "text",
        },
        {"--abbrev": "text"},
        {"-M": "text", "-C": "text"},
    ),
    "grep": _git_spec(
        "grep",
        "-n -i -l -L -w -v -c -h -H -E -F -G -P -I -a -z -q -p -W --line-number --ignore-case "
        "--files-with-matches --name-only --files-without-match --word-regexp --invert-match "
        "--count --no-filename --full-name --extended-regexp --fixed-strings --basic-regexp "
        "--perl-regexp --text --null --quiet --show-function --function-context --cached "
        "--untracked --no-exclude-standard --exclude-standard --recurse-submodules --heading "
        "--break --all-match --column --no-color --or --and --not --only-matching -o",
        {
            "-e": "text",
            "-f": "path",
            "-A": "int",
            "-B": "int",
            "-C": "int",
            "-m": "int",
            "--max-depth": "int",
            "--after-context": "int",
            "--before-context": "int",
            "--context": "int",
            "--max-count": "int",
            "--threads": "int",
        },
        {"--color": "text"},
        first_positional="text",
        first_positional_unless=frozenset({"-e", "-f"}),
        numeric_flag=True,
    ),
    "rev-parse": _git_spec(
        "rev-parse",
        "--show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir --absolute-git-dir "
        "--is-inside-work-tree --is-inside-git-dir --is-bare-repository --is-shallow-repository "
        "--verify -q --quiet --symbolic --symbolic-full-name --all --branches --tags --remotes "
        "--local-env-vars --show-superproject-working-tree --shared-index-path --revs-only "
        "--no-revs --flags --no-flags --default --sq --not --show-object-format --show-ref-format",
        {
            "--prefix": "text",
            "--since": "text",
            "--after": "text",
            "--until": "text",
            "--before": "text",
            "--path-format": "text",
        },
        {"--short": "int", "--abbrev-ref": "text", "--disambiguate": "text"},
    ),
    "describe": _git_spec(
        "describe",
        "--tags --always --long --all --exact-match --contains --first-parent --debug",
        {"--match": "text", "--exclude": "text", "--candidates": "int"},
        {"--abbrev": "text", "--dirty": "text", "--broken": "text"},
    ),
    "ls-files": _git_spec(
        "ls-files",
        "-c -d -o -i -s -u -k -m -t -v -f -z --cached --deleted --others --ignored --stage "
        "--unmerged --killed --modified --exclude-standard --directory --no-empty-directory "
        "--full-name --error-unmatch --recurse-submodules --eol --debug --deduplicate --sparse",
        {
            "-x": "text",
            "-X": "path",
            "--exclude": "text",
            "--exclude-from": "path",
            "--exclude-per-directory": "text",
            "--format": "text",
            "--with-tree": "text",
        },
        {"--abbrev": "text"},
    ),
    "ls-tree": _git_spec(
        "ls-tree",
        "-r -d -t -l -z --long --name-only --name-status --object-only --full-name --full-tree",
        {"--format": "text"},
        {"--abbrev": "text"},
    ),
    "shortlog": _git_spec(
        "shortlog",
        "-s -n -e -c --summary --numbered --email --committer --all --no-merges --merges --reverse",
        {
            "--group": "text",
            "--format": "text",
            "--since": "text",
            "--until": "text",
            "--author": "text",
            "-n": "int",
            "--max-count": "int",
        },
        short_optional={"-w": "text"},
    ),
    "branch": _git_spec(
        "branch",
        "-a -r -l -v -i --list --all --remotes --verbose --show-current --ignore-case --no-color "
        "--no-column --no-abbrev --omit-empty",
        {
            "--contains": "text",
            "--no-contains": "text",
            "--merged": "text",
            "--no-merged": "text",
            "--points-at": "text",
            "--sort": "text",
            "--format": "text",
        },
        {"--color": "text", "--column": "text", "--abbrev": "text"},
        positional="text",
    ),
    "tag": _git_spec(
        "tag",
        "-l -i --list --ignore-case --no-color --no-column --omit-empty",
        {
            "--contains": "text",
            "--no-contains": "text",
            "--merged": "text",
            "--no-merged": "text",
            "--points-at": "text",
            "--sort": "text",
            "--format": "text",
        },
        {"--color": "text", "--column": "text"},
        {"-n": "int"},
        positional="text",
    ),
    "version": _git_spec("version", "--build-options"),
}
_LASTARG_DEFAULT = frozenset({"--merged", "--no-merged", "--contains", "--no-contains"})

for _name, _denied in (
    (
        "branch",
        "-d -D -m -M -c -C -f -u -t --delete --move --copy --force --set-upstream-to "
        "--unset-upstream --edit-description --track --no-track --create-reflog "
        "--recurse-submodules",
    ),
    (
        "tag",
        "-a -s -u -f -d -v -m -F -e --annotate --sign --local-user --delete --verify --message "
        "--file --force --create-reflog --edit --cleanup",
    ),
):
    _s = SPECS[_name]
    SPECS[_name] = Spec(
        **{**_s.__dict__, "denied": {**_s.denied, **dict.fromkeys(_denied.split(), "changes refs")}}
    )

_LIST_ONLY = {"branch": ("-l", "--list"), "tag": ("-l", "--list")}


def _remote(args: Sequence[str]) -> Parsed:
    if all(a in ("-v", "--verbose") for a in args):
        return Parsed(options=list(args))
    if args and args[0] == "get-url":
        rest = [a for a in args[1:] if a not in ("--push", "--all")]
        if len(rest) == 1 and not rest[0].startswith("-"):
            return Parsed(positionals=rest)
    raise Deny(
        "git.subcommand",
        "only `git remote`, `git remote -v` and `git remote get-url NAME` are allowed",
        "remote changes and `git remote show` (which contacts the network) are not available",
    )


def _stash(args: Sequence[str]) -> Parsed:
    if args and args[0] in ("list", "show"):
        return parse_args(args[1:], SPECS["log"] if args[0] == "list" else SPECS["diff"])
    raise Deny(
        "git.subcommand",
        "only `git stash list` and `git stash show` are allowed",
        "ask the user to stash or apply changes",
    )


_SPECIAL: dict[str, Callable[[Sequence[str]], Parsed]] = {"remote": _remote, "stash": _stash}

READ_ONLY_SUBCOMMANDS = tuple(sorted({*SPECS, *_SPECIAL}))


def in_a_tree(arg: str) -> str | None:
    """The path in git's names for a file in a commit or the index: `REV:PATH`, `:PATH`, `:N:PATH`.
    None for anything else, for a tree's root (`HEAD:`) and for `:/text` (a search of commit
    messages). Why: the word as a whole names no file, but git prints the committed `.env` for
    `git show HEAD:.env`; the path in it gets the checks of any path."""
    if arg.startswith(":/"):
        return None
    depth = 0  # as git reads it: a `:` inside `{…}` (`HEAD^{/fix: x}`, `@{1 day ago}`) is not the one
    for index, char in enumerate(arg):
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == ":" and not depth:
            rev, path = arg[:index], arg[index + 1 :]
            break
    else:
        return None
    if not rev and path[:1] in ("0", "1", "2", "3") and path[1:2] == ":":
        path = path[2:]
    return path or None


def _line_log_files(value: str) -> set[str]:
    """The file of `git log -L START,END:FILE` or `-L :FUNCNAME:FILE`: it prints those lines."""
    return {p for p in (value.partition(":")[2], value.rpartition(":")[2]) if p}


def _git(args: Sequence[str], mode: Mode) -> Parsed:
    parsed = Parsed()
    cdir = "."
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = args[i]
        name = opt.partition("=")[0]
        if name in _GLOBAL_DENIED or opt.startswith("-c"):
            key = name if name in _GLOBAL_DENIED else "-c"
            raise Deny("git.global_option", f"`git {name}` is not allowed: {_GLOBAL_DENIED[key]}")
        if opt == "-C":
            if i + 1 >= len(args):
                raise Deny("flag.missing_value", "`git -C` needs a directory")
            # Each -C is relative to the previous one (`git -C a -C b` runs in a/b).
            cdir = _join(cdir, args[i + 1])
            i += 2
            continue
        if opt == "--version":
            if len(args) != 1:
                raise Deny("git.global_option", "`git --version` takes no other arguments")
            return Parsed(options=["--version"])
        if opt not in _GLOBAL_FLAGS:
            raise Deny(
                "git.global_option",
                f"the git option `{opt}` is not in the allowed list",
                "git may take -C DIR, --no-pager and the pathspec options before the subcommand",
            )
        parsed.options.append(opt)
        i += 1
    if i >= len(args):
        raise Deny("git.subcommand", "a git subcommand is needed")
    sub = args[i]
    rest = args[i + 1 :]
    if sub in _SPECIAL:
        inner = _SPECIAL[sub](rest)
    elif sub in SPECS:
        if sub in ("branch", "tag") and rest and rest[-1] in _LASTARG_DEFAULT:
            # git's PARSE_OPT_LASTARG_DEFAULT: last on the line, `--merged` means `--merged=HEAD`
            rest = [*rest[:-1], f"{rest[-1]}=HEAD"]
        inner = parse_args(rest, SPECS[sub])
        needs = _LIST_ONLY.get(sub)
        if needs and inner.positionals and not any(o in needs for o in inner.options):
            raise Deny(
                "git.subcommand",
                f"`git {sub} NAME` creates a {sub}; only listing is allowed",
                f"use `git {sub} --list PATTERN` to list",
            )
    else:
        raise Deny(
            "git.subcommand",
            f"`git {sub}` is not in the allowed list (read-only: {', '.join(READ_ONLY_SUBCOMMANDS)})",
            "use the git_operation tool for commits and other changes"
            if mode == "command"
            else "read mode allows only read-only git subcommands",
        )
    parsed.options.extend(inner.options)
    parsed.positionals.extend(inner.positionals)
    # The subcommand's paths are relative to the directory git runs in.
    parsed.read_paths.extend(_join(cdir, p) for p in inner.read_paths)
    # `HEAD:.env` names a file too, the one in that commit: checked as well (`git show HEAD:.env`)
    parsed.read_paths.extend(_join(cdir, p) for p in map(in_a_tree, inner.read_paths) if p is not None)
    if sub == "log":
        ranges = (v for o, v in inner.values if o == "-L")
        parsed.read_paths.extend(_join(cdir, p) for v in ranges for p in sorted(_line_log_files(v)))
    parsed.write_paths.extend(_join(cdir, p) for p in inner.write_paths)
    parsed.values.extend(inner.values)
    if cdir != ".":
        parsed.read_paths.append(cdir)
        parsed.values.append(("-C", cdir))
    return parsed


def _join(base: str, path: str) -> str:
    if base == "." or path.startswith(("/", "~")):
        return path
    return posixpath.join(base, path)


GIT_PROGRAMS: tuple[Program, ...] = (
    Program("git", frozenset({"read", "command"}), _git, "read-only git subcommands"),
)
