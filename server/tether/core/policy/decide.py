"""The policy's entry points: `decide` for a shell command string, `decide_argv` for an argv.

Order of checks, each refusing with its own rule id: the input itself (type, length, control and
invisible characters), the parse (node-type allowlist, see walk.py; quote removal, see lex.py),
then per simple command: glob expansion stays in the workspace, user deny rules, the program's
schema for the mode (or a user allow rule), every path argument, every redirect. One refused
segment refuses the whole command. Nothing here raises: unexpected errors become a denial
(`internal.error`) so a bug fails closed and loud.
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import itertools
import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from tether.core.policy.asks import ask_for, git_beyond_rules, git_without_globals, workspace_program
from tether.core.policy.lex import Word
from tether.core.policy.parse import parse
from tether.core.policy.paths import (
    PathCheck,
    bare_repository_trap,
    check_path,
    real_workspace,
    resolve_checked,
    toolchain_trap,
)
from tether.core.policy.programs import BLOCKED, NEVER_IN_WORKSPACE, PROGRAMS
from tether.core.policy.programs.build import BUILD_PROGRAMS
from tether.core.policy.ruleset import strictest
from tether.core.policy.settings import PolicySettings
from tether.core.policy.types import MODES, Ask, Decision, Deny, Mode, Redirect, Segment
from tether.core.policy.walk import _COMMAND_NAME, RawCommand, RawRedirect, walk

MAX_GLOB_MATCHES = 1000
_ALLOWED_NEWLINE_TAB = frozenset("\n\t")


def decide(
    command: str, mode: Mode, workspace: Path, settings: PolicySettings, *, cwd: Path | None = None
) -> Decision:
    """Decide whether `command` (a bash command line) may run in `mode` inside `workspace`.

    `cwd` is the directory the command will run in (default: the workspace root); relative
    paths are resolved against it, and it must itself be inside the workspace.
    """
    try:
        return _decide(command, mode, workspace, settings, _base(workspace, cwd))
    except Deny as deny:
        return _denied(deny, mode, settings)
    except Exception as exc:  # fail closed, and say so
        return _denied(
            Deny(
                "internal.error",
                f"the policy failed on this input ({type(exc).__name__}: {exc})",
                "report this as a bug in Tether",
            ),
            mode,
            settings,
        )


def lowest_mode(judge: Callable[[Mode], Decision], up_to: Mode = "workspace") -> tuple[Decision, Mode] | None:
    """The lowest mode, up to `up_to`, whose decision settles whether a command runs, with that
    decision: an allow in any mode, or an ask above read mode; None when no mode up to `up_to` does.

    Why a read-mode ask climbs on: read mode runs nothing that could need a person, so the question
    is asked at the mode the command will run in. The bash tool and Claude Code's hook with
    `--sandbox` both climb this way: the hook's grant then names the mode the runner needs.
    """
    for mode in MODES[: MODES.index(up_to) + 1]:
        decision = judge(mode)
        if decision.allowed or (mode != "read" and decision.verdict == "ask"):
            return decision, mode
    return None


def decide_argv(
    argv: Sequence[str], mode: Mode, workspace: Path, settings: PolicySettings, *, cwd: Path | None = None
) -> Decision:
    """Decide for an argv that will be exec'd directly: no shell, so no quoting, globs or redirects."""
    try:
        base = _base(workspace, cwd)
        _check_mode(mode)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise Deny("input.invalid", "argv must be a non-empty list of strings")
        if sum(len(a) + 1 for a in argv) > settings.max_command_length:
            raise Deny(
                "input.too_long", f"the command is longer than {settings.max_command_length} characters"
            )
        for a in argv:
            _check_characters(a)
        name = argv[0]
        if not _COMMAND_NAME.match(name):
            raise Deny(
                "command.name_chars",
                f"the program name {name!r} is not a plain name",
                "call the program by its name",
            )
        words = tuple(Word(value=a, pattern="") for a in argv[1:])
        segment, user, ask = _check_command(
            RawCommand(name=name, args=words, redirects=()), mode, workspace, settings, base
        )
        if ask is not None:
            return _asking(mode, (segment,), (ask,), needs_shell=False, settings=settings)
        return _allowed(mode, (segment,), needs_shell=False, user_rule=user, settings=settings)
    except Deny as deny:
        return _denied(deny, mode, settings)
    except Exception as exc:
        return _denied(
            Deny(
                "internal.error",
                f"the policy failed on this input ({type(exc).__name__}: {exc})",
                "report this as a bug in Tether",
            ),
            mode,
            settings,
        )


