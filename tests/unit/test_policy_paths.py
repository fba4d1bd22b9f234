"""Path rules against real directories: symlinks, `..`, `~`, absolute paths, globs, protected files.

Every case builds a real tree in a temp dir (with real symlinks) — the escapes we test are
filesystem facts, not strings.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.core.policy import (
    PolicySettings,
    check_path,
    decide,
    decide_argv,
    is_protected,
    protected_write_paths,
)
from tether.core.policy.paths import _resolve

SETTINGS = PolicySettings()


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """/ws (the workspace), /ws-evil (a sibling sharing the prefix), /outside with a secret."""
    ws = tmp_path / "ws"
    evil = tmp_path / "ws-evil"
    outside = tmp_path / "outside"
    for d in (ws / "src", evil, outside, ws / ".git" / "hooks"):
        d.mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (evil / "x.txt").write_text("x\n")
    (ws / "src" / "app.py").write_text("print()\n")
    os.symlink(outside, ws / "link_out")  # directory symlink leaving the workspace
    os.symlink(outside / "secret.txt", ws / "secret_link")  # file symlink leaving it
    os.symlink(ws / "src", ws / "link_in")  # symlink staying inside
    os.symlink(ws / ".git", ws / "gitlink")  # innocent-looking name for .git
    os.symlink(outside / "new.txt", ws / "dangling_out")  # dangling, pointing outside
    return {"ws": ws, "evil": evil, "outside": outside}


@pytest.mark.parametrize(
    ("raw", "ok", "rule"),
    [
        ("src/app.py", True, "allowed"),
        ("./src/../src/app.py", True, "allowed"),
        ("link_in/app.py", True, "allowed"),
        ("new/file.txt", True, "allowed"),  # need not exist
        ("..", False, "path.outside_workspace"),
        ("../ws-evil/x.txt", False, "path.outside_workspace"),
        ("src/../../outside/secret.txt", False, "path.outside_workspace"),
        ("link_out/secret.txt", False, "path.outside_workspace"),
        ("secret_link", False, "path.outside_workspace"),
        ("dangling_out", False, "path.outside_workspace"),
        ("/etc/passwd", False, "path.outside_workspace"),
        ("~/x", False, "path.outside_workspace"),
        ("~root/x", False, "path.tilde"),
        ("a\0b", False, "path.nul"),
        ("", False, "path.empty"),
    ],
)
def test_check_path_read(tree: dict[str, Path], raw: str, ok: bool, rule: str) -> None:
    result = check_path(raw, tree["ws"], write=False, settings=SETTINGS)
    assert (result.ok, result.rule) == (ok, rule), result.reason
    if ok:
        assert result.path is not None
        assert result.path.is_relative_to(tree["ws"].resolve())


def test_prefix_sibling_is_not_inside(tree: dict[str, Path]) -> None:
    """`/…/ws-evil` starts with the string `/…/ws` but is not inside it."""
    result = check_path(str(tree["evil"] / "x.txt"), tree["ws"], write=False, settings=SETTINGS)
    assert (result.ok, result.rule) == (False, "path.outside_workspace")
    assert not decide(f"cat {tree['evil'] / 'x.txt'}", "read", tree["ws"], SETTINGS).allowed


def test_absolute_path_inside_is_fine(tree: dict[str, Path]) -> None:
    assert check_path(str(tree["ws"] / "src" / "app.py"), tree["ws"], write=False, settings=SETTINGS).ok


def test_workspace_given_through_a_symlink(tree: dict[str, Path], tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(tree["ws"], alias)
    assert check_path("src/app.py", alias, write=False, settings=SETTINGS).ok
    assert not check_path("../outside/secret.txt", alias, write=False, settings=SETTINGS).ok


@pytest.mark.parametrize(
    "raw",
    [
        ".git/hooks/pre-commit",
        ".git/config",
        "gitlink/hooks/pre-commit",  # a symlink to .git: the real path is protected
        "sub/.git",
        ".GIT/config",
        ".gitattributes",
        "pkg/.gitattributes",
        ".gitmodules",
        ".tether/config.toml",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        ".claude/settings.json",
        ".mcp.json",
        ".envrc",
        ".npmrc",
        ".yarnrc.yml",
        ".pypirc",
        "pip.conf",
        ".pre-commit-config.yaml",
        ".bashrc",
        ".zshrc",
        ".profile",
        "node_modules/.bin/jest",
        "web/node_modules/.bin/vite",
        ".cargo/config.toml",
        ".husky/pre-commit",
        "rust-toolchain.toml",  # `path = …` picks the binary even for `cargo --version`
        ".tool-versions",
        "mise.toml",
        "mise.production.toml",
        ".config/mise.toml",
        ".config/mise/config.toml",
        ".config/mise/conf.d/tasks.toml",
        "mise/config.toml",
        "app/.mise/config.local.toml",
        ".python-version",
        ".devcontainer/devcontainer.json",
        ".",
    ],
)
def test_protected_paths_are_never_write_targets(tree: dict[str, Path], raw: str) -> None:
    result = check_path(raw, tree["ws"], write=True, settings=SETTINGS)
    if raw in (".npmrc", ".pypirc"):  # they hold registry tokens too: secret, not even readable
        assert (result.ok, result.rule) == (False, "path.secret"), result.reason
        assert not check_path(raw, tree["ws"], write=False, settings=SETTINGS).ok
        return
    assert (result.ok, result.rule) == (False, "path.protected"), result.reason
    assert check_path(raw, tree["ws"], write=False, settings=SETTINGS).ok  # reading is fine


def test_ordinary_files_are_writable(tree: dict[str, Path]) -> None:
    for raw in (
        "out.txt",
        "src/app.py",
        "docs/gitattributes.md",
        "node_modules/x/index.js",
        "git/config",
        "mise/notes.md",  # mise reads TOML there only
        ".config/other.toml",
    ):
        assert check_path(raw, tree["ws"], write=True, settings=SETTINGS).ok, raw


def test_extra_protected_globs(tree: dict[str, Path]) -> None:
    settings = PolicySettings(extra_protected=("secrets/", "*.pem", "deploy/*.yaml"))
    assert is_protected("secrets/db.txt", settings)
    assert is_protected("server.pem", settings)
    assert is_protected("certs/server.pem", settings)  # fnmatch's `*` also crosses `/`: broader is safer
    assert is_protected("deploy/prod.yaml", settings)
    assert not is_protected("src/app.py", settings)
    result = check_path("secrets/x", tree["ws"], write=True, settings=settings)
    assert result.rule == "path.protected"


def test_protected_write_paths_lists_absolute_workspace_paths(tree: dict[str, Path]) -> None:
    settings = PolicySettings(extra_protected=("secrets", "*.pem"))
    paths = protected_write_paths(tree["ws"], settings)
    root = tree["ws"].resolve()
    assert all(p.is_absolute() and p.is_relative_to(root) for p in paths)
    for name in (".git", ".tether", ".vscode", ".envrc", ".gitattributes", "secrets"):
        assert root / name in paths
    assert root / "node_modules" / ".bin" in paths
    assert root / "mise" in paths
    assert root / ".config" / "mise" not in paths  # no `.config`: no placeholder standing for it
    (root / ".config").mkdir()
    assert root / ".config" / "mise" in protected_write_paths(tree["ws"], settings)
    assert not any("*" in str(p) for p in paths)


# --- paths inside commands -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "mode", "rule"),
    [
        ("cat link_out/secret.txt", "read", "path.outside_workspace"),
        ("cat secret_link", "read", "path.outside_workspace"),
        ("head -5 link_out/secret.txt", "read", "path.outside_workspace"),
        ("grep -r secret link_out", "read", "path.outside_workspace"),
        ("grep -R secret .", "read", "flag.denied"),  # would recurse into link_out
        ("grep -r secret .", "read", "allowed"),  # -r skips symlinks found while recursing
        ("rg --follow secret", "read", "flag.denied"),
        ("find -L . -name secret.txt", "read", "flag.denied"),
        ("ls link_out/", "read", "path.outside_workspace"),
        ("cat lin*/secret.txt", "read", "path.outside_workspace"),  # glob through the symlink
        ("cat link_[a-z]ut/secret.txt", "read", "path.outside_workspace"),  # bracket glob
        ("cat link_[!x]ut/secret.txt", "read", "path.outside_workspace"),  # bash-only bracket syntax
        ("cat link_[^x]ut/secret.txt", "read", "path.outside_workspace"),
        ("cat s?cret_link", "read", "path.outside_workspace"),
        ("cat */secret.txt", "read", "path.outside_workspace"),
        ("cat .*/secret.txt", "read", "path.glob_dots"),
        ("cat ../ws-evil/x.txt", "read", "path.outside_workspace"),
        ("echo x > link_out/new.txt", "command", "path.outside_workspace"),
        ("echo x > dangling_out", "command", "path.outside_workspace"),
        ("echo x > gitlink/hooks/pre-commit", "command", "path.protected"),
        ("echo x >> .git/config", "command", "path.protected"),
        ("ls 2> .envrc", "command", "path.protected"),
        ("ls &> .vscode/settings.json", "command", "path.protected"),
        ("cat < link_out/secret.txt", "command", "path.outside_workspace"),
        ("git -C link_out log", "read", "path.outside_workspace"),
        ("cat src/app.py", "read", "allowed"),
        ("cat link_in/app.py", "read", "allowed"),
        ("cat src/*.py", "read", "allowed"),
        ("echo x > src/out.txt", "command", "allowed"),
        ("cat < src/app.py", "read", "allowed"),
        ("ls > /dev/null 2>&1", "read", "allowed"),
        ("ls > out.txt", "read", "mode.read"),
        ("ls 2> err.txt", "read", "mode.read"),
    ],
)
def test_paths_in_commands(tree: dict[str, Path], command: str, mode: str, rule: str) -> None:
    decision = decide(command, mode, tree["ws"], SETTINGS)  # type: ignore[arg-type]
    assert decision.rule == rule, decision.reason
    assert decision.allowed is (rule == "allowed")


def test_glob_matching_a_file_named_like_an_option_is_checked_as_that_option(tmp_path: Path) -> None:
    """An agent-written file called `--pre=sh` must not turn `rg x *` into `rg x --pre=sh`."""
    ws = tmp_path / "clean"
    ws.mkdir()
    (ws / "notes.txt").write_text("")
    assert decide("rg x *", "read", ws, SETTINGS).allowed
    (ws / "--pre=sh").write_text("")
    decision = decide("rg x *", "read", ws, SETTINGS)
    assert (decision.allowed, decision.rule) == (False, "flag.denied")
    (ws / "--pre=sh").unlink()
    (ws / "-delete").write_text("")
    assert decide("find . -name x *", "read", ws, SETTINGS).rule == "flag.denied"


def test_tilde_inside_workspace_home(tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tree["ws"]))
    assert decide("cat ~/src/app.py", "read", tree["ws"], SETTINGS).allowed
    monkeypatch.setenv("HOME", str(tree["outside"]))
    decision = decide("cat ~/secret.txt", "read", tree["ws"], SETTINGS)
    assert decision.rule == "path.outside_workspace"


def test_git_refuses_a_directory_shaped_like_a_bare_repository(tree: dict[str, Path]) -> None:
    """An agent can write HEAD, objects/, refs/ and config; git would obey that config."""
    trap = tree["ws"] / "trap"
    (trap / "objects").mkdir(parents=True)
    (trap / "refs").mkdir()
    (trap / "HEAD").write_text("ref: refs/heads/main\n")
    (trap / "config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    assert decide("git -C trap status", "read", tree["ws"], SETTINGS).rule == "git.bare_repository"
    assert decide("git -C trap/refs log", "read", tree["ws"], SETTINGS).rule == "git.bare_repository"
    assert decide("git -C src status", "read", tree["ws"], SETTINGS).allowed  # ws has .git


@pytest.mark.parametrize(
    ("selector", "content", "command", "runs_theirs"),
    [
        ("rust-toolchain.toml", '[toolchain]\npath = "/proc/self/cwd/tools"\n', "cargo --version", True),
        ("rust-toolchain.toml", '[toolchain]\npath = "/proc/self/cwd/tools"\n', "rustc -V", True),
        ("rust-toolchain.toml", '[toolchain]\nchannel = "1.80"\n', "cargo --version", False),
        ("rust-toolchain.toml", '[toolchain]\npath = "/x"\n', "python3 --version", False),  # not rust's
        ("rust-toolchain", "/proc/self/cwd/tools\n", "cargo --version", True),
        ("rust-toolchain", '[toolchain]\npath = "\\u002Fproc\\u002Fx"\n', "cargo --version", True),
        ("rust-toolchain", "nightly-2024-05-01\n", "cargo --version", False),
        # however TOML spells it
        ("rust-toolchain.toml", 'toolchain.path = "/proc/self/cwd/tools"\n', "cargo --version", True),
        ("rust-toolchain.toml", '[toolchain]\n"path" = "/x"\n', "cargo --version", True),
        ("rust-toolchain.toml", 'toolchain = { path = "/x" }\n', "cargo --version", True),
        ("rust-toolchain.toml", "[toolchain\n", "cargo --version", True),  # unparsable: unknown
        ("rust-toolchain.toml", '[toolchain]\nchannel = "1.80"\n' + "#" * 5000, "cargo -V", True),
        ("mise.ci.toml", '[env]\n_.source = "./evil.sh"\n', "node --version", True),
        ("mise/config.toml", "[tools]\nnode = '20'\n", "node --version", True),
        (".config/mise/config.toml", "[tools]\nnode = '20'\n", "node --version", True),
        (".config/mise/conf.d/evil.toml", '[env]\n_.source = "./x.sh"\n', "python3 --version", True),
        (".config/mise.local.toml", '[env]\n_.source = "./x.sh"\n', "python3 --version", True),
        (".mise/config.dev.toml", '[env]\n_.source = "./x.sh"\n', "python3 --version", True),
        (".tool-versions", "python path:./tools/py\n", "python3 --version", True),
        (".tool-versions", "nodejs ref:v20.0.0\n", "node --version", True),
        (".tool-versions", "python 3.12.1\nnodejs 20.1.0\n", "python3 --version", False),
        ("mise.toml", '[env]\n_.source = "./evil.sh"\n', "go version", True),
        (".python-version", "../../../tmp/evil\n", "python3 --version", True),
        (".python-version", "3.11.7\n", "python3 --version", False),
        (".nvmrc", "lts/iron\n", "node --version", False),
        (".nvmrc", "./node\n", "node --version", True),
    ],
)
def test_read_mode_refuses_a_toolchain_the_repository_chooses(
    tree: dict[str, Path], selector: str, content: str, command: str, runs_theirs: bool
) -> None:
    """`cargo --version` with a rust-toolchain.toml naming `path = …` runs the repository's program
    (rustup, asdf, mise and pyenv read these first): read mode refuses it, command mode
    (sandboxed) allows it, and one in a subfolder counts when the command runs there."""
    ws = tree["ws"]
    (ws / "sub").mkdir(exist_ok=True)
    (ws / selector).parent.mkdir(parents=True, exist_ok=True)
    (ws / selector).write_text(content)
    decision = decide(command, "read", ws, SETTINGS)
    assert decision.allowed is not runs_theirs, decision.reason
    if runs_theirs:
        assert decision.rule == "command.toolchain"
        assert selector.partition("/")[0] in decision.reason  # the file, or the mise folder holding it
        assert decide(command, "read", ws, SETTINGS, cwd=Path("sub")).rule == "command.toolchain"
        assert decide(command, "command", ws, SETTINGS).allowed


def test_a_selector_at_the_top_of_the_repository_above_the_workspace_counts(tmp_path: Path) -> None:
    """A workspace that is a folder of a cloned repository: rustup walks up to the repository's
    `rust-toolchain.toml`. Folders above the repository (your own) are not looked at."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "app").mkdir()
    (repo / "rust-toolchain.toml").write_text('[toolchain]\npath = "/proc/self/cwd/../tools"\n')
    assert decide("cargo --version", "read", repo / "app", SETTINGS).rule == "command.toolchain"
    (repo / "rust-toolchain.toml").unlink()
    (tmp_path / "rust-toolchain.toml").write_text('[toolchain]\npath = "/x"\n')  # above the repository
    assert decide("cargo --version", "read", repo / "app", SETTINGS).allowed


