/**
 * Reviewing proposals: pick one (the active editor's, the only one, or the user's choice), show it
 * in the diff editor, accept or reject it whole or hunk by hunk, or send it to the Refactor Preview.
 */
import * as vscode from "vscode";
import { cleanDocuments, saveAcceptedBuffer } from "./buffers";
import { COMMANDS } from "./constants";
import { proposalIdOf, proposalUri } from "./documents";
import type { AcceptResult, Hunk, Proposal, ProposalDetail, RejectResult } from "./protocol";
import { diffTitle, hunkAtBufferLine, hunkAtProposedLine, hunkLabel, isOpen, pendingHunks, proposalDescription, proposalLabel } from "./proposals";
import { CommandFailed, type TetherServer } from "./server";

export type Handler = (...args: unknown[]) => Promise<unknown>;

export async function listProposals(server: TetherServer): Promise<Proposal[]> {
  const { proposals } = await server.request<{ proposals: Proposal[] }>("tether.proposals", { pending: true });
  return proposals.filter(isOpen);
}

/** The proposal the active editor shows (diff right side or a file with a pending proposal). */
function proposalInEditor(editor: vscode.TextEditor | undefined, open: Proposal[]): Proposal | undefined {
  if (!editor) return undefined;
  const id = proposalIdOf(editor.document.uri);
  if (id) return open.find((p) => p.id === id);
  const uri = editor.document.uri.toString();
  const matching = open.filter((p) => vscode.Uri.parse(p.uri).toString() === uri);
  return matching.length === 1 ? matching[0] : undefined;
}