# --- input -----------------------------------------------------------------------------------


def _base(workspace: Path, cwd: Path | None) -> str:
    """The working directory relative to the workspace root ('' for the root itself)."""
    if cwd is None:
        return ""
    root = real_workspace(str(workspace))
    real = os.path.realpath(os.path.join(root, cwd))
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        raise Deny("path.outside_workspace", f"the working directory {str(cwd)!r} is outside the workspace")
    return "" if real == root else os.path.relpath(real, root)


def _at(base: str, path: str) -> str:
    """`path` as seen from the workspace root when the command runs in `base`."""
    if not base or path.startswith(("/", "~")) or path == "-":
        return path
    return f"{base}/{path}"


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise Deny("input.mode", f"unknown mode {mode!r} (expected read, command or workspace)")


_CONTROL_ASCII = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _check_characters(text: str) -> None:
    if text.isascii() and not _CONTROL_ASCII.search(text):
        return  # fast path: printable ASCII plus newline and tab
    for ch in text:
        if ch in _ALLOWED_NEWLINE_TAB or (" " <= ch < "\x7f"):
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            what = "a NUL byte" if ch == "\0" else f"the control or invisible character U+{ord(ch):04X}"
            rule = {
                "Cc": "input.control_char",
                "Zl": "input.control_char",
                "Zp": "input.control_char",
                "Cs": "input.invalid_unicode",
            }.get(cat, "input.invisible_char")
            raise Deny(rule, f"the command contains {what}", "remove it; write the command on plain lines")


def _decide(command: str, mode: Mode, workspace: Path, settings: PolicySettings, base: str) -> Decision:
    _check_mode(mode)
    if not isinstance(command, str):
        raise Deny("input.invalid", "the command must be a string")
    if len(command) > settings.max_command_length:
        raise Deny(
            "input.too_long",
            f"the command is longer than {settings.max_command_length} characters",
            "split it into smaller commands",
        )
    _check_characters(command)
    if not command.strip():
        raise Deny("input.empty", "the command is empty")
    if "\\\n" in command:
        raise Deny(
            "syntax.line_continuation",
            "line continuations (backslash-newline) are not allowed",
            "write the command on one line",
        )
    source = command.encode("utf-8")
    walked = walk(parse(source), source)
    if settings.network_enabled:
        _no_download_and_run([raw.name for raw in walked.commands])
    segments: list[Segment] = []
    asks: list[Ask] = []
    user_rule = False
    needs_shell = walked.compound
    # Directories later segments may run in: `cd` adds one, and since a `cd` can fail (`cd x; …`
    # goes on in the old directory) or run in a pipeline's subshell, the old ones stay possible.
    bases = [base]
    for raw in walked.commands:
        if raw.name == "cd":
            segments.append(Segment(argv=("cd", *(w.value for w in raw.args))))
            bases = _cd(raw, bases, workspace, settings)
            needs_shell = True
            continue
        for where in bases:  # every directory it may run in: each one's ask counts
            segment, user, ask = _check_command(raw, mode, workspace, settings, where)
            if ask is not None and ask not in asks:
                asks.append(ask)
            user_rule = user_rule or user
        segments.append(segment)
        needs_shell = needs_shell or bool(raw.redirects) or any(w.glob or w.tilde for w in raw.args)
    if asks:
        return _asking(mode, tuple(segments), tuple(asks), needs_shell=needs_shell, settings=settings)
    return _allowed(mode, tuple(segments), needs_shell=needs_shell, user_rule=user_rule, settings=settings)


MAX_CD = 4


def _cd(raw: RawCommand, bases: list[str], workspace: Path, settings: PolicySettings) -> list[str]:
    """`cd DIR` (or `cd -- DIR`) to a directory inside the workspace; returns the possible bases."""
    words = (
        [w for w in raw.args if w.value != "--"] if raw.args and raw.args[0].value == "--" else list(raw.args)
    )
    if raw.redirects or len(words) != 1 or words[0].glob or words[0].value.startswith("-"):
        raise Deny(
            "command.cd",
            "only `cd DIR` with one directory inside the workspace is allowed",
            "use `cd some/dir && …` (no options, no `cd -`, no bare `cd`)",
            program="cd",
        )
    if len(bases) > MAX_CD:
        raise Deny("input.too_complex", f"more than {MAX_CD} `cd` in one command")
    target = os.path.expanduser(words[0].value) if words[0].tilde else words[0].value
    root = real_workspace(str(workspace))
    new = list(bases)
    for where in bases:
        real, rule, reason = resolve_checked(
            _at(where, target), str(workspace), write=False, settings=settings
        )
        if real is None:
            raise Deny(rule, f"cd: {reason}", _path_suggestion(rule), program="cd")
        rel = "" if real == root else os.path.relpath(real, root)
        if rel not in new:
            new.append(rel)
    return new


