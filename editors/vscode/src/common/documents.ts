/**
 * Read-only virtual documents: a proposal's proposed content (right side of the diff editor) and
 * Tether's views (tool log, agent answers, command output).
 *
 * Why virtual documents: they are read-only by construction, need no temp files in the workspace
 * (which the agent could then see), and VS Code's diff editor, search and copy work on them.
 */
import * as vscode from "vscode";
import { PROPOSAL_SCHEME, VIEW_SCHEME } from "./constants";
import type { Proposal, ProposalDetail } from "./protocol";
import { proposalDocumentParts, proposalIdFromQuery } from "./proposals";
import type { TetherServer } from "./server";

export function proposalUri(proposal: Pick<Proposal, "id" | "path">): vscode.Uri {
  const { path, query } = proposalDocumentParts(proposal);
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path, query });
}

export function proposalIdOf(uri: vscode.Uri): string | undefined {
  return uri.scheme === PROPOSAL_SCHEME ? proposalIdFromQuery(uri.query) : undefined;
}

export class ProposalDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly server: TetherServer) {
    // A proposal's content changes when hunks are accepted/rejected or it goes stale.
    this.subscription = server.onEvent((event) => {
      for (const doc of vscode.workspace.textDocuments) {
        const id = proposalIdOf(doc.uri);
        if (id && (!event.proposalId || event.proposalId === id)) this.changed.fire(doc.uri);
      }
    });
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const id = proposalIdOf(uri);
    if (!id) throw new Error(`not a Tether proposal document: ${uri.toString()}`);
    const detail = await this.server.request<ProposalDetail>("tether.proposal", { id }, token);
    return detail.proposedContent;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/** Named read-only views whose text the extension sets, e.g. `tether-view:/Tool Log.log`. */
export class ViewDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path) ?? "";
  }

  /** Set a view's text and show it (reusing its tab if open). */
  async show(name: string, text: string, language?: string): Promise<vscode.TextEditor> {
    const uri = vscode.Uri.from({ scheme: VIEW_SCHEME, path: `/${name}` });
    this.contents.set(uri.path, text);
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (language && doc.languageId !== language) doc = await vscode.languages.setTextDocumentLanguage(doc, language);
    return vscode.window.showTextDocument(doc, { preview: false });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