def test_a_selector_that_cannot_be_read_counts_as_naming_a_program(tree: dict[str, Path]) -> None:
    os.mkfifo(tree["ws"] / ".python-version")  # never waited for
    assert decide("python3 --version", "read", tree["ws"], SETTINGS).rule == "command.toolchain"


def test_decide_argv_checks_paths_literally(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    assert decide_argv(["cat", "src/app.py"], "read", ws, SETTINGS).allowed
    assert decide_argv(["cat", "link_out/secret.txt"], "read", ws, SETTINGS).rule == "path.outside_workspace"
    decision = decide_argv(["cat", "*.py"], "read", ws, SETTINGS)  # exec'd directly: no glob
    assert decision.allowed
    assert decision.needs_shell is False
    assert decide_argv(["./rm", "x"], "command", ws, SETTINGS).rule == "command.name_chars"
    assert decide_argv(["cat", "a\0b"], "read", ws, SETTINGS).rule == "input.control_char"
    assert decide_argv([], "read", ws, SETTINGS).rule == "input.invalid"


# --- the fast resolver must agree with os.path.realpath --------------------------------------

COMPONENTS = ["a", "b", "lo", "la", "rel", "up", "..", ".", "missing", "f", ""]


@pytest.fixture(scope="module")
def resolver_tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = os.path.realpath(tmp_path_factory.mktemp("resolver"))
    outside = tmp_path_factory.mktemp("resolver_out")
    os.makedirs(f"{root}/a/b")
    os.symlink(outside, f"{root}/lo")
    os.symlink(f"{root}/a", f"{root}/la")
    os.symlink("b", f"{root}/a/rel")
    os.symlink("../..", f"{root}/a/up")
    Path(f"{root}/a/f").write_text("")
    return root


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6))
def test_resolve_matches_realpath(resolver_tree: str, parts: list[str]) -> None:
    rel = "/".join(parts)
    assert _resolve(resolver_tree, rel) == os.path.realpath(os.path.join(resolver_tree, rel))