# --- one simple command ----------------------------------------------------------------------


def _expand(word: Word, workspace: Path, settings: PolicySettings, base: str) -> list[str]:
    """The words bash may produce for `word`: glob matches (a superset) or the word itself."""
    if not word.glob:
        if not word.tilde:
            return [word.value]
        home = os.path.expanduser(word.value)
        # `echo ~` prints your home's path, whatever the program: a `~` word is always a path,
        # and it must be one inside the workspace.
        real, rule, reason = resolve_checked(home, str(workspace), write=False, settings=settings)
        if rule == "path.outside_workspace":  # the reason must not tell the model where home is
            raise Deny(rule, f"{word.value!r} is in your home directory, outside the workspace")
        if real is None:
            raise Deny(rule, reason, _path_suggestion(rule))
        return [home]
    pattern = word.pattern
    if word.tilde:
        pattern = os.path.expanduser(pattern)
    if any(fnmatchdots(part) for part in pattern.split("/")):
        raise Deny(
            "path.glob_dots",
            f"the pattern {word.value!r} could match `.` or `..`",
            "write the directory names out",
        )
    root = real_workspace(str(workspace))
    if base:
        root = os.path.join(root, base)
    found = globmod.iglob(pattern, root_dir=root) if not os.path.isabs(pattern) else globmod.iglob(pattern)
    matches = sorted(itertools.islice(found, MAX_GLOB_MATCHES + 1))  # never enumerate a huge tree
    if len(matches) > MAX_GLOB_MATCHES:
        raise Deny(
            "path.glob_too_many", f"the pattern {word.value!r} matches more than {MAX_GLOB_MATCHES} files"
        )
    for match in matches:
        real, rule, reason = resolve_checked(_at(base, match), str(workspace), write=False, settings=settings)
        if real is None:
            raise Deny(rule, f"the pattern {word.value!r} matches {match!r}: {reason}")
    return matches or [word.value]


def fnmatchdots(part: str) -> bool:
    """Could this glob component match `.` or `..`? Only a pattern starting with a literal dot can
    (bash never lets `*` or `[.]` match a leading dot; bash >= 5.2 skips `.`/`..` altogether, but
    the sandbox's bash may be older)."""
    return (
        part.startswith(".")
        and any(c in part for c in "*?[")
        and (fnmatch.fnmatchcase("..", part) or fnmatch.fnmatchcase(".", part))
    )


def _words(rule: str) -> list[str]:
    return rule.split()


def _prefix(rule_words: Sequence[str], argv: Sequence[str]) -> bool:
    return bool(rule_words) and list(argv[: len(rule_words)]) == list(rule_words)


