"""Searching: grep, rg, find, and sed restricted to printing.

These are the binaries with the best-known escapes: `find -exec/-delete/-fprint`, `rg --pre`
(runs a preprocessor per file) and `-z` (runs decompressors), `sed`'s `e`/`w` commands and `-i`.
Each schema lists what only reads; find gets its own expression parser because its "options" are
a small language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tether.core.policy.argspec import Parsed, parse_args, spec
from tether.core.policy.programs.base import Program
from tether.core.policy.types import Deny, Mode

_GNU = "--help --version"
_FOLLOW = "follows symbolic links, which can lead out of the workspace"

GREP = spec(
    "grep",
    "-r -n -i -y -l -L -c -v -w -x -E -F -G -P -o -h -H -s -q -z -Z -a -I -b -U -T "
    "--recursive --line-number --ignore-case --no-ignore-case "
    "--files-with-matches --files-without-match --count --invert-match --word-regexp "
    "--line-regexp --extended-regexp --fixed-strings --basic-regexp --perl-regexp "
    "--only-matching --no-filename --with-filename --no-messages --quiet --silent --text "
    "--null --null-data --byte-offset --binary --initial-tab --line-buffered " + _GNU,
    {
        "-e": "text",
        "-f": "path",
        "-A": "int",
        "-B": "int",
        "-C": "int",
        "-m": "int",
        "--regexp": "text",
        "--file": "path",
        "--after-context": "int",
        "--before-context": "int",
        "--context": "int",
        "--max-count": "int",
        "--include": "text",
        "--exclude": "text",
        "--exclude-dir": "text",
        "--exclude-from": "path",
        "--binary-files": "text",
        "--label": "text",
        "-d": "text",
        "-D": "text",
        "--directories": "text",
        "--devices": "text",
    },
    optional={"--color": "text", "--colour": "text"},
    first_positional="text",
    first_positional_unless=frozenset({"-e", "-f", "--regexp", "--file"}),
    numeric_flag=True,
    denied={"-R": _FOLLOW, "--dereference-recursive": _FOLLOW},
)

RG = spec(
    "rg",
    "-i -S -s -l -c -v -w -x -F -o -u -U -P -H -I -n -N -a -q -0 -p -b -h -V "
    "--ignore-case --smart-case --case-sensitive --files-with-matches --files-without-match "
    "--count --count-matches --invert-match --word-regexp --line-regexp --fixed-strings "
    "--only-matching --unrestricted --multiline --multiline-dotall --pcre2 --no-pcre2 --no-follow "
    "--with-filename --no-filename --line-number --no-line-number --text --quiet --null "
    "--pretty --byte-offset --column --no-column --heading --no-heading --hidden --no-hidden "
    "--no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-exclude --no-ignore-global "
    "--no-ignore-parent --no-ignore-files --files --json --no-json --vimgrep --stats --trim "
    "--no-messages --passthru --null-data --type-list --glob-case-insensitive --crlf --no-crlf "
    "--no-config --one-file-system --max-columns-preview --no-unicode --sort-files "
    "--include-zero --line-buffered --block-buffered --no-search-zip --no-pre " + _GNU,
    {
        "-e": "text",
        "-f": "path",
        "-g": "text",
        "-t": "text",
        "-T": "text",
        "-j": "int",
        "-A": "int",
        "-B": "int",
        "-C": "int",
        "-m": "int",
        "-d": "int",
        "-M": "int",
        "-r": "text",
        "-E": "text",
        "--regexp": "text",
        "--file": "path",
        "--glob": "text",
        "--iglob": "text",
        "--type": "text",
        "--type-not": "text",
        "--after-context": "int",
        "--before-context": "int",
        "--context": "int",
        "--max-count": "int",
        "--max-depth": "int",
        "--maxdepth": "int",
        "--max-columns": "int",
        "--replace": "text",
        "--encoding": "text",
        "--engine": "text",
        "--sort": "text",
        "--sortr": "text",
        "--color": "text",
        "--colors": "text",
        "--max-filesize": "text",
        "--context-separator": "text",
        "--field-match-separator": "text",
        "--path-separator": "text",
        "--threads": "int",
        "--type-add": "text",
        "--type-clear": "text",
    },
    first_positional="text",
    first_positional_unless=frozenset({"-e", "-f", "--regexp", "--file", "--files", "--type-list"}),
    abbrev=False,  # ripgrep does not accept abbreviations
    denied={
        "--pre": "runs a program on every file searched",
        "-L": _FOLLOW,
        "--follow": _FOLLOW,
        "--pre-glob": "belongs to --pre, which runs programs",
        "-z": "runs decompression programs",
        "--search-zip": "runs decompression programs",
        "--hostname-bin": "runs a program to find the host name",
        "--ignore-file": "reads ignore rules from an arbitrary file",
        "--debug": "prints internal state",
        "--trace": "prints internal state",
    },
)

# --- find ------------------------------------------------------------------------------------

_FIND_TESTS_NOARG = frozenset(
    [
        "-print",
        "-print0",
        "-prune",
        "-not",
        "-a",
        "-o",
        "-and",
        "-or",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-depth",
        "-xdev",
        "-mount",
        "-daystart",
        "-nouser",
        "-nogroup",
        "-ls",
        "-quit",
        "-noleaf",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "!",
        "(",
        ")",
        ",",
    ]
)
_FIND_TESTS_ARG = {
    **dict.fromkeys(
        [
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-type",
            "-xtype",
            "-lname",
            "-ilname",
            "-size",
            "-perm",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-links",
            "-inum",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-used",
            "-regextype",
            "-printf",
            "-fstype",
            "-maxdepth",
            "-mindepth",
        ],
        "text",
    ),
    "-newer": "path",
    "-anewer": "path",
    "-cnewer": "path",
    "-samefile": "path",
}
_FIND_DENIED = {
    "-follow": _FOLLOW,
    "-L": _FOLLOW,
    "-exec": "runs a program",
    "-execdir": "runs a program",
    "-ok": "runs a program",
    "-okdir": "runs a program",
    "-delete": "deletes files",
    "-fprint": "writes a file",
    "-fprint0": "writes a file",
    "-fprintf": "writes a file",
    "-fls": "writes a file",
    "-files0-from": "reads starting points from a file",
}
_NEWER_XY = re.compile(r"-newer[aBcm][aBcmt]\Z")


def _find(args: Sequence[str], mode: Mode) -> Parsed:
    parsed = Parsed()
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        if args[i] == "-L":
            raise Deny(
                "flag.denied", f"`find -L` is not allowed: {_FOLLOW}", "drop -L (find -P is the default)"
            )
        parsed.options.append(args[i])
        i += 1
    if i < len(args) and args[i].startswith("-O"):
        raise Deny("flag.unknown", "`find -O` is not in the allowed list")
    # Starting points: everything before the first expression token.
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("!", "(", ")", ",")):
        parsed.positionals.append(args[i])
        parsed.read_paths.append(args[i])
        i += 1
    while i < len(args):
        token = args[i]
        i += 1
        if token in _FIND_DENIED:
            raise Deny(
                "flag.denied",
                f"`find {token}` is not allowed: {_FIND_DENIED[token]}",
                "list the files with find, then use the edit or write tools on them",
            )
        if token in _FIND_TESTS_NOARG or token in ("--help", "--version"):
            parsed.options.append(token)
            continue
        kind = _FIND_TESTS_ARG.get(token) or ("text" if _NEWER_XY.match(token) else None)
        if kind is None:
            raise Deny(
                "flag.unknown",
                f"`find {token}` is not in the allowed list",
                "find may use tests like -name, -type, -path, -maxdepth, -mtime and -print",
            )
        if i >= len(args):
            raise Deny("flag.missing_value", f"`find {token}` needs a value")
        value = args[i]
        i += 1
        parsed.options.append(token)
        if token.startswith("-newer") and len(token) == 8 and token[7] != "t":
            kind = "path"
        if kind == "path":
            parsed.read_paths.append(value)
    return parsed


# --- sed: printing only ----------------------------------------------------------------------

_SED_ADDR = r"(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)"
_SED_CMD = re.compile(rf"(?:{_SED_ADDR}(?:,{_SED_ADDR})?)?\s*(?:p|=|q\d*|Q\d*|d)\Z")
SED = spec(
    "sed",
    "-n -E -r -s -u -z --quiet --silent --regexp-extended --separate --unbuffered "
    "--null-data --posix --sandbox --debug " + _GNU,
    {"-e": "text", "--expression": "text", "-l": "int", "--line-length": "int"},
    first_positional="text",
    first_positional_unless=frozenset({"-e", "--expression"}),
    denied={
        "-i": "edits files in place",
        "--in-place": "edits files in place",
        "-f": "reads a script from a file",
        "--file": "reads a script from a file",
    },
)


def _sed_script(script: str) -> None:
    for piece in script.replace("\n", ";").split(";"):
        command = piece.strip()
        if command and not _SED_CMD.match(command):
            raise Deny(
                "sed.script",
                f"the sed command {command!r} is not pure printing (allowed: `Np`, `N,Mp`, `/re/p`, `$p`, "
                "`q`, `d`, `=`)",
                "use the read_file tool to read lines, or the edit_file tool to change a file",
            )


def _sed(args: Sequence[str], mode: Mode) -> Parsed:
    parsed = parse_args(args, SED)
    scripts = [v for o, v in parsed.values if o in ("-e", "--expression")]
    if not scripts:
        if not parsed.positionals:
            raise Deny("sed.script", "sed needs a script")
        scripts = [parsed.positionals[0]]
    for script in scripts:
        _sed_script(script)
    return parsed


SEARCH_PROGRAMS: tuple[Program, ...] = (
    Program("grep", frozenset({"read", "command"}), lambda a, m: parse_args(a, GREP), "search file contents"),
    Program("rg", frozenset({"read", "command"}), lambda a, m: parse_args(a, RG), "ripgrep search"),
    Program("find", frozenset({"read", "command"}), _find, "list files by name/type/time"),
    Program("sed", frozenset({"read", "command"}), _sed, "print selected lines (no editing)"),
)
