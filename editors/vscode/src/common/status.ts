/**
 * The status bar item: permission mode, sandbox backend and pending proposals when the server runs;
 * a spinner while it starts; an error (click: logs) when it failed; a shield when the workspace is
 * untrusted. One item, always visible, so the agent's leash is never out of sight.
 */
import * as vscode from "vscode";
import { COMMANDS } from "./constants";
import { statusText, statusTooltip } from "./format";
import type { StatusResult } from "./protocol";
import { hasWorkspaceMode } from "./settings";

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem("tether.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "Tether";
    this.item.show();
  }

  busy(message: string): void {
    this.item.text = `$(sync~spin) Tether: ${message}`;
    this.item.tooltip = `Tether: ${message}`;
    this.item.backgroundColor = undefined;
    this.item.command = COMMANDS.showLogs;
  }

  error(message: string): void {
    this.item.text = "$(error) Tether: server failed";
    this.item.tooltip = `${message}\nClick to open the logs.`;
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    this.item.command = COMMANDS.showLogs;
  }

  off(reason: string, command?: string): void {
    this.item.text = "$(circle-slash) Tether: off";
    this.item.tooltip = reason;
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    this.item.command = command;
  }

  ready(status: StatusResult): void {
    this.item.text = statusText(status);
    if (status.readOnly === true) {
      this.item.tooltip = `${statusTooltip(status)}\nClick to manage workspace trust.`;
      this.item.backgroundColor = undefined;
      this.item.command = "workbench.trust.manage";
      return;
    }
    this.item.tooltip = `${statusTooltip(status)}\nClick to change the permission mode.`;
    // Workspace mode is never on unnoticed: any program may run (in the sandbox).
    this.item.backgroundColor = hasWorkspaceMode(status.permissions) ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.command = COMMANDS.setPermissionMode;
  }

  dispose(): void {
    this.item.dispose();
  }
}