def _check_command(
    raw: RawCommand, mode: Mode, workspace: Path, settings: PolicySettings, base: str = ""
) -> tuple[Segment, bool, Ask | None]:
    """One simple command: its segment, whether a user rule allowed it, and why it asks (if so).

    Deny stops here (raised); an ask is returned, so the other segments are still checked and a
    deny anywhere in the command wins over any ask.
    """
    name = raw.name
    expanded: list[str] = []
    for word in raw.args:
        expanded.extend(_expand(word, workspace, settings, base))
    argv = [name, *expanded]
    literal_argv = (name, *(w.value for w in raw.args))
    bare = git_without_globals(argv) if name == "git" else argv
    for rule in settings.denied:
        words = _words(rule)
        if _prefix(words, argv) or _prefix(words, bare):
            raise Deny("user.denied", f"`{' '.join(words)}` is denied by your configuration", program=name)
    data_rule = strictest(settings.rules, argv)
    if data_rule is not None and data_rule.decision == "deny":
        raise Deny(data_rule.id, data_rule.reason(), program=name)
    ask: Ask | None = None
    rule_ask: Ask | None = None  # an ask rule that only narrows: applied once the checks pass
    if data_rule is not None and data_rule.decision == "ask":
        # Your own ask rule may widen a built-in deny to a question — never for a git command no
        # rule may allow (`git --config-env core.fsmonitor=X push` under an ask rule for `git push`)
        widens = mode != "read" and data_rule.source.layer in ("user", "managed")
        if widens and not (name == "git" and git_beyond_rules(argv) is not None):
            ask = Ask(literal_argv, data_rule.id, data_rule.reason())  # may widen a deny to an ask
        else:
            rule_ask = Ask(literal_argv, data_rule.id, data_rule.reason())
    user_rule = mode != "read" and (
        any(_prefix(_words(r), argv) for r in settings.extra_allowed)
        or (data_rule is not None and data_rule.decision == "allow")
    )
    if user_rule and name == "git":
        beyond = git_beyond_rules(argv)
        if beyond is not None:
            raise Deny(
                "git.beyond_rules",
                f"`{' '.join(literal_argv)}` uses {beyond}: no rule can allow that",
                "drop the option; a rule allowing the subcommand then applies",
                program=name,
            )
    program = PROGRAMS.get(name)
    if name in NETWORK_CLIENTS and settings.network_enabled and mode != "read":
        # through the proxy, which checks every host (docs/network.md); files they name stay inside
        _network_client(name, expanded, workspace, settings, base)
        user_rule = True
    if "/" in name:
        ask = ask or _workspace_program(literal_argv, mode, workspace, settings, base)
        _generic_paths(expanded, workspace, settings, base, write=True)
    elif user_rule or ask is not None:
        # A rule lets through what no schema checked: any operand may be a file it writes
        # (`git stash show --output=.git/config` under an "Always allow `git stash`")
        _generic_paths(expanded, workspace, settings, base, write=True)
    elif program is not None:
        if mode not in program.modes and mode != "workspace":
            raise Deny(
                "mode.read", f"`{name}` needs command mode", "ask for command permission", program=name
            )
        try:
            parsed = program.check(expanded, "command" if mode == "workspace" else mode)
        except Deny as deny:
            ask = _asked_instead(deny, literal_argv, mode, argv)
            if ask is None and not (mode == "workspace" and _sandbox_contains(name, deny)):
                raise
            _generic_paths(expanded, workspace, settings, base, write=True)
        else:
            for p in parsed.read_paths:
                _require_path(_at(base, p), workspace, False, settings, name)
            if parsed.write_paths and mode == "read":
                raise Deny(
                    "mode.read", f"`{name}` would write files; read mode allows no writes", program=name
                )
            for p in parsed.write_paths:
                _require_path(_at(base, p), workspace, True, settings, name)
            if name == "git":
                _git_trap(parsed.values, workspace, base)
            if mode == "read" and name in _TOOLCHAIN_PROGRAMS:
                _toolchain_trap(name, workspace, base)
    else:
        ask = _asked_instead(_refusal(name, expanded), literal_argv, mode, argv)
        if ask is None and not (mode == "workspace" and name not in NEVER_IN_WORKSPACE):
            raise _refusal(name, expanded)
        _generic_paths(expanded, workspace, settings, base, write=True)
    redirects = tuple(_check_redirect(r, mode, workspace, settings, base) for r in raw.redirects)
    return Segment(argv=literal_argv, redirects=redirects), user_rule, ask or rule_ask


_SCHEME = re.compile(r"(?i)\A(?:[^=]*=)?([a-z][a-z0-9+.-]*)://")
_FILE_URL = re.compile(r"(?i)\A(?:[^=]*=)?file:")
_READS_ARGUMENTS = {
    # options that take further options or URLs from a file, or make a bare path a local URL
    "curl": (frozenset({"-K", "--config", "--proto-default"}), "K"),
    "wget": (frozenset({"-i", "--input-file", "-e", "--execute", "--config"}), "ie"),
}


