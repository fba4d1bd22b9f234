/**
 * The palette commands. Each one asks the server through {@link TetherServer.request} and turns
 * the answer into an editor view; every failure ends in exactly one actionable message.
 * Reviewing proposals lives in review.ts, rollback and the tool log in history.ts.
 */
import * as vscode from "vscode";
import { API_KEY_SECRET, CHAT_VIEW_ID, COMMAND_TITLES, COMMANDS, type CommandId } from "./constants";
import type { ViewDocuments } from "./documents";
import { asText, formatCheck, formatCommandResult } from "./format";
import { historyHandlers } from "./history";
import { logError, showLogs } from "./log";
import type { AskResult, CheckCommandResult, RunToolResult } from "./protocol";
import { type Handler, listProposals, reviewHandlers } from "./review";
import { CommandFailed, ServerUnavailable, type TetherServer } from "./server";
import { PERMISSION_DESCRIPTIONS, PERMISSION_PRESETS } from "./settings";

interface Deps {
  server: TetherServer;
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

export function registerCommands(deps: Deps): vscode.Disposable[] {
  const { server, views, secrets } = deps;

  let askConversation: string | undefined;
  const handlers: Record<CommandId, Handler> = {
    [COMMANDS.openChat]: async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    },

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

    ...reviewHandlers(server),
    ...historyHandlers(server, views),
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

    [COMMANDS.allowSecretFile]: async () => {
      // The person's choice, never the agent's: named in every secret-file refusal (docs/secrets.md).
      const folder = vscode.workspace.workspaceFolders?.[0];
      const active = vscode.window.activeTextEditor?.document.uri;
      const suggested = folder && active?.scheme === "file" ? vscode.workspace.asRelativePath(active, false) : "";
      const path = await vscode.window.showInputBox({
        title: "Tether: Allow Secret File",
        prompt: "A secret file (e.g. .env) the agent may read until the server stops. Its content will reach the model.",
        value: suggested,
        ignoreFocusOut: true,
      });
      if (!path?.trim()) return;
      const confirm = await vscode.window.showWarningMessage(
        `Tether: let the agent read ${path.trim()} for this session?`,
        { modal: true, detail: "Its content, keys included, will be sent to the model until the server stops. The choice is audited." },
        "Allow",
      );
      if (confirm !== "Allow") return;
      const result = await server.request<{ path: string }>("tether.allowSecret", { path: path.trim() });
      void vscode.window.showInformationMessage(`Tether: the agent may read ${result.path} until the server stops.`);
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
