/**
 * The palette commands. Each one asks the server through {@link TetherServer.request} and turns
 * the answer into an editor view; every failure ends in exactly one actionable message.
 */
import * as vscode from "vscode";
import { API_KEY_SECRET, COMMAND_TITLES, COMMANDS, type CommandId, ROLLBACK_PREVIEW_LIMIT, TOOL_LOG_LIMIT } from "./constants";
import { type ProposalDocuments, proposalIdOf, proposalUri, type ViewDocuments } from "./documents";
import {
  OUTCOMES,
  asText,
  type LogFilter,
  type Outcome,
  formatCheck,
  formatCommandResult,
  formatToolLog,
  matchesFilter,
  rollbackConfirmation,
  rollbackCounts,
  rollbackFiles,
  shortTime,
  toolsInLog,
} from "./format";
import { cleanDocuments, saveAcceptedBuffer, settleRestoredBuffers } from "./buffers";
import { logError, showLogs } from "./log";
import type {
  AcceptResult,
  AskResult,
  AuditEntry,
  CheckCommandResult,
  CheckpointInfo,
  Hunk,
  Proposal,
  ProposalDetail,
  RejectResult,
  RollbackResult,
  RunToolResult,
} from "./protocol";
import { diffTitle, hunkAtBufferLine, hunkAtProposedLine, hunkLabel, isOpen, pendingHunks, proposalDescription, proposalLabel } from "./proposals";
import { CommandFailed, ServerUnavailable, type TetherServer } from "./server";
import { PERMISSION_DESCRIPTIONS, PERMISSION_PRESETS } from "./settings";

interface Deps {
  server: TetherServer;
  proposals: ProposalDocuments;
  views: ViewDocuments;
  secrets: vscode.SecretStorage;
}

/** Show one message for a failed command, with the button that most likely fixes it. */
async function reportFailure(title: string, error: unknown): Promise<void> {
  logError(`${title} failed`, error);
  if (error instanceof ServerUnavailable) {
    const trust = !vscode.workspace.isTrusted;
    const choice = await vscode.window.showErrorMessage(error.message, trust ? "Manage Workspace Trust" : "Restart Server", "Show Logs");
    if (choice === "Manage Workspace Trust") await vscode.commands.executeCommand("workbench.trust.manage");
    if (choice === "Restart Server") await vscode.commands.executeCommand(COMMANDS.restart);
    if (choice === "Show Logs") showLogs();
    return;
  }
  const message = error instanceof CommandFailed || error instanceof Error ? error.message : String(error);
  const choice = await vscode.window.showErrorMessage(`Tether: ${title} failed: ${message}`, "Show Logs");
  if (choice === "Show Logs") showLogs();
}

async function listProposals(server: TetherServer): Promise<Proposal[]> {
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
  const hunks = pendingHunks(proposal);
  if (hunks.length === 1) return { proposal, hunk: hunks[0] };
  const picked = await vscode.window.showQuickPick(
    hunks.map((h) => ({ label: hunkLabel(h), detail: h.diff.split("\n").slice(1, 4).join(" ⏎ "), hunk: h })),
    { placeHolder: `The cursor is not on a pending hunk: pick the hunk to ${verb}` },
  );
  return picked ? { proposal, hunk: picked.hunk } : undefined;
}