def _network_client(
    name: str, expanded: Sequence[str], workspace: Path, settings: PolicySettings, base: str
) -> None:
    """curl and wget with the network on: only http(s) through the proxy, and nothing that reads a
    file the path checks cannot see. Refused: another scheme (`file:` also without `//`: curl reads
    `file:/etc/x` as a local file); options that read options or URLs from a file (`-K cfg` could name
    `file:///home/…`) or turn a bare path into a local URL (`--proto-default file`). Checked as
    paths: whatever may name a file curl reads or writes, which the generic path checks (operands
    and `--opt=value`) do not see — the text after an `@` (`-d @f`, `-d@f`, `-F k=@f`, `-H @f`,
    `--data-urlencode k@f`, `--variable n@f`) or a `<` (`-F k=<f`), and a short option's attached
    value, from each place it could start (`-T.env`, `-sST/etc/x`)."""
    long_opts, short_letters = _READS_ARGUMENTS[name]
    for arg in expanded:
        option = arg.partition("=")[0]
        short = arg.startswith("-") and not arg.startswith("--")
        clustered = short and any(c in short_letters for c in arg[1:])
        if option in long_opts or clustered:
            raise Deny(
                "network.scheme",
                f"`{name} {option}` would read options or URLs from elsewhere, past the policy's checks",
                "give the URL on the command line",
                program=name,
            )
        scheme = _SCHEME.match(arg)
        if (scheme is not None and scheme.group(1).lower() not in ("http", "https")) or _FILE_URL.match(arg):
            what = scheme.group(1).lower() if scheme is not None else "file"
            raise Deny(
                "network.scheme",
                f"`{name}` with a {what}: URL: only http and https go through the proxy",
                program=name,
            )
    files: list[str] = []
    for arg in expanded:
        files += [arg.partition(mark)[2] for mark in "@<" if mark in arg]
        if arg.startswith("-") and not arg.startswith("--"):
            letters = 1
            while letters < len(arg) and arg[letters].isascii() and arg[letters].isalpha():
                letters += 1
            files += [arg[end:] for end in range(2, letters + 1)]
    _generic_paths(files, workspace, settings, base)


_RUNS_TEXT = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "fish",
        "python",
        "python3",
        "node",
        "perl",
        "ruby",
        "php",
        "deno",
        "bun",
    }
)


def _no_download_and_run(names: Sequence[str]) -> None:
    """`curl … | sh`, `wget -O x && bash x`: what a network client fetched never goes to a shell or
    interpreter in the same command, whatever the mode (docs/network.md). Checked before anything
    else, so this is the reason given."""
    client = None
    for name in names:
        if client is not None and (name in _RUNS_TEXT or name.startswith("python3.")):
            raise Deny(
                "network.download_and_run",
                f"`{name}` after `{client}` in the same command would run what was downloaded",
                "download to a file, read it, and run it in a separate command the user can see",
                program=name,
            )
        if name in NETWORK_CLIENTS:
            client = name


def _refusal(name: str, expanded: Sequence[str]) -> Deny:
    if name in BLOCKED:
        why, what_instead = BLOCKED[name]
        return Deny(
            "command.blocked",
            f"`{name}` {why}",
            f"{what_instead} (or add `{name} …` to command_whitelist in your user config)",
            program=name,
        )
    return Deny(
        "command.unknown",
        f"`{name}` is not in the allowed list",
        f"add `{name}` (or a prefix like `{name} {expanded[0] if expanded else '…'}`) to "
        "command_whitelist in your user config if it is safe, or use workspace mode",
        program=name,
    )


def _asked_instead(deny: Deny, argv: tuple[str, ...], mode: Mode, expanded: Sequence[str]) -> Ask | None:
    """A refusal the person may overrule (git state, package installs), outside read mode.

    The question shows the command as written (`argv`); what bash will run (`expanded`, after the
    globs) must be askable too: `git rebase [-]-exec* HEAD~1` expands to `--exec=…` when a file of
    that name exists, and an option that runs a program stays denied, never asked.
    """
    if mode == "read" or deny.rule.startswith(("path.", "git.global_option", "git.bare_repository")):
        return None
    reason = ask_for(argv)
    if reason is None or ask_for(expanded) is None:
        return None
    return Ask(argv, reason.rule, reason.reason)


def _sandbox_contains(name: str, deny: Deny) -> bool:
    """In workspace mode a known program's refused flag (`sed -i`, `find -delete`) is fine: the
    sandbox confines it and the checkpoint undoes it. Git is the exception: its refusals guard
    the repository's state and the programs its config can run."""
    return name != "git" and not deny.rule.startswith("path.") and deny.rule not in _NEVER_CONTAINED


_NEVER_CONTAINED = frozenset({"go.remote_module"})
"""Refusals that stand in workspace mode too: they are about code from elsewhere, not files here."""
NETWORK_CLIENTS = frozenset({"curl", "wget"})
"""Allowed (outside read mode) when `[network]` allows domains: the proxy decides each connection."""


