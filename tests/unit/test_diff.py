"""The pure diff core: hunks, subsets, re-basing, ranges, renderings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.core import diff

BASE = "".join(f"line {i}\n" for i in range(1, 31))


def edit(text: str, replacements: dict[int, str]) -> str:
    lines = diff.split_lines(text)
    for number, new in replacements.items():
        lines[number - 1] = new
    return "".join(lines)


def test_split_lines_splits_on_newline_only() -> None:
    assert diff.split_lines("a\rb\x0cc\u2028d\ne\r\nf") == ["a\rb\x0cc\u2028d\n", "e\r\n", "f"]
    assert diff.split_lines("") == []
    assert diff.split_lines("x\n") == ["x\n"]


def test_two_distant_changes_make_two_hunks_with_exact_headers() -> None:
    new = edit(BASE, {3: "LINE 3\n", 20: "LINE 20\n"})
    hunks = diff.compute_hunks(BASE, new)
    assert [h.header for h in hunks] == ["@@ -1,6 +1,6 @@", "@@ -17,7 +17,7 @@"]
    assert hunks[0].removed == ["line 3\n"]
    assert hunks[0].added == ["LINE 3\n"]
    assert hunks[1].render() == (
        "@@ -17,7 +17,7 @@\n line 17\n line 18\n line 19\n-line 20\n+LINE 20\n line 21\n line 22\n line 23\n"
    )


def test_identical_texts_have_no_hunks() -> None:
    assert diff.compute_hunks(BASE, BASE) == []


def test_apply_subset_applies_only_those() -> None:
    new = edit(BASE, {3: "LINE 3\n", 20: "LINE 20\n"})
    first, second = diff.compute_hunks(BASE, new)
    assert diff.apply_hunks(BASE, [second]) == edit(BASE, {20: "LINE 20\n"})
    assert diff.apply_hunks(BASE, [first]) == edit(BASE, {3: "LINE 3\n"})
    assert diff.apply_hunks(BASE, [first, second]) == new


def test_rebase_onto_shifted_content() -> None:
    new = edit(BASE, {20: "LINE 20\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    moved = "inserted a\ninserted b\n" + BASE
    assert diff.apply_hunks(moved, [hunk]) == "inserted a\ninserted b\n" + new


def test_conflicting_change_raises() -> None:
    new = edit(BASE, {20: "LINE 20\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    changed = edit(BASE, {20: "someone else\n"})
    with pytest.raises(diff.HunkConflict, match="no longer in the file"):
        diff.apply_hunks(changed, [hunk])


def test_change_in_context_line_is_a_conflict() -> None:
    new = edit(BASE, {20: "LINE 20\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    with pytest.raises(diff.HunkConflict):
        diff.apply_hunks(edit(BASE, {18: "touched\n"}), [hunk])


def test_hunk_at_file_start_stays_anchored() -> None:
    new = edit(BASE, {1: "FIRST\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    assert hunk.anchored_start
    # Moved down by a preamble: its lines occur once, so it follows them.
    assert diff.apply_hunks("preamble\n" + BASE, [hunk]) == "preamble\n" + new
    # Its lines occur twice and neither at the start: no guessing.
    block = "".join(hunk.old_block)
    with pytest.raises(diff.HunkConflict):
        diff.apply_hunks("preamble\n" + block + "middle\n" + block, [hunk])


def test_create_from_empty_only_applies_to_empty() -> None:
    [hunk] = diff.compute_hunks("", "hello\n")
    assert hunk.header == "@@ -0,0 +1 @@"
    assert diff.apply_hunks("", [hunk]) == "hello\n"
    with pytest.raises(diff.HunkConflict):
        diff.apply_hunks("someone created it\n", [hunk])


def test_no_final_newline_round_trips() -> None:
    old, new = "a\nb\nc", "a\nb\nC"
    [hunk] = diff.compute_hunks(old, new)
    assert hunk.render() == (
        "@@ -1,3 +1,3 @@\n a\n b\n-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"
    )
    assert diff.apply_hunks(old, [hunk]) == new
    assert diff.parse_hunks(hunk.render()) == [hunk]


def test_crlf_lines_keep_carriage_returns() -> None:
    old = "a\r\nb\r\nc\r\n"
    new = "a\r\nB\r\nc\r\n"
    [hunk] = diff.compute_hunks(old, new)
    assert hunk.removed == ["b\r\n"]
    assert hunk.added == ["B\r\n"]
    assert diff.apply_hunks(old, [hunk]) == new


def test_changed_range_trims_context_and_handles_insertions() -> None:
    new = edit(BASE, {20: "LINE 20\nextra\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    [pos] = diff.locate(diff.split_lines(BASE), [hunk])
    assert diff.changed_range(hunk, pos).to_json() == {
        "start": {"line": 19, "character": 0},
        "end": {"line": 20, "character": 0},
    }
    insert = BASE.replace("line 10\n", "line 10\nnew\n")
    [ins] = diff.compute_hunks(BASE, insert)
    [pos] = diff.locate(diff.split_lines(BASE), [ins])
    rng = diff.changed_range(ins, pos)
    assert (rng.start_line, rng.end_line, rng.end_character) == (10, 10, 0)
    assert ins.removed == []
    assert ins.added == ["new\n"]


def test_changed_range_of_last_line_without_newline_counts_utf16() -> None:
    [hunk] = diff.compute_hunks("a\n\U0001f600x", "a\ny")
    rng = diff.changed_range(hunk, 0)
    assert rng.to_json() == {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}}


def test_interior_context_is_part_of_removed_and_added() -> None:
    new = edit(BASE, {10: "TEN\n", 12: "TWELVE\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    assert hunk.removed == ["line 10\n", "line 11\n", "line 12\n"]
    assert hunk.added == ["TEN\n", "line 11\n", "TWELVE\n"]


def test_render_dry_run_is_the_seed_form() -> None:
    hunks = diff.compute_hunks("x = 1\n", "x = 2\n")
    assert diff.render_dry_run("src/a.py", hunks) == (
        "=== src/a.py (dry-run) ===\n--- old\n+++ new\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
        "(dry-run: use --tool=write to apply)"
    )


def test_render_unified_colours_only_when_asked() -> None:
    hunks = diff.compute_hunks("x = 1\n", "x = 2\n")
    plain = diff.render_unified("a.py", hunks)
    assert plain == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    coloured = diff.render_unified("a.py", hunks, color=True)
    assert "\x1b[31m-x = 1\x1b[0m" in coloured
    assert "\x1b[32m+x = 2\x1b[0m" in coloured


def test_invert_finds_applied_hunk() -> None:
    new = edit(BASE, {20: "LINE 20\n"})
    [hunk] = diff.compute_hunks(BASE, new)
    assert diff.apply_hunks(new, [diff.invert(hunk)]) == BASE


def test_content_hash_distinguishes_line_endings() -> None:
    assert diff.content_hash("a\n") != diff.content_hash("a\r\n")
    assert diff.content_hash("a\n").startswith("sha256:")


_line = st.sampled_from(["a\n", "b\n", "c\n", "d\r\n", "\n", "x", "é\n", "tab\t\n"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_line, max_size=40), st.lists(_line, max_size=40), st.data())
def test_properties_all_none_and_any_subset(
    old_lines: list[str], new_lines: list[str], data: st.DataObject
) -> None:
    # A line without newline can only be the last one.
    old = "".join(line if line.endswith("\n") else line + "\n" for line in old_lines[:-1]) + "".join(
        old_lines[-1:]
    )
    new = "".join(line if line.endswith("\n") else line + "\n" for line in new_lines[:-1]) + "".join(
        new_lines[-1:]
    )
    hunks = diff.compute_hunks(old, new)
    assert diff.apply_hunks(old, hunks) == new
    assert diff.apply_hunks(old, []) == old
    for hunk in hunks:
        assert diff.parse_hunks(hunk.render()) == [hunk]
    # Applying a subset, then the rest on top of the result, ends at `new`.
    chosen = data.draw(st.lists(st.booleans(), min_size=len(hunks), max_size=len(hunks)))
    first = [h for h, take in zip(hunks, chosen, strict=True) if take]
    rest = [h for h, take in zip(hunks, chosen, strict=True) if not take]
    middle = diff.apply_hunks(old, first)
    assert diff.apply_hunks(middle, rest) == new


def test_render_proposal_labels_hunks_and_stays_a_patch() -> None:
    class Stored:
        def __init__(self, index: int, text: str, state: str) -> None:
            self.index, self.diff, self.state = index, text, state

    class Prop:
        path = "a.py"

        def __init__(self, hunks: list[Stored]) -> None:
            self.hunks = hunks

    [hunk] = diff.compute_hunks("x = 1\n", "x = 2\n")
    text = diff.render_proposal(Prop([Stored(1, hunk.render(), "pending")]))
    assert text == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@ hunk 1 (pending)\n-x = 1\n+x = 2\n"
    assert diff.parse_hunks(text) == [hunk]
    assert "\x1b[36m@@ -1 +1 @@ hunk 1 (pending)\x1b[0m" in diff.render_proposal(
        Prop([Stored(1, hunk.render(), "pending")]), color=True
    )
