/**
 * Entry point: wires the modules in src/common together and nothing else.
 */
import * as vscode from "vscode";
import { registerCommands } from "./common/commands";
import { CHAT_VIEW_ID, PROPOSAL_SCHEME, VIEW_SCHEME } from "./common/constants";
import { ProposalDocuments, ViewDocuments } from "./common/documents";
import { createLog } from "./common/log";
import { TetherServer } from "./common/server";
import { needsRestart } from "./common/settings";
import { StatusItem } from "./common/status";
import { ChatViewProvider } from "./chat/view";

let server: TetherServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = createLog();
  const status = new StatusItem();
  server = new TetherServer(context.secrets, status);
  const proposals = new ProposalDocuments(server);
  const views = new ViewDocuments();
  const running = server;
  const chat = new ChatViewProvider(context.extensionUri, server);

  context.subscriptions.push(
    log,
    status,
    server,
    proposals,
    views,
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    vscode.workspace.registerTextDocumentContentProvider(VIEW_SCHEME, views),
    chat,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    ...registerCommands({ server, views, secrets: context.secrets }),
    server.onEvent(() => void running.refreshStatus()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // A new start-up permission setting replaces the mode picked earlier in this session.
      if (event.affectsConfiguration("tether.permissions")) running.sessionPermissions = undefined;
      if (needsRestart(event)) void running.restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void running.restart()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void running.restart()),
    context.secrets.onDidChange(() => void running.restart()),
  );
  await server.restart();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