def _workspace_program(
    argv: tuple[str, ...], mode: Mode, workspace: Path, settings: PolicySettings, base: str
) -> Ask | None:
    """`./scripts/build.sh`: a program in the workspace. Read mode refuses it, command mode asks,
    workspace mode runs it (in the sandbox)."""
    name = argv[0]
    if mode == "read" or not workspace_program(argv):
        raise Deny(
            "command.path",
            f"running a program by path ({name!r}) is not allowed"
            + (" in read mode" if mode == "read" and workspace_program(argv) else ""),
            "call the program by its name, e.g. `pytest` or `python -m pytest`",
            program=name,
        )
    real, rule, reason = resolve_checked(_at(base, name), str(workspace), write=False, settings=settings)
    if real is None:
        raise Deny(rule, reason, _path_suggestion(rule), program=name)
    if not os.path.isfile(real):
        raise Deny("command.path", f"{name!r} is not a file in the workspace", program=name)
    if mode == "workspace":
        return None
    return Ask(argv, "ask.workspace_program", f"`{name}` is a program in the workspace that no rule knows")


def _git_trap(values: Sequence[tuple[str, str]], workspace: Path, base: str) -> None:
    start = _at(base, next((v for o, v in reversed(values) if o == "-C"), "."))
    trap = bare_repository_trap(start, workspace)
    if trap is not None:
        raise Deny(
            "git.bare_repository",
            f"git would treat {trap!r} as a bare repository and obey its config",
            "remove the HEAD/objects/refs files there, or run git from the real repository",
            program="git",
        )


_TOOLCHAIN_PROGRAMS = frozenset(p.name for p in BUILD_PROGRAMS)
"""Programs a version manager's shim may stand in for (`cargo`, `python3`, `node`, `go`, …)."""


def _toolchain_trap(name: str, workspace: Path, base: str) -> None:
    selector = toolchain_trap(name, base or ".", workspace)
    if selector is not None:
        raise Deny(
            "command.toolchain",
            f"{selector!r} makes a version manager run a program of the repository's choosing as "
            f"`{name}`; in read mode nothing from the repository may run",
            "run it in command mode, where the sandbox contains it",
            program=name,
        )


def _require(result: PathCheck, name: str) -> None:
    if not result.ok:
        raise Deny(result.rule, result.reason, _path_suggestion(result.rule), program=name)


def _require_path(raw: str, workspace: Path, write: bool, settings: PolicySettings, name: str) -> None:
    real, rule, reason = resolve_checked(raw, str(workspace), write=write, settings=settings)
    if real is None:
        raise Deny(rule, reason, _path_suggestion(rule), program=name)


def _path_suggestion(rule: str) -> str:
    if rule == "path.protected":
        return "protected files can only be changed by the user"
    if rule == "path.secret":
        return "leave secret files alone: ask the user for the value you need, or use .env.example"
    return "work with files inside the workspace only"


_DEV_NULL = "/dev/null"


def _generic_paths(
    args: Sequence[str], workspace: Path, settings: PolicySettings, base: str, *, write: bool = False
) -> None:
    """For programs we know no schema of (a user-allowed prefix, an asked command, any program in
    workspace mode), every operand, every `--opt=value` and every `key=value` (`dd of=…`) is
    treated as a possible path: it must not resolve outside the workspace (through `..`, `~`, an
    absolute path or a symlink) nor name a secret. With `write` (the program may write what it
    names) it must not name a protected path either; the workspace itself (`.`) is fine, the
    sandbox keeps the protected paths in it read-only. Names that do not exist resolve inside and
    pass."""
    for arg in args:
        if arg.startswith("-"):
            candidates = [arg.partition("=")[2]]
        else:
            candidates = [arg, arg.partition("=")[2]] if "=" in arg else [arg]
        for candidate in candidates:
            if not candidate or candidate in ("-", _DEV_NULL):
                continue
            at = _at(base, candidate)
            real, rule, reason = resolve_checked(at, str(workspace), write=False, settings=settings)
            if real is None and rule in ("path.outside_workspace", "path.tilde", "path.secret", "path.nul"):
                raise Deny(rule, reason, _path_suggestion(rule))
            if write and real is not None and real != real_workspace(str(workspace)):
                real, rule, reason = resolve_checked(at, str(workspace), write=True, settings=settings)
                if real is None:
                    raise Deny(rule, reason, _path_suggestion(rule))