/** The proposal to act on: the one in the active editor, the only one, or the user's pick. */
async function chooseProposal(server: TetherServer, placeHolder: string): Promise<Proposal | undefined> {
  const open = await listProposals(server);
  if (open.length === 0) {
    void vscode.window.showInformationMessage("Tether: no pending proposals. Ask the agent, or run a tool without the write permission.");
    return undefined;
  }
  const inEditor = proposalInEditor(vscode.window.activeTextEditor, open);
  if (inEditor) return inEditor;
  if (open.length === 1) return open[0];
  const picked = await vscode.window.showQuickPick(
    open.map((p) => ({ label: proposalLabel(p), description: proposalDescription(p), detail: p.id, proposal: p })),
    { placeHolder, matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.proposal;
}

/** The hunk under the cursor, else the user's pick among the pending hunks of a proposal. */
async function chooseHunk(server: TetherServer, verb: string): Promise<{ proposal: Proposal; hunk: Hunk } | undefined> {
  const editor = vscode.window.activeTextEditor;
  const open = await listProposals(server);
  const proposal = proposalInEditor(editor, open) ?? (await chooseProposal(server, `Proposal whose hunk to ${verb}`));
  if (!proposal) return undefined;
  if (editor && (proposalIdOf(editor.document.uri) === proposal.id || editor.document.uri.toString() === vscode.Uri.parse(proposal.uri).toString())) {
    const line = editor.selection.active.line;
    const hunk = proposalIdOf(editor.document.uri) ? hunkAtProposedLine(proposal, line) : hunkAtBufferLine(proposal, line);
    if (hunk) return { proposal, hunk };
  }
  // Not on a hunk: ask, even when there is only one; acting on a hunk the user is not looking at
  // would be a surprise.
  const hunks = pendingHunks(proposal);
  const picked = await vscode.window.showQuickPick(
    hunks.map((h) => ({ label: hunkLabel(h), detail: h.diff.split("\n").slice(1, 4).join(" ⏎ "), hunk: h })),
    { placeHolder: `The cursor is not on a pending hunk: pick the hunk to ${verb}` },
  );
  return picked ? { proposal, hunk: picked.hunk } : undefined;
}

/** Accept hunks through the server; the buffer it edits is saved when it was clean (buffers.ts). */
export async function acceptAndSave(server: TetherServer, proposalId: string, hunks: number[] | undefined, review = false): Promise<AcceptResult> {
  const clean = cleanDocuments();
  const args: Record<string, unknown> = { id: proposalId };
  if (hunks) args.hunks = hunks;
  if (review) args.review = true;
  const result = await server.request<AcceptResult>("tether.accept", args);
  await saveAcceptedBuffer(result, clean);
  return result;
}

function describeAccept(result: AcceptResult): string {
  if (result.applied.length === 0) return `Tether: nothing applied from ${result.proposal.id} (${result.proposal.path}).`;
  const hunks = result.applied.length === 1 ? `hunk ${result.applied[0]}` : `hunks ${result.applied.join(", ")}`;
  const warnings = (result.warnings ?? []).map((w) => ` Warning: ${w}`).join("");
  return `Tether: applied ${hunks} of ${result.proposal.path}${result.checkpoint ? ` (checkpoint ${result.checkpoint})` : ""}.${warnings}`;
}

type ReviewCommand =
  | typeof COMMANDS.showProposalDiff
  | typeof COMMANDS.acceptProposal
  | typeof COMMANDS.rejectProposal
  | typeof COMMANDS.acceptHunk
  | typeof COMMANDS.rejectHunk
  | typeof COMMANDS.reviewInRefactorPreview;

export function reviewHandlers(server: TetherServer): Record<ReviewCommand, Handler> {
  return {
    [COMMANDS.showProposalDiff]: async (arg?: unknown) => {
      // An id (from a notification or a chat card) opens that proposal, decided or not.
      const id = typeof arg === "string" ? arg : (await chooseProposal(server, "Proposal to review"))?.id;
      if (!id) return;
      const detail = await server.request<ProposalDetail>("tether.proposal", { id });
      await vscode.commands.executeCommand("vscode.diff", vscode.Uri.parse(detail.proposal.uri), proposalUri(detail.proposal), diffTitle(detail.proposal));
    },

    [COMMANDS.acceptProposal]: async () => {
      const proposal = await chooseProposal(server, "Proposal to accept");
      if (!proposal) return;
      void vscode.window.showInformationMessage(describeAccept(await acceptAndSave(server, proposal.id, undefined)));
    },

    [COMMANDS.rejectProposal]: async () => {
      const proposal = await chooseProposal(server, "Proposal to reject");
      if (!proposal) return;
      const result = await server.request<RejectResult>("tether.reject", { id: proposal.id });
      void vscode.window.showInformationMessage(`Tether: rejected ${proposal.path} (${result.rejected.length} hunk(s)).`);
    },

    [COMMANDS.acceptHunk]: async () => {
      const chosen = await chooseHunk(server, "accept");
      if (!chosen) return;
      void vscode.window.showInformationMessage(describeAccept(await acceptAndSave(server, chosen.proposal.id, [chosen.hunk.index])));
    },

    [COMMANDS.rejectHunk]: async () => {
      const chosen = await chooseHunk(server, "reject");
      if (!chosen) return;
      await server.request<RejectResult>("tether.reject", { id: chosen.proposal.id, hunks: [chosen.hunk.index] });
      void vscode.window.showInformationMessage(`Tether: rejected hunk ${chosen.hunk.index} of ${chosen.proposal.path}.`);
    },

    [COMMANDS.reviewInRefactorPreview]: async () => {
      const proposal = await chooseProposal(server, "Proposal to review in the Refactor Preview");
      if (!proposal) return;
      void vscode.window.showInformationMessage(
        "Tether: in the Refactor Preview every change starts unchecked. Tick the changes you want, then Apply.",
      );
      let result: AcceptResult;
      try {
        result = await acceptAndSave(server, proposal.id, undefined, true);
      } catch (error) {
        // Discard, or Apply with nothing ticked: the editor refuses the edit. That is the user's choice, not a failure.
        if (error instanceof CommandFailed && /refused/.test(error.message)) {
          void vscode.window.showInformationMessage("Tether: Nothing applied: no change was ticked in the Refactor Preview. The proposal is still pending.");
          return;
        }
        throw error;
      }
      void vscode.window.showInformationMessage(describeAccept(result));
    },

  };
}
