/**
 * Pure helpers over proposals: which hunk is "at the cursor", how a proposal is named in pickers,
 * and how its proposed-content document is addressed.
 *
 * Why pure: Accept Hunk / Reject Hunk must act on exactly the hunk under the cursor, in the file
 * buffer or on the proposed side of the diff; that rule is worth unit tests, not a UI session.
 */
import type { Hunk, Proposal } from "./protocol";

/** Hunks still waiting for a decision. */
export function pendingHunks(proposal: Proposal): Hunk[] {
  return proposal.hunks.filter((h) => h.state === "pending");
}

/** Open proposals are those with a pending hunk (`pending` or `partially_accepted`). */
export function isOpen(proposal: Proposal): boolean {
  return (proposal.state === "pending" || proposal.state === "partially_accepted") && pendingHunks(proposal).length > 0;
}

/**
 * The pending hunk covering a 0-based line of the *current buffer*, using the server's `range`
 * (replaced lines only; a pure insertion has an empty range and matches its insertion line).
 */
export function hunkAtBufferLine(proposal: Proposal, line: number): Hunk | undefined {
  return pendingHunks(proposal).find((h) => {
    const start = h.range.start.line;
    const end = h.range.end.line;
    if (end <= start) return line === start;
    return line >= start && line < end;
  });
}

/**
 * The pending hunk covering a 0-based line of the *proposed content* (the diff editor's right
 * side): the hunk's new-side span `newStart .. newStart + newLines - 1` (1-based, context included).
 * A pure deletion (newLines 0) matches the line where the removed lines were.
 */
export function hunkAtProposedLine(proposal: Proposal, line: number): Hunk | undefined {
  return pendingHunks(proposal).find((h) => {
    const first = Math.max(h.newStart - 1, 0);
    if (h.newLines === 0) return line === h.newStart;
    return line >= first && line < first + h.newLines;
  });
}

/** One-line summary of a proposal for a quick pick label. */
export function proposalLabel(proposal: Proposal): string {
  return `${proposal.path}`;
}

/** The quick pick description: how many hunks wait, and the agent's reason. */
export function proposalDescription(proposal: Proposal): string {
  const pending = pendingHunks(proposal).length;
  const hunks = `${pending} of ${proposal.hunks.length} hunk${proposal.hunks.length === 1 ? "" : "s"} pending`;
  return proposal.reason ? `${hunks} · ${proposal.reason}` : hunks;
}

/** A hunk as a quick pick label: its header and the first changed line. */
export function hunkLabel(hunk: Hunk): string {
  const first = (hunk.added[0] ?? hunk.removed[0] ?? "").replace(/\n$/, "");
  const sign = hunk.added.length ? "+" : "-";
  return `Hunk ${hunk.index} ${hunk.header}  ${sign}${first.slice(0, 60)}`;
}

/**
 * The path and query of the read-only document holding a proposal's proposed content. The path
 * keeps the file name (so the diff editor picks the right language); the query names the proposal.
 */
export function proposalDocumentParts(proposal: Pick<Proposal, "id" | "path">): { path: string; query: string } {
  return { path: "/" + proposal.path.replace(/^\/+/, ""), query: `id=${encodeURIComponent(proposal.id)}` };
}

/** The proposal id in a proposal document's query, or undefined when it is not one of ours. */
export function proposalIdFromQuery(query: string): string | undefined {
  const match = /(?:^|&)id=([^&]+)/.exec(query);
  return match ? decodeURIComponent(match[1]) : undefined;
}

/** Title of the diff editor tab. */
export function diffTitle(proposal: Proposal): string {
  const base = proposal.path.split("/").pop() ?? proposal.path;
  return `${base} ↔ Tether proposal ${proposal.id}`;
}