def _check_redirect(
    r: RawRedirect, mode: Mode, workspace: Path, settings: PolicySettings, base: str
) -> Redirect:
    op = r.fd + r.op
    target = r.target.value if r.target is not None else ""
    shown = Redirect(op=op, target=target)
    if r.op == ">|":
        raise Deny("redirect.clobber", "`>|` (overwrite despite noclobber) is not allowed", "use `>`")
    if r.op in (">&", "<&") and r.target is not None and r.target_raw.isdigit():
        # fd duplication: only between stdout and stderr
        if (r.op, r.fd, target) in ((">&", "2", "1"), (">&", "", "2"), (">&", "1", "2")):
            return shown
        raise Deny(
            "redirect.fd",
            f"the fd duplication `{r.target_raw and op + target}` is not allowed",
            "only `2>&1` and `>&2` are allowed",
        )
    if r.op not in (">", ">>", "&>", "&>>", "<"):
        raise Deny(
            "redirect.operator",
            f"the redirect `{op}` is not allowed",
            "allowed: `>`, `>>`, `2>`, `2>>`, `&>`, `2>&1`, `<`",
        )
    if (
        r.fd not in ("", "1", "2", "0")
        or (r.op == "<" and r.fd not in ("", "0"))
        or (r.op in ("&>", "&>>") and r.fd)
        or (r.op in (">", ">>") and r.fd == "0")
    ):
        raise Deny("redirect.fd", f"the redirect `{op}` uses a file descriptor other than 0, 1 or 2")
    if r.target is None or r.target.glob:
        raise Deny("redirect.glob", "a redirect target must be a plain file name, not a pattern")
    if r.op == "<":
        path = os.path.expanduser(target) if r.target.tilde else target
        _require(check_path(_at(base, path), workspace, write=False, settings=settings), "<")
        return shown
    if target == _DEV_NULL:
        return shown
    if mode == "read":
        raise Deny(
            "mode.read",
            f"writing to {target!r} with `{op}` is not allowed in read mode",
            "read mode allows no writes (only `2>/dev/null`, `2>&1`); use the write_file tool",
        )
    path = os.path.expanduser(target) if r.target.tilde else target
    _require(check_path(_at(base, path), workspace, write=True, settings=settings), ">")
    return shown


# --- results ---------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def allowed_commands(mode: Mode, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What the model may run in `mode`, for the seed-002 error payload."""
    listed: Mode = "command" if mode == "workspace" else mode
    names = sorted(n for n, p in PROGRAMS.items() if listed in p.modes)
    return tuple(names) + (tuple(extra) if mode != "read" else ())


def _allowed(
    mode: Mode, segments: tuple[Segment, ...], *, needs_shell: bool, user_rule: bool, settings: PolicySettings
) -> Decision:
    names = ", ".join(dict.fromkeys(f"`{s.argv[0]}`" for s in segments))
    return Decision(
        allowed=True,
        rule="allowed.user_rule" if user_rule else "allowed",
        reason=f"{names} allowed in {mode} mode" + (" (by a user rule)" if user_rule else ""),
        suggestion=None,
        segments=segments,
        needs_shell=needs_shell,
        allowed_commands=allowed_commands(mode, settings.extra_allowed),
    )


def _asking(
    mode: Mode,
    segments: tuple[Segment, ...],
    asks: tuple[Ask, ...],
    *,
    needs_shell: bool,
    settings: PolicySettings,
) -> Decision:
    first = asks[0]
    more = f" (and {len(asks) - 1} more segment(s))" if len(asks) > 1 else ""
    return Decision(
        allowed=False,
        rule=first.rule,
        reason=f"{first.reason}{more}: the user decides",
        suggestion="the user is asked to allow it once, for the session, or always",
        segments=segments,
        needs_shell=needs_shell,
        allowed_commands=allowed_commands(mode, settings.extra_allowed),
        asks=asks,
    )


def _denied(deny: Deny, mode: str, settings: PolicySettings) -> Decision:
    valid_mode: Mode = mode if mode in MODES else "read"
    return Decision(
        allowed=False,
        rule=deny.rule,
        reason=deny.reason,
        suggestion=deny.suggestion,
        program=deny.program,
        allowed_commands=allowed_commands(valid_mode, tuple(settings.extra_allowed)),
    )