# --- commands run in a subdirectory ----------------------------------------------------------


def test_relative_paths_resolve_against_the_working_directory(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    (ws / "sub").mkdir()
    os.symlink(tree["outside"], ws / "sub" / "lnk")
    # From the root, `lnk/secret.txt` does not exist (inside); from sub/ it leaves the workspace.
    assert decide("cat lnk/secret.txt", "read", ws, SETTINGS).allowed
    denied = decide("cat lnk/secret.txt", "read", ws, SETTINGS, cwd=ws / "sub")
    assert denied.rule == "path.outside_workspace"
    # A command running inside .git must not write hooks through a relative name.
    hooks = decide("echo x > hooks/pre-commit", "command", ws, SETTINGS, cwd=ws / ".git")
    assert hooks.rule == "path.protected"
    assert decide("cat ../src/app.py", "read", ws, SETTINGS, cwd=ws / "sub").allowed
    assert decide("cat ../../x", "read", ws, SETTINGS, cwd=ws / "sub").rule == "path.outside_workspace"
    argv = decide_argv(["cat", "lnk/secret.txt"], "read", ws, SETTINGS, cwd=Path("sub"))
    assert argv.rule == "path.outside_workspace"


def test_working_directory_outside_the_workspace_is_denied(tree: dict[str, Path]) -> None:
    for cwd in (tree["outside"], tree["ws"] / "link_out", tree["evil"]):
        decision = decide("ls", "read", tree["ws"], SETTINGS, cwd=cwd)
        assert decision.rule == "path.outside_workspace"


def test_globs_expand_in_the_working_directory(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    (ws / "sub").mkdir()
    os.symlink(tree["outside"] / "secret.txt", ws / "sub" / "s_link")
    assert decide("cat s_*", "read", ws, SETTINGS).allowed  # nothing matches at the root
    assert decide("cat s_*", "read", ws, SETTINGS, cwd=ws / "sub").rule == "path.outside_workspace"


def test_glob_matching_too_many_files_is_denied(tmp_path: Path) -> None:
    for i in range(1001):
        (tmp_path / f"f{i}.txt").write_text("")
    assert decide("ls f1*.txt", "read", tmp_path, SETTINGS).allowed
    assert decide("ls *.txt", "read", tmp_path, SETTINGS).rule == "path.glob_too_many"


def test_user_allowed_commands_cannot_reach_outside_through_symlinks(tree: dict[str, Path]) -> None:
    settings = PolicySettings(extra_allowed=("rm",))
    ws = tree["ws"]
    assert decide("rm -f build.o", "command", ws, settings).allowed
    for command in ("rm link_out/secret.txt", "rm secret_link/", "rm --x=link_out/secret.txt", "rm ../x"):
        assert decide(command, "command", ws, settings).rule == "path.outside_workspace", command


@pytest.mark.parametrize(
    ("command", "mode", "rule"),
    [
        ("cd src && cat app.py", "read", "allowed"),
        ("cd src; cat app.py", "read", "allowed"),
        # Known conservative denial: after `cd`, the old directory stays possible, and from the
        # workspace root `../x` is outside.
        ("cd src && cat ../README.md", "read", "path.outside_workspace"),
        ("cd .git && echo x > hooks/pre-commit", "command", "path.protected"),
        ("cd gitlink && echo x > hooks/pre-commit", "command", "path.protected"),
        ("cd link_out && cat secret.txt", "read", "path.outside_workspace"),
        ("cd .. && ls", "read", "path.outside_workspace"),
        ("cd src && cd .. && cd .. && ls", "read", "path.outside_workspace"),
        ("cd src && cat ../../outside/secret.txt", "read", "path.outside_workspace"),
        # `cd` may fail, so what follows `;` is also checked from the old directory
        ("cd nowhere; cat secret_link", "read", "path.outside_workspace"),
        ("cd", "read", "command.cd"),
        ("cd -", "read", "command.cd"),
        ("cd ~", "read", "path.outside_workspace"),
        ("cd -P src", "read", "command.cd"),
        ("cd s* && ls", "read", "command.cd"),
        ("ls && echo x > .envrc", "command", "path.protected"),  # redirect binds to `echo`
        ("ls | wc -l > .git/x", "command", "path.protected"),
    ],
)
def test_cd_and_redirects_after_lists(tree: dict[str, Path], command: str, mode: str, rule: str) -> None:
    decision = decide(command, mode, tree["ws"], SETTINGS)  # type: ignore[arg-type]
    assert decision.rule == rule, decision.reason


def test_git_dash_c_accumulates_like_git(tree: dict[str, Path]) -> None:
    """`git -C a -C b` runs in a/b; the subcommand's paths are relative to it."""
    ws = tree["ws"]
    os.symlink(tree["outside"], ws / "src" / "lnk")
    assert decide("git -C src -C lnk log", "read", ws, SETTINGS).rule == "path.outside_workspace"
    assert decide("git -C src -C .. status", "read", ws, SETTINGS).allowed
    assert decide("git -C src -C ../.. status", "read", ws, SETTINGS).rule == "path.outside_workspace"
    blame = decide("git -C src blame --contents lnk/secret.txt app.py", "read", ws, SETTINGS)
    assert blame.rule == "path.outside_workspace"