/** Accept hunks through the server; the buffer it edits is saved when it was clean (buffers.ts). */
async function acceptAndSave(server: TetherServer, proposal: Proposal, hunks: number[] | undefined, review = false): Promise<AcceptResult> {
  const clean = cleanDocuments();
  const args: Record<string, unknown> = { id: proposal.id };
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

export function registerCommands(deps: Deps): vscode.Disposable[] {
  const { server, views, secrets } = deps;

  let askConversation: string | undefined;
  const handlers: Record<CommandId, (...args: unknown[]) => Promise<unknown>> = {
    [COMMANDS.askAgent]: async () => {
      const prompt = await vscode.window.showInputBox({ title: "Tether: Ask Agent", prompt: "What should the agent do?", ignoreFocusOut: true });
      if (!prompt) return;
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Tether agent is working…", cancellable: true },
        async (_progress, token) => {
          const cancel = token.onCancellationRequested(() => {
            void server.request("tether.cancel", {}).catch(() => undefined);
          });
          try {
            return await server.request<AskResult>("tether.ask", { prompt, ...(askConversation ? { conversationId: askConversation } : {}) });
          } finally {
            cancel.dispose();
          }
        },
      );
      askConversation = result.conversationId;
      const calls = result.toolCalls.map((c) => `- \`${asText(c.name ?? c.tool ?? "tool")}\` ${c.ok === false || c.isError === true ? "(failed)" : ""}`).join("\n");
      await views.show(
        "Agent.md",
        `# Tether agent\n\n**You:** ${prompt}\n\n${result.text}\n\n---\nTool calls:\n${calls || "(none)"}\n\nStop: ${result.stopReason} · cost $${result.cost.toFixed(4)}\n`,
        "markdown",
      );
      const pending = (await listProposals(server)).length;
      if (pending > 0) {
        const choice = await vscode.window.showInformationMessage(`Tether: the agent proposed changes (${pending} pending).`, "Show Proposal Diff");
        if (choice) await vscode.commands.executeCommand(COMMANDS.showProposalDiff);
      }
    },

    [COMMANDS.showProposalDiff]: async (arg?: unknown) => {
      const proposal = typeof arg === "string" ? (await listProposals(server)).find((p) => p.id === arg) : await chooseProposal(server, "Proposal to review");
      if (!proposal) return;
      const detail = await server.request<ProposalDetail>("tether.proposal", { id: proposal.id });
      await vscode.commands.executeCommand("vscode.diff", vscode.Uri.parse(detail.proposal.uri), proposalUri(detail.proposal), diffTitle(detail.proposal));
    },

    [COMMANDS.acceptProposal]: async () => {
      const proposal = await chooseProposal(server, "Proposal to accept");
      if (!proposal) return;
      void vscode.window.showInformationMessage(describeAccept(await acceptAndSave(server, proposal, undefined)));
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
      void vscode.window.showInformationMessage(describeAccept(await acceptAndSave(server, chosen.proposal, [chosen.hunk.index])));
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
        result = await acceptAndSave(server, proposal, undefined, true);
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

    [COMMANDS.rollback]: async () => {
      const { checkpoints } = await server.request<{ checkpoints: CheckpointInfo[] }>("tether.checkpoints", {});
      if (checkpoints.length === 0) {
        void vscode.window.showInformationMessage("Tether: no checkpoints yet. One is taken before every change the agent makes.");
        return;
      }
      const items = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: "Tether: previewing rollbacks" },
        async () => {
          const previews = [];
          for (const cp of checkpoints.slice(0, ROLLBACK_PREVIEW_LIMIT)) {
            const plan = await server.request<RollbackResult>("tether.rollback", { checkpoint: cp.id, dryRun: true });
            previews.push({
              label: `$(history) ${shortTime(cp.time)}`,
              description: `before ${cp.tool} · ${rollbackCounts(plan)}`,
              detail: `${cp.message ? cp.message + " — " : ""}${rollbackFiles(plan)}`,
              checkpoint: cp,
              plan,
            });
          }
          return previews;
        },
      );
      const picked = await vscode.window.showQuickPick(items, { placeHolder: "Roll the workspace back to the state before…", matchOnDetail: true });
      if (!picked) return;
      const confirm = await vscode.window.showWarningMessage(
        `Roll back to ${shortTime(picked.checkpoint.time)}? ${rollbackCounts(picked.plan)}.`,
        { modal: true, detail: rollbackConfirmation(picked.checkpoint, picked.plan) },
        "Roll Back",
      );
      if (confirm !== "Roll Back") return;
      const done = await server.request<RollbackResult>("tether.rollback", { checkpoint: picked.checkpoint.id });
      await settleRestoredBuffers(done.buffersUpdated ?? [...done.restored, ...done.created], done.deleted);
      void vscode.window.showInformationMessage(`Tether: rolled back (${rollbackCounts(done)}).`);
    },

    [COMMANDS.showToolLog]: async () => {
      const { entries } = await server.request<{ entries: AuditEntry[] }>("tether.toolLog", { n: TOOL_LOG_LIMIT });
      type FilterItem = vscode.QuickPickItem & { tool?: string; outcome?: Outcome };
      const items: FilterItem[] = [{ label: "Outcome", kind: vscode.QuickPickItemKind.Separator }];
      for (const outcome of OUTCOMES) {
        const count = entries.filter((e) => matchesFilter(e, { outcomes: [outcome] })).length;
        if (count) items.push({ label: outcome, description: `outcome · ${count}`, outcome });
      }
      items.push({ label: "Tool", kind: vscode.QuickPickItemKind.Separator });
      for (const tool of toolsInLog(entries)) {
        const count = entries.filter((e) => matchesFilter(e, { tools: [tool] })).length;
        items.push({ label: tool, description: `tool · ${count}`, tool });
      }
      const picked = await vscode.window.showQuickPick(items, {
        canPickMany: true,
        placeHolder: `Filter ${entries.length} tool calls: tick tools and/or outcomes, or none for all; Enter shows them newest first`,
      });
      if (!picked) return;
      const filter: LogFilter = {
        tools: picked.flatMap((i) => (i.tool ? [i.tool] : [])),
        outcomes: picked.flatMap((i) => (i.outcome ? [i.outcome] : [])),
      };
      await views.show("Tool Log.log", formatToolLog(entries, filter), "log");
    },

    [COMMANDS.setPermissionMode]: async () => {
      const status = await server.refreshStatus();
      const current = status?.permissions;
      const picked = await vscode.window.showQuickPick(
        PERMISSION_PRESETS.map((p) => ({ label: p, description: p === current ? "(current)" : undefined, detail: PERMISSION_DESCRIPTIONS[p] })),
        { placeHolder: "What may the agent do in this session?" },
      );
      if (!picked) return;
      const result = await server.request<{ permissions: string }>("tether.setPermissions", { permissions: picked.label });
      server.sessionPermissions = result.permissions;
      await server.refreshStatus();
      void vscode.window.showInformationMessage(`Tether: permission mode is now '${result.permissions}'.`);
    },

    [COMMANDS.runInSandbox]: async () => {
      const command = await vscode.window.showInputBox({ title: "Tether: Run Command in Sandbox", prompt: "A shell command, checked by the policy and run in the sandbox", ignoreFocusOut: true });
      if (!command) return;
      const { result } = await server.request<RunToolResult>("tether.runTool", { name: "bash_command", input: { command } });
      await views.show("Command Output.log", formatCommandResult(command, result), "log");
      if (!result.ok && !result.dryRun) void vscode.window.showWarningMessage(`Tether: ${result.text.split("\n")[0]}`);
    },

    [COMMANDS.checkCommand]: async () => {
      const command = await vscode.window.showInputBox({ title: "Tether: Check Command", prompt: "Would the policy allow this command? Nothing is run.", ignoreFocusOut: true });
      if (!command) return;
      const check = await server.request<CheckCommandResult>("tether.checkCommand", { command });
      const text = formatCheck(command, check);
      if (check.allowed) void vscode.window.showInformationMessage(text);
      else void vscode.window.showWarningMessage(text);
    },

    [COMMANDS.runToolJson]: async () => {
      const raw = await vscode.window.showInputBox({
        title: "Tether: Run Tool (JSON)",
        prompt: 'Call a tool through the gate, e.g. {"name": "write_file", "input": {"path": "a.txt", "content": "hi\\n"}}',
        ignoreFocusOut: true,
        validateInput: (text) => {
          try {
            const value: unknown = JSON.parse(text);
            if (value === null || typeof value !== "object" || Array.isArray(value)) return "Expected a JSON object";
            if (typeof (value as { name?: unknown }).name !== "string") return 'Expected a "name" string';
            return undefined;
          } catch (error) {
            return `Not JSON: ${(error as Error).message}`;
          }
        },
      });
      if (!raw) return;
      const call = JSON.parse(raw) as { name: string; input?: Record<string, unknown> };
      const { result, proposal } = await server.request<RunToolResult>("tether.runTool", { name: call.name, input: call.input ?? {} });
      if (proposal) {
        const choice = await vscode.window.showInformationMessage(`Tether: ${call.name} proposed a change to ${proposal.path} (${proposal.id}).`, "Show Proposal Diff");
        if (choice) await vscode.commands.executeCommand(COMMANDS.showProposalDiff, proposal.id);
      } else {
        const summary = `Tether: ${call.name} ${result.ok ? (result.dryRun ? "(dry run)" : "ok") : "failed"}: ${result.text.split("\n")[0]}`;
        if (result.ok) void vscode.window.showInformationMessage(summary);
        else void vscode.window.showWarningMessage(summary);
      }
    },

    [COMMANDS.setApiKey]: async () => {
      const key = await vscode.window.showInputBox({
        title: "Tether: Set Anthropic API Key",
        prompt: "Stored in VS Code's secret storage and passed only to the Tether server process. Empty removes it.",
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return;
      if (key.trim()) await secrets.store(API_KEY_SECRET, key.trim());
      else await secrets.delete(API_KEY_SECRET);
      // secrets.onDidChange restarts the server with the new key (extension.ts).
      void vscode.window.showInformationMessage(key.trim() ? "Tether: API key stored; restarting the server." : "Tether: API key removed; restarting the server.");
    },

    [COMMANDS.restart]: async () => {
      await server.restart();
    },

    [COMMANDS.showLogs]: async () => {
      showLogs();
      return Promise.resolve();
    },
  };

  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (error) {
        void reportFailure(COMMAND_TITLES[id as CommandId] ?? id, error);
        return undefined;
      }
    }),
  );
}
