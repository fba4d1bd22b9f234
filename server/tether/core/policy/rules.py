"""Every rule id the policy (and `tether check`) can answer with, and what it means.

The table is the contract for users (docs/policy.md prints it), the audit log and tests: a test
checks that every id the code emits is listed here.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    "allowed": "every segment matched a built-in schema for the mode",
    "allowed.user_rule": (
        "a segment matched a prefix from your user config's command_whitelist / [policy] allow"
    ),
    # input
    "input.empty": "the command is empty",
    "input.invalid": "the command is not a string (or argv not a list of strings)",
    "input.invalid_json": "`tether check --jsonl`: the line is not valid JSON (or not UTF-8)",
    "input.invalid_request": "`tether check --jsonl`: the JSON is not an object with a string `cmd`",
    "input.invalid_unicode": "the command contains unpaired surrogates",
    "input.mode": "the mode is neither read nor command",
    "input.too_long": "the command is longer than max_command_length",
    "input.too_complex": "lists or pipelines nested deeper than 200 levels",
    "input.control_char": "NUL, CR, escape or other control characters, Unicode line separators",
    "input.invisible_char": "zero-width, bidirectional-override and other invisible format characters",
    # syntax
    "syntax.parse_error": "the command does not parse cleanly as bash (any ERROR/MISSING node)",
    "syntax.unsupported": "a syntax node type outside the allowlist",
    "syntax.unexpected": "an unquoted shell metacharacter inside a word",
    "syntax.command_substitution": "`$(…)` or backticks",
    "syntax.process_substitution": "`<(…)` or `>(…)`",
    "syntax.expansion": '`$VAR`, `${…}` (including `${x@P}`), `$"…"`, or any unquoted `$`',
    "syntax.arithmetic": "`$((…))` or `$[…]`",
    "syntax.ansi_c_quoting": "`$'…'` quoting",
    "syntax.brace_expansion": "`{a,b}` or `{1..3}`",
    "syntax.tilde": "`~user`, `~+`, `~-`, or an unquoted `~` after `=` or `:`",
    "syntax.escape": "a trailing backslash",
    "syntax.line_continuation": "backslash-newline",
    "syntax.assignment": "variable assignments (`A=b cmd`, `A=b`), export/declare/local/unset",
    "syntax.subshell": "`( … )`",
    "syntax.group": "`{ …; }`",
    "syntax.function": "function definitions",
    "syntax.control_flow": "if/for/while/until/case, `[[ … ]]`, `!` negation",
    "syntax.heredoc": "here-documents `<<`",
    "syntax.herestring": "here-strings `<<<`",
    "syntax.background": "`&` (background jobs)",
    "syntax.pipe_stderr": "`|&`",
    "syntax.comment": "`# comments`",
    "syntax.quoted_command_name": 'quotes or backslashes in a command name (`"r"m`, `\\rm`)',
    "syntax.ambiguous_redirect": "digits or `{var}` touching a redirect (`ls 0>x`): bash reads an fd",
    "syntax.redirect_position": "words after a redirect target (`cmd > f arg`)",
    # commands
    "command.unknown": "the program is not in any allowlist",
    "command.blocked": "the program is on the blocked list (rm, curl, sh, env, xargs, sudo, …)",
    "command.path": "the program is given by path (`./x`, `/bin/ls`)",
    "command.non_ascii": "non-ASCII characters in the program name (look-alike letters)",
    "command.name_chars": "other characters not allowed in a program name",
    "command.interpreter": "an interpreter used for anything but `-m pytest` or `--version`",
    "command.version_only": "the program is only allowed to print its version",
    "command.cd": "`cd` with options, several operands, a glob, `-`, or no directory",
    "command.npm": "npm used for anything but `npm test` / `--version`",
    "command.cargo": "cargo used for anything but test/build/check / `--version`",
    "mode.read": "the command needs command mode (builds, tests, writes)",
    "user.denied": "a deny rule from your configuration matched",
    # arguments
    "flag.unknown": "an option not in the program's allowlist",
    "flag.denied": "an option known to run programs, write files or escape (incl. abbreviations of it)",
    "flag.ambiguous": "an abbreviated long option matching several options",
    "flag.value": "an option's value is malformed, or a flag got a value",
    "flag.missing_value": "an option needs a value",
    "args.too_many": "more operands than the program may take safely (`uniq IN OUT` writes OUT)",
    "args.unexpected": "an operand where none is allowed (`hostname NAME` sets the host name)",
    "git.global_option": "git options before the subcommand other than -C, --no-pager, pathspec flags",
    "git.subcommand": "a git subcommand outside the read-only set, or a branch/tag/remote change",
    "git.bare_repository": "git would run in a directory laid out as a bare repo (its config runs code)",
    "go.subcommand": "a go subcommand outside build/test/run/vet/list/mod(safe)/version/env",
    "go.ldflags": "linker flags other than -s, -w, -X name=value",
    "sed.script": "a sed script that is not pure printing",
    "date.set": "`date` with an operand other than +FORMAT (sets the clock)",
    # paths
    "path.outside_workspace": "a path (after ~, .., symlinks and globs) resolves outside the workspace",
    "path.protected": "a write to a protected file (.git, .envrc, .vscode/, …)",
    "path.nul": "a NUL byte in a path",
    "path.empty": "an empty path",
    "path.tilde": "`~user` style paths",
    "path.glob_dots": "a glob component that could match `.` or `..`",
    "path.glob_too_many": "a glob matching more than 1000 files",
    # redirects
    "redirect.clobber": "`>|`",
    "redirect.operator": "`<>`, `>&-`, `>& file` and other redirects outside the allowed set",
    "redirect.fd": "file descriptors other than 0/1/2, or fd duplication other than 2>&1 / >&2",
    "redirect.glob": "a glob as a redirect target",
    "internal.error": "a bug in the policy; the command is refused (fail closed)",
    "internal.schema": "a bug in a program schema; the command is refused",
}
