import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Hunk, Proposal } from "../../common/protocol";
import {
  diffTitle,
  hunkAtBufferLine,
  hunkAtProposedLine,
  hunkLabel,
  isOpen,
  proposalDescription,
  proposalDocumentParts,
  proposalIdFromQuery,
} from "../../common/proposals";

function hunk(index: number, over: Partial<Hunk>): Hunk {
  return {
    index,
    header: "@@",
    state: "pending",
    oldStart: 1,
    oldLines: 1,
    newStart: 1,
    newLines: 1,
    range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } },
    removed: [],
    added: [],
    diff: "",
    ...over,
  };
}

// Base file: 10 lines. Hunk 1 replaces line 3 (0-based 2) with two lines (context lines 2..4 → new
// side 2..5). Hunk 2 inserts one line after line 8 (0-based insertion at 8). Hunk 3 is accepted.
const proposal: Proposal = {
  id: "p-1a2b",
  path: "src/app.py",
  uri: "file:///ws/src/app.py",
  state: "partially_accepted",
  reason: "fix the off-by-one",
  created: "2026-11-22T10:15:00Z",
  hunks: [
    hunk(1, {
      header: "@@ -2,3 +2,4 @@",
      oldStart: 2, oldLines: 3, newStart: 2, newLines: 4,
      range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } },
      removed: ["old\n"], added: ["new\n", "another\n"],
    }),
    hunk(2, {
      header: "@@ -8,2 +9,3 @@",
      oldStart: 8, oldLines: 2, newStart: 9, newLines: 3,
      range: { start: { line: 8, character: 0 }, end: { line: 8, character: 0 } },
      added: ["inserted\n"],
    }),
    hunk(3, { state: "accepted", range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } } }),
  ],
};

describe("hunk at the cursor", () => {
  test("buffer side uses the replaced range only", () => {
    assert.equal(hunkAtBufferLine(proposal, 2)?.index, 1);
    assert.equal(hunkAtBufferLine(proposal, 1), undefined, "context lines are not the hunk");
    assert.equal(hunkAtBufferLine(proposal, 3), undefined, "the range end is exclusive");
  });

  test("a pure insertion matches its insertion line", () => {
    assert.equal(hunkAtBufferLine(proposal, 8)?.index, 2);
    assert.equal(hunkAtBufferLine(proposal, 9), undefined);
  });

  test("decided hunks are never 'at the cursor'", () => {
    assert.equal(hunkAtBufferLine(proposal, 0), undefined);
  });

  test("proposed side uses the new-side span", () => {
    assert.equal(hunkAtProposedLine(proposal, 0), undefined);
    for (const line of [1, 2, 3, 4]) assert.equal(hunkAtProposedLine(proposal, line)?.index, 1, `line ${line}`);
    assert.equal(hunkAtProposedLine(proposal, 5), undefined);
    for (const line of [8, 9, 10]) assert.equal(hunkAtProposedLine(proposal, line)?.index, 2, `line ${line}`);
  });

  test("a pure deletion matches the line after the removed block", () => {
    const deletion: Proposal = { ...proposal, hunks: [hunk(1, { newStart: 4, newLines: 0, removed: ["x\n"] })] };
    assert.equal(hunkAtProposedLine(deletion, 4)?.index, 1);
    assert.equal(hunkAtProposedLine(deletion, 3), undefined);
  });
});

describe("proposal naming", () => {
  test("open means a pending hunk in a pending or partial proposal", () => {
    assert.equal(isOpen(proposal), true);
    assert.equal(isOpen({ ...proposal, state: "stale" }), false);
    assert.equal(isOpen({ ...proposal, hunks: [hunk(1, { state: "rejected" })] }), false);
  });

  test("description counts pending hunks and quotes the reason", () => {
    assert.equal(proposalDescription(proposal), "2 of 3 hunks pending · fix the off-by-one");
  });

  test("hunk label shows the first changed line", () => {
    assert.equal(hunkLabel(proposal.hunks[0]), "Hunk 1 @@ -2,3 +2,4 @@  +new");
  });

  test("document address round-trips ids with reserved characters", () => {
    const parts = proposalDocumentParts({ id: "p-a&b=c/d", path: "/src/app.py" });
    assert.equal(parts.path, "/src/app.py");
    assert.equal(proposalIdFromQuery(parts.query), "p-a&b=c/d");
    assert.equal(proposalIdFromQuery("other=1"), undefined);
  });

  test("diff title names the file and the proposal", () => {
    assert.equal(diffTitle(proposal), "app.py ↔ Tether proposal p-1a2b");
  });
});
