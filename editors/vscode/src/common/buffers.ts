/**
 * Keep open buffers and the disk telling the same story after the server edits buffers.
 *
 * Why: for an open file the server applies accepted hunks (and rollbacks) to the *buffer* through
 * `workspace/applyEdit`, which VS Code leaves unsaved. Checkpoints, rollbacks and the agent read the
 * disk, so an accepted change that only lives in a buffer would be invisible to them. We save a
 * buffer only when it had no unsaved edits of the user's before, so we never save the user's work.
 */
import * as vscode from "vscode";
import type { AcceptResult } from "./protocol";

/** URIs of the open documents without unsaved changes, taken just before a server edit. */
export function cleanDocuments(): Set<string> {
  return new Set(vscode.workspace.textDocuments.filter((d) => !d.isDirty).map((d) => d.uri.toString()));
}

function openDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
}

/** After `tether.accept` applied through the editor: save the buffer if it was clean before. */
export async function saveAcceptedBuffer(result: Pick<AcceptResult, "proposal" | "applied" | "appliedVia">, cleanBefore: Set<string>): Promise<void> {
  if (result.applied.length === 0 || result.appliedVia === "disk") return;
  const doc = openDocument(vscode.Uri.parse(result.proposal.uri));
  if (doc?.isDirty && cleanBefore.has(doc.uri.toString())) await doc.save();
}

/**
 * After a rollback the server rewrote these open buffers to the restored disk content, which leaves
 * them marked unsaved although they equal the disk. Save exactly those (same bytes). Deleted files
 * are never saved (that would re-create them), nor is a buffer that differs from the disk.
 */
export async function settleRestoredBuffers(paths: string[], deleted: string[] = []): Promise<void> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) return;
  const gone = new Set(deleted);
  for (const rel of paths) {
    if (gone.has(rel)) continue;
    const uri = vscode.Uri.joinPath(root, rel);
    const doc = openDocument(uri);
    if (!doc?.isDirty) continue;
    try {
      const disk = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      if (disk === doc.getText()) await doc.save();
    } catch {
      // unreadable or gone: leave the buffer for the user to decide
    }
  }
}
