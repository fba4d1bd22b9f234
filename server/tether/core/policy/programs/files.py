"""Side-effect-free file and system inspection: ls, cat, head, wc, stat, du, date, echo, …

Each schema lists the options from the tool's manual that only read; anything that writes
(`sort -o`, `uniq IN OUT`, `tree -o`, `date -s`), runs programs (`sort --compress-program`,
`file -z`), reads arbitrary file lists (`--files0-from`) or never ends (`tail -f`) is absent or
denied with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.core.policy.argspec import Parsed, parse_args, spec
from tether.core.policy.programs.base import Program, no_operands, simple
from tether.core.policy.types import Deny, Mode

_GNU = "--help --version"
_FILES0 = {"--files0-from": "reads a list of file names from a file"}
_FOLLOW = "follows symbolic links, which can lead out of the workspace"

LS = spec(
    "ls",
    "-a -A -l -h -R -1 -t -S -r -d -F -p -i -s -n -G -g -o -c -u -x -C -Q -v -X -U -H -B -k -m -N "
    "--all --almost-all --human-readable --si --recursive --reverse --classify --directory --inode "
    "--size --numeric-uid-gid --full-time --group-directories-first --literal "
    "--ignore-backups --no-group --quote-name --escape --author --dereference-command-line " + _GNU,
    {
        "-I": "text",
        "-T": "int",
        "-w": "int",
        "--ignore": "text",
        "--hide": "text",
        "--sort": "text",
        "--time-style": "text",
        "--format": "text",
        "--indicator-style": "text",
        "--time": "text",
        "--block-size": "text",
        "--tabsize": "int",
        "--width": "int",
        "--quoting-style": "text",
    },
    optional={"--color": "text", "--hyperlink": "text", "--classify": "text"},
    denied={"-L": _FOLLOW, "--dereference": _FOLLOW},
)
CAT = spec(
    "cat",
    "-n -b -A -e -E -s -T -v -t -u --number --number-nonblank --show-all --show-ends "
    "--squeeze-blank --show-tabs --show-nonprinting " + _GNU,
)
_HEAD_TAIL_FLAGS = "-q -v -z --quiet --silent --verbose --zero-terminated " + _GNU
HEAD = spec(
    "head",
    _HEAD_TAIL_FLAGS,
    {"-n": "int", "-c": "int", "--lines": "int", "--bytes": "int"},
    numeric_flag=True,
)
TAIL = spec(
    "tail",
    _HEAD_TAIL_FLAGS,
    {"-n": "int", "-c": "int", "--lines": "int", "--bytes": "int"},
    numeric_flag=True,
    denied={
        "-f": "follows the file forever",
        "-F": "follows the file forever",
        "--follow": "follows the file forever",
        "--retry": "waits for the file forever",
        "--pid": "waits for a process",
        "-s": "only meaningful with --follow",
        "--sleep-interval": "only meaningful with --follow",
    },
)
WC = spec(
    "wc",
    "-l -w -c -m -L --lines --words --bytes --chars --max-line-length " + _GNU,
    optional={"--total": "text"},
    denied=_FILES0,
)
FILE = spec(
    "file",
    "-b -i -L -h -N -k -s -E -r -0 -p --brief --mime --mime-type --mime-encoding --dereference "
    "--no-dereference --no-pad --keep-going --special-files --raw --print0 --preserve-date "
    "--extension --apple " + _GNU,
    {
        "-e": "text",
        "-F": "text",
        "-P": "text",
        "--exclude": "text",
        "--separator": "text",
        "--parameter": "text",
    },
    denied={
        "-z": "decompresses with external programs",
        "-Z": "decompresses with external programs",
        "--uncompress": "decompresses with external programs",
        "--uncompress-noreport": "decompresses with external programs",
        "-C": "compiles a magic file (writes)",
        "--compile": "compiles a magic file (writes)",
        "-m": "loads an arbitrary magic file",
        "--magic-file": "loads an arbitrary magic file",
        "-f": "reads file names from a file",
        "--files-from": "reads file names from a file",
    },
)
STAT = spec(
    "stat",
    "-L -f -t --dereference --file-system --terse " + _GNU,
    {"-c": "text", "--format": "text", "--printf": "text", "--cached": "text"},
)
DU = spec(
    "du",
    "-s -h -a -c -k -m -b -x -P -S -l -0 -H -D --summarize --human-readable --all --total "
    "--apparent-size --one-file-system --no-dereference --separate-dirs "
    "--count-links --null --bytes --si --inodes " + _GNU,
    {
        "-d": "int",
        "--max-depth": "int",
        "--exclude": "text",
        "-B": "text",
        "--block-size": "text",
        "-t": "text",
        "--threshold": "text",
        "-X": "path",
        "--exclude-from": "path",
        "--time-style": "text",
    },
    optional={"--time": "text"},
    denied={**_FILES0, "-L": _FOLLOW, "--dereference": _FOLLOW},
)
DF = spec(
    "df",
    "-h -H -T -i -a -l -k -P --human-readable --si --print-type --inodes --all --local "
    "--portability --total --no-sync --sync " + _GNU,
    {
        "-t": "text",
        "-x": "text",
        "--type": "text",
        "--exclude-type": "text",
        "-B": "text",
        "--block-size": "text",
    },
    optional={"--output": "text"},
)
TREE = spec(
    "tree",
    "-a -d -f -h -s -D -C -n -i -F -x -J -X -p -u -g -q -N -Q -r -t -c -v -U --noreport "
    "--dirsfirst --filesfirst --gitignore --prune --du --si --help --version --matchdirs --ignore-case",
    {
        "-L": "int",
        "-I": "text",
        "-P": "text",
        "--charset": "text",
        "--filelimit": "int",
        "--sort": "text",
        "--timefmt": "text",
    },
    abbrev=False,
    denied={
        "-l": _FOLLOW,
        "-o": "writes the listing to a file",
        "-R": "writes 00Tree.html files",
        "-H": "HTML output is not needed",
        "--fromfile": "reads a listing from a file",
    },
)
SORT = spec(
    "sort",
    "-b -d -f -g -i -h -M -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks "
    "--dictionary-order --ignore-case --general-numeric-sort --ignore-nonprinting "
    "--human-numeric-sort --month-sort --numeric-sort --random-sort --reverse --version-sort "
    "--merge --stable --unique --zero-terminated " + _GNU,
    {
        "-k": "text",
        "-t": "text",
        "--key": "text",
        "--field-separator": "text",
        "--sort": "text",
        "-S": "text",
        "--buffer-size": "text",
        "--parallel": "int",
        "--batch-size": "int",
    },
    optional={"--check": "text"},
    denied={
        "-o": "writes to a file",
        "--output": "writes to a file",
        "--compress-program": "runs a program",
        "-T": "writes temporary files elsewhere",
        "--temporary-directory": "writes temporary files elsewhere",
        "--random-source": "reads an arbitrary file",
        **_FILES0,
    },
)
UNIQ = spec(
    "uniq",
    "-c -d -D -i -u -z --count --repeated --ignore-case --unique --zero-terminated " + _GNU,
    {
        "-f": "int",
        "-s": "int",
        "-w": "int",
        "--skip-fields": "int",
        "--skip-chars": "int",
        "--check-chars": "int",
    },
    optional={"--all-repeated": "text", "--group": "text"},
    max_positional=1,  # `uniq IN OUT` writes OUT
)
CUT = spec(
    "cut",
    "-s -z -n --complement --only-delimited --zero-terminated " + _GNU,
    {
        "-b": "text",
        "-c": "text",
        "-d": "text",
        "-f": "text",
        "--bytes": "text",
        "--characters": "text",
        "--delimiter": "text",
        "--fields": "text",
        "--output-delimiter": "text",
    },
)
TR = spec(
    "tr",
    "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1 " + _GNU,
    positional="text",
    max_positional=2,
)
DIFF = spec(
    "diff",
    "-q -s -c -u -e -n -y -p -t -T -r -N -a -w -b -B -E -Z -i --brief --report-identical-files "
    "--normal --ed --rcs --side-by-side --left-column --suppress-common-lines --show-c-function "
    "--expand-tabs --initial-tab --suppress-blank-empty --recursive --no-dereference --new-file "
    "--unidirectional-new-file --ignore-file-name-case --no-ignore-file-name-case --text "
    "--strip-trailing-cr --ignore-case --ignore-tab-expansion --ignore-trailing-space "
    "--ignore-space-change --ignore-all-space --ignore-blank-lines --minimal --speed-large-files " + _GNU,
    {
        "-C": "int",
        "-U": "int",
        "-W": "int",
        "-x": "text",
        "-X": "path",
        "-I": "text",
        "-S": "text",
        "-F": "text",
        "--exclude": "text",
        "--exclude-from": "path",
        "--ignore-matching-lines": "text",
        "--label": "text",
        "--width": "int",
        "--starting-file": "text",
        "--show-function-line": "text",
        "--tabsize": "int",
        "--horizon-lines": "int",
        "--line-format": "text",
    },
    optional={"--unified": "int", "--context": "int", "--color": "text", "--palette": "text"},
    denied={
        "--from-file": "compares against arbitrary files",
        "--to-file": "compares against arbitrary files",
        "-l": "runs pr as a pager",
        "--paginate": "runs pr as a pager",
    },
)
NL = spec(
    "nl",
    "-p --no-renumber " + _GNU,
    {
        "-b": "text",
        "-n": "text",
        "-s": "text",
        "-v": "int",
        "-w": "int",
        "-i": "int",
        "-d": "text",
        "--body-numbering": "text",
        "--number-format": "text",
        "--number-separator": "text",
        "--starting-line-number": "int",
        "--number-width": "int",
        "--line-increment": "int",
    },
)
TAC = spec("tac", "-b -r --before --regex " + _GNU, {"-s": "text", "--separator": "text"})
NAMES = (
    "-a -e -f -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing "
    "--no-newline --quiet --silent --verbose --zero --logical --physical --strip --no-symlinks "
)
REALPATH = spec("realpath", NAMES + _GNU, {"--relative-to": "path", "--relative-base": "path"})
READLINK = spec("readlink", NAMES + _GNU)
BASENAME = spec(
    "basename", "-a -z --multiple --zero " + _GNU, {"-s": "text", "--suffix": "text"}, positional="text"
)
DIRNAME = spec("dirname", "-z --zero " + _GNU, positional="text")
UNAME = spec(
    "uname",
    "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version "
    "--machine --processor --hardware-platform --operating-system " + _GNU,
    positional=no_operands,
)
HOSTNAME = spec(
    "hostname",
    "-f -s -i -I -d -A -a --fqdn --long --short --ip-address --all-ip-addresses --domain "
    "--all-fqdns --alias --help --version",
    positional=no_operands,  # `hostname NAME` sets the host name
    denied={
        "-F": "sets the host name from a file",
        "--file": "sets the host name from a file",
        "-b": "sets the host name",
        "--boot": "sets the host name",
    },
)
WHOAMI = spec("whoami", _GNU, positional=no_operands)
ID = spec(
    "id",
    "-u -g -G -n -r -z --user --group --groups --name --real --zero " + _GNU,
    positional="text",
    max_positional=1,
)
PWD = spec("pwd", "-L -P", positional=no_operands, abbrev=False)
WHICH = spec("which", "-a", positional="text", abbrev=False)
TRUE = spec("true", positional="text")
FALSE = spec("false", positional="text")


def _date_operand(value: str) -> None:
    if not value.startswith("+"):
        raise Deny(
            "date.set",
            "`date` with an operand other than `+FORMAT` sets the clock",
            "use `date +FORMAT` to display a date",
        )


DATE = spec(
    "date",
    "-u -R -I --utc --universal --rfc-email --debug " + _GNU,
    {"-d": "text", "--date": "text", "-r": "path", "--reference": "path", "-f": "path", "--file": "path"},
    optional={"--iso-8601": "text", "--rfc-3339": "text"},
    positional=_date_operand,
    max_positional=1,
    denied={"-s": "sets the system clock", "--set": "sets the system clock"},
)


def _diff(args: Sequence[str], mode: Mode) -> Parsed:
    """GNU diff follows symlinks while recursing unless told not to."""
    parsed = parse_args(args, DIFF)
    if {"-r", "--recursive"} & set(parsed.options) and "--no-dereference" not in parsed.options:
        raise Deny(
            "flag.denied",
            "`diff -r` follows symbolic links, which can lead out of the workspace",
            "add --no-dereference: `diff -r --no-dereference A B`",
        )
    return parsed


def _tail(args: Sequence[str], mode: Mode) -> Parsed:
    """`tail +1f FILE` is the obsolete form of `tail -n +1 -f FILE`: it follows the file forever."""
    parsed = parse_args(args, TAIL)
    if parsed.positionals and parsed.positionals[0].startswith("+"):
        raise Deny(
            "flag.denied",
            f"`tail {parsed.positionals[0]}` is the obsolete `+N` form, which may follow the file forever",
            "write `tail -n +N FILE`",
        )
    return parsed


def _echo(args: Sequence[str], mode: Mode) -> Parsed:
    """Every argument of echo is text (bash's builtin knows only -n -e -E and never fails)."""
    return Parsed(positionals=list(args))


def _date(args: Sequence[str], mode: Mode) -> Parsed:
    # `-I` takes an optional *attached* value (`-Iseconds`); handle it before the generic parser.
    return parse_args(
        [a if not a.startswith("-I") or a == "-I" else "--iso-8601=" + a[2:] for a in args], DATE
    )


FILE_PROGRAMS: tuple[Program, ...] = (
    *(
        simple(s, "list, read or inspect files")
        for s in (
            LS,
            CAT,
            HEAD,
            WC,
            FILE,
            STAT,
            DU,
            DF,
            TREE,
            SORT,
            UNIQ,
            CUT,
            TR,
            NL,
            TAC,
            REALPATH,
            READLINK,
            BASENAME,
            DIRNAME,
            UNAME,
            HOSTNAME,
            WHOAMI,
            ID,
            PWD,
            WHICH,
            TRUE,
            FALSE,
        )
    ),
    Program("diff", frozenset({"read", "command"}), _diff, "compare files"),
    Program("tail", frozenset({"read", "command"}), _tail, "list, read or inspect files"),
    Program("echo", frozenset({"read", "command"}), _echo, "print text"),
    Program("date", frozenset({"read", "command"}), _date, "display the date"),
)
