/**
 * Looking back: roll the workspace back to a checkpoint (with a preview of every file and a modal
 * confirmation), and read the audit log newest first, filtered by tool and outcome.
 */
import * as vscode from "vscode";
import { settleRestoredBuffers } from "./buffers";
import { COMMANDS, ROLLBACK_PREVIEW_LIMIT, TOOL_LOG_LIMIT } from "./constants";
import type { ViewDocuments } from "./documents";
import {
  OUTCOMES,
  type LogFilter,
  type Outcome,
  formatToolLog,
  matchesFilter,
  rollbackConfirmation,
  rollbackCounts,
  rollbackFiles,
  shortTime,
  toolsInLog,
} from "./format";
import type { AuditEntry, CheckpointInfo, RollbackResult } from "./protocol";
import type { Handler } from "./review";
import type { TetherServer } from "./server";

export function historyHandlers(server: TetherServer, views: ViewDocuments): Record<typeof COMMANDS.rollback | typeof COMMANDS.showToolLog, Handler> {
  return {
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

  };
}
