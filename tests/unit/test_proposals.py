"""ProposalStore: create, persist, partial accepts, re-basing, staleness, outcome for the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.core.proposals import ProposalStore, read_current_text
from tether.errors import ProposalError, ProposalStale

BASE = "".join(f"line {i}\n" for i in range(1, 31))
NEW = BASE.replace("line 3\n", "LINE 3\n").replace("line 20\n", "LINE 20\nline 20b\n")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(BASE)
    return tmp_path


def test_create_persists_and_survives_a_new_store(ws: Path) -> None:
    p = ProposalStore(ws).create("src/app.py", BASE, NEW, "fix things")
    assert p.id.startswith("p-")
    assert len(p.id) == 10
    assert [h.index for h in p.hunks] == [1, 2]
    again = ProposalStore(ws).get(p.id)  # a "restart"
    assert again.to_dict() == p.to_dict()
    assert (ws / ".tether" / "proposals" / f"{p.id}.json").is_file()
    assert [x.id for x in ProposalStore(ws).list(pending_only=True)] == [p.id]


def test_identical_content_is_refused(ws: Path) -> None:
    with pytest.raises(ProposalError, match="identical"):
        ProposalStore(ws).create("src/app.py", BASE, BASE, "nothing")


def test_to_json_has_the_lsp_shape(ws: Path) -> None:
    p = ProposalStore(ws).create("src/app.py", BASE, NEW, "fix the off-by-one")
    data = p.to_json(ws)
    assert set(data) == {"id", "path", "uri", "state", "reason", "created", "hunks"}
    assert data["uri"] == (ws / "src" / "app.py").as_uri()
    assert data["state"] == "pending"
    second = data["hunks"][1]
    assert set(second) == {
        "index", "header", "state", "oldStart", "oldLines", "newStart", "newLines",
        "range", "removed", "added", "diff",
    }  # fmt: skip
    assert second["index"] == 2
    assert second["header"] == "@@ -17,7 +17,8 @@"
    assert second["range"] == {"start": {"line": 19, "character": 0}, "end": {"line": 20, "character": 0}}
    assert second["removed"] == ["line 20\n"]
    assert second["added"] == ["LINE 20\n", "line 20b\n"]
    assert second["diff"].startswith("@@ -17,7 +17,8 @@\n line 17\n")


def test_range_follows_the_current_buffer(ws: Path) -> None:
    p = ProposalStore(ws).create("src/app.py", BASE, NEW, "r")
    shifted = "new top\n" + BASE
    data = p.to_json(ws, current=shifted)
    assert data["hunks"][1]["range"]["start"]["line"] == 20


def test_partial_accept_then_the_rest(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    plan = store.plan_accept(p.id, [2], read_current_text(ws, "src/app.py"))
    assert plan.indices == (2,)
    assert not plan.rebased
    assert [e.index for e in plan.edits] == [2]
    assert plan.edits[0].new_text == "LINE 20\nline 20b\n"
    after = store.apply(plan)
    assert after.state == "partially_accepted"
    assert [h.state for h in after.hunks] == ["pending", "accepted"]
    assert (ws / "src" / "app.py").read_text() == BASE.replace("line 20\n", "LINE 20\nline 20b\n")
    # hunk 2 is now applied; its range is found where it landed
    assert after.to_json(ws)["hunks"][1]["range"]["start"]["line"] == 19

    plan = store.plan_accept(p.id, None, read_current_text(ws, "src/app.py"))
    assert plan.indices == (1,)
    assert plan.rebased
    final = store.apply(plan)
    assert final.state == "accepted"
    assert (ws / "src" / "app.py").read_text() == NEW
    assert final.outcome.applied == [2, 1]
    assert "hunks 1, 2 applied" in final.summary_for_model()


def test_accepting_an_accepted_hunk_is_an_error(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    store.apply(store.plan_accept(p.id, [1], BASE))
    with pytest.raises(ProposalError, match=r"hunk 1 of proposal .* is already accepted"):
        store.plan_accept(p.id, [1], read_current_text(ws, "src/app.py"))
    with pytest.raises(ProposalError, match="has no hunk 7; its hunks are 1, 2"):
        store.plan_accept(p.id, [7], BASE)


def test_file_changed_elsewhere_is_rebased(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    (ws / "src" / "app.py").write_text("# header added by the user\n" + BASE.replace("line 30\n", "end\n"))
    plan = store.plan_accept(p.id, None, read_current_text(ws, "src/app.py"))
    assert plan.rebased
    store.apply(plan)
    assert (ws / "src" / "app.py").read_text() == "# header added by the user\n" + NEW.replace(
        "line 30\n", "end\n"
    )


def test_conflicting_change_marks_stale_and_writes_nothing(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    changed = BASE.replace("line 20\n", "user's line 20\n")
    (ws / "src" / "app.py").write_text(changed)
    with pytest.raises(ProposalStale) as err:
        store.plan_accept(p.id, None, changed)
    assert str(err.value) == (
        f"Proposal {p.id} is stale: src/app.py changed since the proposal was made and hunk 2 no longer "
        "applies (the lines around @@ -17,7 +17,8 @@ are no longer in the file). Nothing was written; "
        "reject it and ask for a fresh edit."
    )
    assert (ws / "src" / "app.py").read_text() == changed
    stale = store.get(p.id)
    assert stale.state == "stale"
    assert "stale: src/app.py changed" in stale.summary_for_model()
    # The non-conflicting hunk alone still applies.
    store.apply(store.plan_accept(p.id, [1], changed))
    assert store.get(p.id).state == "partially_accepted"


def test_plan_accept_accepts_raw_text_with_bom(ws: Path) -> None:
    target = ws / "src" / "app.py"
    target.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    raw = target.read_bytes().decode("utf-8")  # a caller that did not strip the BOM
    plan = store.plan_accept(p.id, None, raw)
    assert plan.new_content == "\ufeff" + NEW
    assert [h.index for h in plan.hunks] == [1, 2]
    store.apply(plan)
    assert target.read_bytes() == b"\xef\xbb\xbf" + NEW.encode()


def test_mark_stale_twice_keeps_the_first_reason(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    store.mark_stale(p.id, "first reason")
    assert store.mark_stale(p.id).outcome.stale_reason == "first reason"


def test_apply_refuses_if_disk_changed_after_planning(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    plan = store.plan_accept(p.id, None, BASE)
    (ws / "src" / "app.py").write_text(BASE + "typed meanwhile\n")
    with pytest.raises(ProposalStale, match="changed while it was being accepted"):
        store.apply(plan)
    assert (ws / "src" / "app.py").read_text() == BASE + "typed meanwhile\n"


def test_two_proposals_on_one_file(ws: Path) -> None:
    store = ProposalStore(ws)
    first = store.create("src/app.py", BASE, BASE.replace("line 3\n", "THREE\n"), "first")
    second = store.create("src/app.py", BASE, BASE.replace("line 25\n", "TWENTY-FIVE\n"), "second")
    clash = store.create("src/app.py", BASE, BASE.replace("line 3\n", "three?\n"), "clash")
    store.apply(store.plan_accept(first.id, None, read_current_text(ws, "src/app.py")))
    store.apply(store.plan_accept(second.id, None, read_current_text(ws, "src/app.py")))
    assert (ws / "src" / "app.py").read_text() == BASE.replace("line 3\n", "THREE\n").replace(
        "line 25\n", "TWENTY-FIVE\n"
    )
    with pytest.raises(ProposalStale):
        store.plan_accept(clash.id, None, read_current_text(ws, "src/app.py"))
    assert store.reject(clash.id).state == "rejected"
    assert [p.id for p in store.list(pending_only=True)] == []


def test_reject_some_then_accept_rest_and_user_edit_recorded(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "r")
    assert store.reject(p.id, [1]).state == "pending"
    done = store.mark(p.id, accepted=[2], rejected=[], edited_by_user=True)
    assert done.state == "partially_accepted"
    assert done.summary_for_model() == (
        f"Proposal {p.id} (src/app.py): hunk 2 applied; hunk 1 rejected by the user. The user edited "
        "the result before saving; re-read the file before further edits."
    )
    with pytest.raises(ProposalError, match="both accepted and rejected"):
        store.mark(p.id, accepted=[1], rejected=[1])


def test_new_file_proposal_creates_it_with_0644(ws: Path) -> None:
    store = ProposalStore(ws)
    p = store.create("src/new.py", "", "print('hi')\n", "new file")
    store.apply(store.plan_accept(p.id, None, read_current_text(ws, "src/new.py")))
    assert (ws / "src" / "new.py").read_text() == "print('hi')\n"
    assert (ws / "src" / "new.py").stat().st_mode & 0o777 == 0o644


def test_bom_and_mode_are_kept_on_accept(ws: Path) -> None:
    target = ws / "src" / "app.py"
    target.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    target.chmod(0o640)
    store = ProposalStore(ws)
    p = store.create("src/app.py", read_current_text(ws, "src/app.py"), NEW, "r")
    store.apply(store.plan_accept(p.id, None, read_current_text(ws, "src/app.py")))
    assert target.read_bytes() == b"\xef\xbb\xbf" + NEW.encode()
    assert target.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("bad", ["../outside.txt", "/etc/passwd", ".git/hooks/pre-commit", "a\x00b"])
def test_stored_paths_are_checked(ws: Path, bad: str) -> None:
    store = ProposalStore(ws)
    with pytest.raises(ProposalError):
        store.create(bad, "", "x\n", "r")
    # A proposal file planted by a hostile repository is refused on load, too.
    good = store.create("src/app.py", BASE, NEW, "r")
    file = ws / ".tether" / "proposals" / f"{good.id}.json"
    data = json.loads(file.read_text())
    data["path"] = bad
    file.write_text(json.dumps(data))
    with pytest.raises(ProposalError):
        store.get(good.id)


@pytest.mark.parametrize("bad_id", ["../x", "p-XYZ", "p-1234567", ""])
def test_bad_ids_are_rejected(ws: Path, bad_id: str) -> None:
    with pytest.raises(ProposalError, match=r"not a proposal id|no proposal"):
        ProposalStore(ws).get(bad_id)


def test_corrupt_file_is_skipped_in_list_and_named_by_get(ws: Path) -> None:
    store = ProposalStore(ws)
    good = store.create("src/app.py", BASE, NEW, "r")
    (ws / ".tether" / "proposals" / "p-00000000.json").write_text("{torn")
    assert [p.id for p in store.list()] == [good.id]
    with pytest.raises(ProposalError, match="corrupt"):
        store.get("p-00000000")


def test_get_never_hands_out_a_shared_or_outdated_copy(ws: Path) -> None:
    """`get` keeps the decoded file until it changes: a copy changed without `save` must not show
    in the next `get` (down to a recorded event), and a change written by another store (another
    process) must."""
    store = ProposalStore(ws)
    p = store.create("src/app.py", BASE, NEW, "fix things")
    store.reject(p.id, [2])
    first = store.get(p.id)
    first.hunk(1).state = "accepted"
    first.outcome.events[0]["action"] = "changed in memory only"
    second = store.get(p.id)
    assert second.hunk(1).state == "pending"
    assert second.outcome.events[0]["action"] != "changed in memory only"
    ProposalStore(ws).reject(p.id, [1])  # another process writes the file
    assert store.get(p.id).hunk(1).state == "rejected"
    (ws / ".tether" / "proposals" / f"{p.id}.json").write_text("{not json")
    with pytest.raises(ProposalError, match="is corrupt"):
        store.get(p.id)
