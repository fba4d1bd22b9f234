/**
 * The chat view: a webview in Tether's own activity-bar container (docs/vscode.md, "Chat").
 *
 * The extension holds the conversation's state (state.ts) and posts it whole to the webview, which
 * only draws it (media/chat.js); what the webview sends back is validated (messages.ts) before
 * anything acts on it. A turn is `tether.ask` with a turn id of ours; its `tether/turn`
 * notifications stream in through {@link TetherServer.onTurn}. While the view is visible, the
 * server's approval questions are answered on the tool's card instead of a modal.
 */
import * as vscode from "vscode";
import { type ApprovalAnswer, type ApprovalQuestion, choicesFor } from "../common/approve";
import { COMMANDS } from "../common/constants";
import { logInfo, logWarn } from "../common/log";
import type { Proposal, RejectResult } from "../common/protocol";
import { acceptAndSave } from "../common/review";
import type { TetherServer } from "../common/server";
import { parseWebviewMessage, viewOf, type WebviewMessage } from "./messages";
import { answerQuestion, applyUpdate, attachQuestion, beginTurn, type ChatState, endTurn, fromConversation, newChat, showsProposal } from "./state";

interface AskResultShape {
  conversationId?: string;
  stopReason?: string;
  message?: string;
}

function nonce(): string {
  const bytes = new Uint8Array(18);
  globalThis.crypto.getRandomValues(bytes);
  return Buffer.from(bytes).toString("base64url");
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private state: ChatState = newChat();
  private turns = 0;
  /** The conversation ids last sent to the view's list: the only ones it may resume. */
  private listed = new Set<string>();
  private posting = false;
  private readonly questions = new Map<string, (answer: ApprovalAnswer) => void>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: TetherServer,
  ) {
    this.disposables.push(server.onTurn((update) => this.onTurn(update)));
    server.inlineApprover = (question, token) => this.ask(question, token);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    this.disposables.push(
      view.webview.onDidReceiveMessage((raw: unknown) => {
        const message = parseWebviewMessage(raw);
        if (!message) {
          logWarn(`chat view: ignored a malformed message: ${JSON.stringify(raw)?.slice(0, 200)}`);
          return;
        }
        void this.handle(message).catch((error: unknown) => this.notice(`${(error as Error).message}`));
      }),
      view.onDidChangeVisibility(() => {
        // A question on a card nobody can see would wait for the server's timeout: say where it is.
        if (!view.visible && this.questions.size > 0) {
          void vscode.window
            .showWarningMessage("Tether: the agent is waiting for your answer in the chat.", "Open Chat")
            .then((choice) => choice && vscode.commands.executeCommand(COMMANDS.openChat));
        }
      }),
      view.onDidDispose(() => {
        this.view = undefined;
      }),
    );
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const n = nonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${n}'`,
      "img-src 'none'",
      "font-src 'none'",
      "connect-src 'none'",
      "form-action 'none'",
      "frame-src 'none'",
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Tether chat</title>
</head>
<body>
<header id="bar">
  <select id="conversations" aria-label="Conversations"><option value="">Conversations…</option></select>
  <button id="new" title="Start a new conversation">New</button>
</header>
<main id="log" aria-live="polite"></main>
<footer>
  <div id="meta"></div>
  <textarea id="prompt" rows="3" placeholder="Ask the agent (Enter sends, Shift+Enter is a new line)" aria-label="Message to the agent"></textarea>
  <div id="actions"><button id="send">Send</button><button id="stop" class="secondary" disabled>Stop</button></div>
</footer>
<script nonce="${n}" src="${script.toString()}"></script>
</body>
</html>`;
  }

  private post(): void {
    if (!this.view || this.posting) return;
    // Coalesced: many deltas in one tick become one message.
    this.posting = true;
    setTimeout(() => {
      this.posting = false;
      void this.view?.webview.postMessage({ type: "state", state: viewOf(this.state) });
    }, 0);
  }

  private notice(text: string): void {
    this.state.entries.push({ kind: "notice", text });
    this.post();
  }

  private async handle(message: WebviewMessage): Promise<void> {
    switch (message.type) {
      case "ready":
        this.post();
        return this.listConversations();
      case "send":
        return this.send(message.prompt);
      case "stop":
        if (this.state.running && this.state.turnId) await this.server.request("tether.cancel", { turnId: this.state.turnId });
        return;
      case "new":
        if (this.state.running) return this.notice("A turn is running: Stop it first.");
        this.state = newChat();
        return this.post();
      case "conversations":
        return this.listConversations();
      case "resume": {
        if (this.state.running) return this.notice("A turn is running: Stop it first.");
        if (!this.listed.has(message.conversationId)) return this.notice("That conversation is not in the list.");
        const conversation = await this.server.request<unknown>("tether.conversation", { id: message.conversationId });
        this.state = fromConversation(conversation);
        return this.post();
      }
      case "accept":
      case "reject": {
        // Defence in depth: the view acts only on what it shows, whatever its script sends.
        if (!showsProposal(this.state, message.proposalId)) return this.notice(`No card here shows ${message.proposalId}.`);
        const hunks = message.hunk === undefined ? undefined : [message.hunk];
        // Accept as the palette does: a buffer that was clean is saved after the edit (buffers.ts).
        const result =
          message.type === "accept"
            ? await acceptAndSave(this.server, message.proposalId, hunks)
            : await this.server.request<RejectResult>("tether.reject", hunks ? { id: message.proposalId, hunks } : { id: message.proposalId });
        this.setHunks(message.proposalId, result.proposal);
        return this.post();
      }
      case "diff":
        if (!showsProposal(this.state, message.proposalId)) return this.notice(`No card here shows ${message.proposalId}.`);
        await vscode.commands.executeCommand(COMMANDS.showProposalDiff, message.proposalId);
        return;
      case "answer": {
        const resolve = this.questions.get(message.questionId);
        if (!resolve) return this.notice("That question is no longer open.");
        resolve(message.message ? { choice: message.choice, message: message.message } : { choice: message.choice });
        return;
      }
    }
  }

  private async listConversations(): Promise<void> {
    try {
      const listed = await this.server.request<{ conversations?: unknown[] }>("tether.conversations", {});
      const conversations = listed.conversations ?? [];
      this.listed = new Set(conversations.map((c) => (c as { id?: unknown }).id).filter((id): id is string => typeof id === "string"));
      void this.view?.webview.postMessage({ type: "conversations", conversations });
    } catch (error) {
      logWarn(`chat view: tether.conversations failed: ${(error as Error).message}`);
    }
  }

  private async proposal(id: string): Promise<Proposal | undefined> {
    const res = await this.server.request<{ proposal?: Proposal }>("tether.proposal", { id });
    return res.proposal;
  }

  private setHunks(proposalId: string, proposal: Proposal | undefined): void {
    if (!proposal) return;
    for (const e of this.state.entries) {
      if (e.kind === "tool" && e.proposalId === proposalId) {
        e.hunks = proposal.hunks.map((h) => ({ index: h.index, header: h.header, state: h.state }));
      }
    }
  }

  private async send(prompt: string): Promise<void> {
    if (this.state.running) return this.notice("The agent is still answering: wait, or Stop the turn.");
    this.turns += 1;
    const turnId = `vscode-${process.pid}-${this.turns}`;
    beginTurn(this.state, prompt, turnId);
    this.post();
    const args: Record<string, unknown> = { prompt, turnId };
    if (this.state.conversationId) args.conversationId = this.state.conversationId;
    try {
      const result = await this.server.request<AskResultShape>("tether.ask", args);
      if (this.state.turnId !== turnId) return;
      if (result.conversationId) this.state.conversationId = result.conversationId;
      endTurn(this.state, result.stopReason ?? "end_turn", result.message);
    } catch (error) {
      if (this.state.turnId !== turnId) return;
      endTurn(this.state, "error", (error as Error).message);
    }
    this.post();
    void this.listConversations();
  }

  private onTurn(update: unknown): void {
    if (!applyUpdate(this.state, update)) return;
    const u = update as { kind?: string; id?: string; state?: string; proposalId?: string };
    if (u.kind === "tool" && u.proposalId && u.state !== "running") {
      const proposalId = u.proposalId;
      void this.proposal(proposalId)
        .then((p) => {
          this.setHunks(proposalId, p);
          this.post();
        })
        .catch((error: unknown) => logWarn(`chat view: tether.proposal failed: ${(error as Error).message}`));
    }
    this.post();
  }

  /**
   * Answer the server's question on the card when the person is looking at the chat and a chat turn
   * is running; otherwise undefined (the modal asks). A cancelled question is a deny.
   */
  private ask(question: ApprovalQuestion, token: vscode.CancellationToken): Promise<ApprovalAnswer> | undefined {
    if (!this.view?.visible || !this.state.running || !question.id) return undefined;
    const always = choicesFor(question).includes("Always allow");
    attachQuestion(this.state, { ...question, always });
    this.post();
    logInfo(`approval ${question.id} asked in the chat view: ${question.command}`);
    return new Promise<ApprovalAnswer>((resolve) => {
      const finish = (answer: ApprovalAnswer): void => {
        if (!this.questions.delete(question.id)) return;
        answerQuestion(this.state, question.id, answer.choice, answer.message);
        this.post();
        resolve(answer);
      };
      this.questions.set(question.id, finish);
      token.onCancellationRequested(() => finish({ choice: "deny", message: "withdrawn by the server (cancelled or timed out)" }));
    });
  }

  dispose(): void {
    for (const resolve of this.questions.values()) resolve({ choice: "deny" });
    this.questions.clear();
    this.server.inlineApprover = undefined;
    this.disposables.forEach((d) => {
      d.dispose();
    });
  }
}
