"""Project tools for command mode (seed whitelist): go, pytest, npm test, cargo; version queries.

These run the project's own code, which only the sandbox can contain; the schemas here keep the
*tool* from being turned into something else: no `go generate`, `go env -w`, `go mod edit`,
`-toolexec`/`-exec`, linker overrides, pytest plugins loaded from the command line, `--basetemp`
(which deletes a directory), or cargo `--config`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from tether.core.policy.argspec import Kind, Parsed, check_value, parse_args, spec
from tether.core.policy.programs.base import READ_AND_COMMAND, Program, version_only
from tether.core.policy.types import Deny, Mode

# --- go --------------------------------------------------------------------------------------

_GO_BUILD_BOOL = frozenset(
    [
        "a",
        "n",
        "race",
        "msan",
        "asan",
        "cover",
        "v",
        "work",
        "x",
        "linkshared",
        "modcacherw",
        "trimpath",
        "json",
        "buildvcs",
    ]
)
_GO_BUILD_VALUED: dict[str, Kind] = {
    "p": "int",
    "coverpkg": "text",
    "covermode": "text",
    "mod": "text",
    "modfile": "path",
    "tags": "text",
    "pgo": "text",
    "buildmode": "text",
    "C": "path",
    "o": "write",
    "buildvcs": "text",
    "asmflags": "text",
}
_GO_DENIED = {
    "toolexec": "runs a program around every tool",
    "exec": "runs the binary through a program",
    "gcflags": "passes arbitrary flags to the compiler",
    "gccgoflags": "passes flags to gccgo",
    "overlay": "replaces source files from a JSON map",
    "pkgdir": "writes packages elsewhere",
    "compiler": "selects another compiler",
    "vettool": "runs a program as the vet tool",
}
_GO_TEST_BOOL = frozenset(["short", "failfast", "benchmem", "c", "list-disabled"])
_GO_TEST_VALUED: dict[str, Kind] = {
    "run": "text",
    "skip": "text",
    "count": "int",
    "bench": "text",
    "benchtime": "text",
    "timeout": "text",
    "parallel": "int",
    "cpu": "text",
    "shuffle": "text",
    "list": "text",
    "vet": "text",
    "fuzz": "text",
    "fuzztime": "text",
    "fuzzminimizetime": "text",
    "coverprofile": "write",
    "blockprofile": "write",
    "cpuprofile": "write",
    "memprofile": "write",
    "mutexprofile": "write",
    "trace": "write",
    "outputdir": "write",
    "failfast": "text",
}
_LDFLAG_X_VALUE = re.compile(r"[A-Za-z0-9_./]+[A-Za-z0-9_./-]*=\S*\Z")


def _ldflags(value: str) -> None:
    """Only -s, -w and -X name=value: `-extld`/`-extldflags` would run another linker."""
    tokens = value.split()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token in ("-s", "-w"):
            continue
        if token.startswith("-X=") and _LDFLAG_X_VALUE.match(token[3:]):
            continue
        if token == "-X" and i < len(tokens) and _LDFLAG_X_VALUE.match(tokens[i]):
            i += 1
            continue
        raise Deny("go.ldflags", f"the linker flag {token!r} is not allowed (only -s, -w, -X name=value)")


def _go_flags(
    args: Sequence[str],
    bools: frozenset[str],
    valued: Mapping[str, Kind],
    what: str,
    parsed: Parsed,
    *,
    interleaved: bool = True,
) -> list[str]:
    """Go's flag syntax: `-name`, `--name`, `-name=value`, `-name value`; no clustering.

    `go test` and `go vet` also read flags *after* the package list (`go test ./... -exec x`), so
    by default every `-…` word is parsed as a flag wherever it stands; only `go run` stops at its
    first operand (the rest are the program's own arguments).
    """
    operands: list[str] = []
    i = 0
    sp = spec(what)
    while i < len(args):
        arg = args[i]
        i += 1
        if (operands and not interleaved) or not arg.startswith("-") or arg == "-":
            operands.append(arg)
            continue
        if arg in ("--", "-args") and what == "go test":
            operands.extend(args[i:])
            parsed.options.append("-args")
            return operands
        if arg == "--":
            operands.extend(args[i:])
            return operands
        name, eq, value = arg.lstrip("-").partition("=")
        if name in _GO_DENIED:
            raise Deny("flag.denied", f"`{what} -{name}` is not allowed: {_GO_DENIED[name]}")
        if name == "ldflags":
            if not eq:
                if i >= len(args):
                    raise Deny("flag.missing_value", f"`{what} -ldflags` needs a value")
                value = args[i]
                i += 1
            _ldflags(value)
            parsed.options.append("-ldflags")
            continue
        if name in bools and (not eq or value in ("true", "false")):
            parsed.options.append("-" + name)
            continue
        if name in valued:
            if not eq:
                if i >= len(args):
                    raise Deny("flag.missing_value", f"`{what} -{name}` needs a value")
                value = args[i]
                i += 1
            parsed.options.append("-" + name)
            parsed.values.append(("-" + name, value))
            check_value(parsed, sp, "-" + name, valued[name], value)
            continue
        raise Deny(
            "flag.unknown",
            f"the option `-{name}` of `{what}` is not in the allowed list",
            f"add `{what} -{name}` to command_whitelist in your user config if it is safe",
        )
    return operands


def _passthrough(args: Sequence[str], parsed: Parsed) -> None:
    """Arguments handed on to the program under test (`go test -args`, `npm test --`, `cargo test
    --`): it reads them as it likes (`-config=/etc/x`), so each one, and each `--opt=value`'s
    value, is checked as a path it might open; test names and filters resolve inside and pass."""
    for arg in args:
        parsed.positionals.append(arg)
        value = arg.partition("=")[2] if arg.startswith("-") else arg
        if value and value != "-":
            parsed.read_paths.append(value)


def _no_remote_module(operands: Sequence[str]) -> None:
    """`pkg@version` names a module to fetch (and, for `go run`, to run) from the network."""
    for op in operands:
        if "@" in op:
            raise Deny(
                "go.remote_module",
                f"`{op}` names a module by its remote path and version: go would fetch it (and "
                "`go run` run it)",
                "add the dependency to go.mod yourself; build and run the workspace's own packages",
            )


def _go_packages(operands: Sequence[str], parsed: Parsed) -> None:
    _no_remote_module(operands)
    for op in operands:
        parsed.positionals.append(op)
        if op.startswith((".", "/", "~")) or op.endswith(".go"):
            parsed.read_paths.append(op[:-4] if op.endswith("/...") else op)


_GO_MOD = {
    "tidy": (frozenset(["v", "e", "x", "diff"]), {"go": "text", "compat": "text"}),
    "download": (frozenset(["json", "x", "reuse"]), {}),
    "verify": (frozenset(), {}),
    "graph": (frozenset(["x"]), {"go": "text"}),
    "why": (frozenset(["m", "vendor"]), {}),
    "vendor": (frozenset(["v", "e"]), {"o": "write"}),
    "init": (frozenset(), {}),
}


def _go(args: Sequence[str], mode: Mode) -> Parsed:
    """`go -C dir` (which must come first) changes directory: the other paths are relative to it."""
    parsed = _go_subcommand(args, mode)
    cdir = next((v for o, v in parsed.values if o == "-C"), None)
    if cdir is not None and parsed.read_paths:
        first, *others = parsed.read_paths  # -C is the first flag, so its path came first
        parsed.read_paths = [first, *(_join(cdir, p) for p in others)]
        parsed.write_paths = [_join(cdir, p) for p in parsed.write_paths]
    return parsed


def _join(base: str, path: str) -> str:
    return path if path.startswith(("/", "~")) else posixpath.join(base, path)


def _go_subcommand(args: Sequence[str], mode: Mode) -> Parsed:
    parsed = Parsed()
    if not args:
        raise Deny("go.subcommand", "a go subcommand is needed")
    sub, rest = args[0], args[1:]
    if sub == "version":
        ops = _go_flags(rest, frozenset({"m", "v", "json"}), {}, "go version", parsed)
        _go_packages(ops, parsed)
        return parsed
    if sub == "env":
        if any(a.lstrip("-").partition("=")[0] in ("w", "u") for a in rest if a.startswith("-")):
            raise Deny(
                "flag.denied", "`go env -w/-u` changes the go environment file (GOFLAGS can add -toolexec)"
            )
        ops = _go_flags(rest, frozenset({"json", "changed"}), {}, "go env", parsed)
        parsed.positionals.extend(ops)  # variable names
        return parsed
    if mode == "read":
        raise Deny(
            "mode.read",
            f"`go {sub}` builds or runs code; read mode allows only `go version`/`go env`",
            "ask for command permission to build or test",
        )
    if sub in ("build", "vet", "list", "run"):
        extra_bool = (
            frozenset({"m", "e", "deps", "test", "u", "versions", "retracted", "compiled", "find", "export"})
            if sub == "list"
            else frozenset()
        )
        extra_val: dict[str, Kind] = {"f": "text", "reuse": "path"} if sub == "list" else {}
        ops = _go_flags(
            rest,
            _GO_BUILD_BOOL | extra_bool,
            {**_GO_BUILD_VALUED, **extra_val},
            f"go {sub}",
            parsed,
            interleaved=sub != "run",
        )
        if sub == "run":  # go run [flags] package|files... [program arguments]
            files = [op for op in ops if op.endswith(".go")]
            _go_packages(files or ops[:1], parsed)
            _passthrough(ops[len(files or ops[:1]) :], parsed)
        else:
            _go_packages(ops, parsed)
        return parsed
    if sub == "test":
        ops = _go_flags(
            rest, _GO_BUILD_BOOL | _GO_TEST_BOOL, {**_GO_BUILD_VALUED, **_GO_TEST_VALUED}, "go test", parsed
        )
        if "-args" in parsed.options:
            _passthrough(ops, parsed)  # everything after -args goes to the test binary
        else:
            _go_packages(ops, parsed)
        return parsed
    if sub == "mod":
        if not rest or rest[0] not in _GO_MOD:
            raise Deny(
                "go.subcommand",
                f"`go mod {rest[0] if rest else ''}` is not allowed (allowed: {', '.join(_GO_MOD)})",
            )
        bools, valued = _GO_MOD[rest[0]]
        ops = _go_flags(rest[1:], bools, valued, f"go mod {rest[0]}", parsed)
        _no_remote_module(ops)
        parsed.positionals.extend(ops)  # module paths / package patterns, not files
        return parsed
    reasons = {
        "generate": "runs commands written in source comments",
        "get": "changes dependencies",
        "install": "writes outside the workspace",
        "tool": "runs arbitrary tools",
        "clean": "deletes caches",
        "work": "changes the workspace file",
        "fix": "rewrites files",
    }
    raise Deny(
        "go.subcommand",
        f"`go {sub}` is not allowed" + (f": it {reasons[sub]}" if sub in reasons else ""),
        "allowed: go build, test, run, vet, list, mod tidy|download|verify|graph|why|vendor|init, "
        "version, env",
    )


# --- pytest ----------------------------------------------------------------------------------


def _cov_report(value: str) -> None:
    kind, _, target = value.partition(":")
    if kind not in ("term", "term-missing", "annotate", "html", "xml", "json", "lcov", "markdown"):
        raise Deny("flag.value", f"unknown --cov-report type {kind!r}")
    if target:
        raise Deny("flag.value", "--cov-report with an output path is not allowed", "use --cov-report=term")


PYTEST = spec(
    "pytest",
    "-x -q -v -s -l --exitfirst --quiet --verbose --showlocals --lf --last-failed --ff --failed-first "
    "--nf --new-first --sw --stepwise --stepwise-skip --co --collect-only --no-header --no-summary "
    "--strict-markers --strict-config --disable-warnings --disable-pytest-warnings --runxfail "
    "--continue-on-collection-errors --doctest-modules --fixtures --markers --setup-show "
    "--setup-plan --setup-only --pyargs --cache-show --version -V --help -h --full-trace "
    "--no-cov --cov-fail-under-disabled -ra -rA",
    {
        "-k": "text",
        "-m": "text",
        "-r": "text",
        "-n": "text",
        "-W": "text",
        "--tb": "text",
        "--maxfail": "int",
        "--durations": "int",
        "--durations-min": "text",
        "--timeout": "text",
        "--cov-report": _cov_report,
        "--cov-fail-under": "text",
        "--junitxml": "write",
        "--junit-xml": "write",
        "--rootdir": "path",
        "--confcutdir": "path",
        "--import-mode": "text",
        "--capture": "text",
        "--deselect": "text",
        "--ignore": "path",
        "--ignore-glob": "text",
        "--asyncio-mode": "text",
        "--log-level": "text",
        "--log-cli-level": "text",
        "--color": "text",
        "--dist": "text",
        "--count": "int",
        "--random-order-seed": "text",
        "--verbosity": "int",
        "--maxprocesses": "int",
        "--code-highlight": "text",
        "--doctest-glob": "text",
    },
    optional={"--cov": "path"},
    positional="nodeid",
    abbrev=False,
    denied={
        "-p": "loads a plugin module by name",
        "-c": "reads configuration from another file",
        "--config-file": "reads configuration from another file",
        "-o": "overrides ini options (addopts, …)",
        "--override-ini": "overrides ini options",
        "--basetemp": "deletes and recreates that directory",
        "--pdb": "is interactive",
        "--trace": "is interactive",
        "--pdbcls": "loads a class by name",
        "--debug": "writes a log file",
        "--log-file": "writes a log file",
        "--resultlog": "writes a file",
        "--cache-clear": "deletes the cache",
        "--lsof": "runs lsof",
    },
)


def _pytest(args: Sequence[str], mode: Mode) -> Parsed:
    if mode == "read" and list(args) not in (["--version"], ["-V"]):
        raise Deny("mode.read", "running tests needs command mode", "ask for command permission")
    # pytest's `-ra`/`-rA` are -r with an attached value; the Spec handles `-r` valued already.
    return parse_args(args, PYTEST)


def _python(name: str) -> Program:
    def check(args: Sequence[str], mode: Mode) -> Parsed:
        if list(args) in (["--version"], ["-V"], ["-VV"]):
            return Parsed(options=list(args))
        if len(args) >= 2 and args[0] == "-m" and args[1] == "pytest":
            return _pytest(args[2:], mode)
        if "-c" in args or (args and args[0].startswith("-c")):
            raise Deny(
                "command.interpreter",
                f"`{name} -c` runs an inline script",
                "write the code to a file under tests/ and run it with pytest",
                program=name,
            )
        raise Deny(
            "command.interpreter",
            f"`{name}` may only run `-m pytest` or print its version",
            f"add `{name} …` to command_whitelist in your user config to allow more",
            program=name,
        )

    return Program(name, READ_AND_COMMAND, check, "`-m pytest` (command mode), `--version`")


# --- npm, cargo ------------------------------------------------------------------------------


def _npm(args: Sequence[str], mode: Mode) -> Parsed:
    a = list(args)
    if a in (["--version"], ["-v"]):
        return Parsed(options=a)
    head, _sep, tail = (a[: a.index("--")], True, a[a.index("--") + 1 :]) if "--" in a else (a, False, [])
    if head in (["test"], ["t"], ["run", "test"], ["run-script", "test"]):
        if mode == "read":
            raise Deny("mode.read", "running tests needs command mode", "ask for command permission")
        parsed = Parsed(options=head)
        _passthrough(tail, parsed)
        return parsed
    raise Deny(
        "command.npm",
        "only `npm test` (and `npm --version`) is allowed",
        "add the npm script, e.g. `npm run lint`, to command_whitelist in your user config",
        program="npm",
    )


_CARGO = spec(
    "cargo",
    "-q -v --quiet --verbose --release -r --lib --bins --tests --benches --doc --examples "
    "--all-targets --workspace --all --all-features --no-default-features --no-fail-fast --no-run "
    "--locked --offline --frozen --keep-going --future-incompat-report --ignore-rust-version",
    {
        "--bin": "text",
        "--test": "text",
        "--bench": "text",
        "--example": "text",
        "--exclude": "text",
        "-p": "text",
        "--package": "text",
        "--features": "text",
        "-F": "text",
        "-j": "int",
        "--jobs": "int",
        "--target": "text",
        "--target-dir": "write",
        "--profile": "text",
        "--color": "text",
        "--message-format": "text",
        "--manifest-path": "path",
    },
    optional={"--timings": "text"},
    positional="text",
    abbrev=False,
    denied={
        "--config": "sets configuration (runners, linkers)",
        "-Z": "unstable flags",
        "-C": "changes directory",
        "--lockfile-path": "writes a lock file elsewhere",
    },
)


def _cargo(args: Sequence[str], mode: Mode) -> Parsed:
    a = list(args)
    if a in (["--version"], ["-V"]):
        return Parsed(options=a)
    if not a or a[0] not in ("test", "build", "check"):
        raise Deny(
            "command.cargo",
            "only `cargo test`, `cargo build` and `cargo check` are allowed",
            "add other cargo commands to command_whitelist in your user config",
            program="cargo",
        )
    if mode == "read":
        raise Deny(
            "mode.read", f"`cargo {a[0]}` builds code; it needs command mode", "ask for command permission"
        )
    rest = a[1:]
    binary_args: list[str] = []
    if "--" in rest:
        cut = rest.index("--")
        rest, binary_args = rest[:cut], rest[cut + 1 :]
    parsed = parse_args(rest, _CARGO)
    _passthrough(binary_args, parsed)  # flags for the test binary (--nocapture, filters)
    return parsed


BUILD_PROGRAMS: tuple[Program, ...] = (
    Program("go", READ_AND_COMMAND, _go, "build|test|run|vet|list|mod (command mode); version, env"),
    Program("pytest", READ_AND_COMMAND, _pytest, "run tests (command mode)"),
    Program("npm", READ_AND_COMMAND, _npm, "`npm test` (command mode), `--version`"),
    Program("cargo", READ_AND_COMMAND, _cargo, "test|build|check (command mode), `--version`"),
    *(_python(n) for n in ("python", "python3", *(f"python3.{m}" for m in range(8, 15)))),
    version_only("node", "--version", "-v"),
    version_only("rustc", "--version", "-V"),
    version_only("make", "--version"),
    version_only("gcc", "--version"),
    version_only("clang", "--version"),
    version_only("cmake", "--version"),
    version_only("java", "--version", "-version"),
    version_only("pip", "--version", "-V"),
    version_only("pip3", "--version", "-V"),
    version_only("uv", "--version", "-V"),
    version_only("tsc", "--version", "-v"),
    version_only("deno", "--version", "-V"),
    version_only("bun", "--version", "-v"),
)
