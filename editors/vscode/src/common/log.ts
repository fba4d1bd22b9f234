/**
 * One `LogOutputChannel` ("Tether") for the extension and the language client.
 *
 * Why one channel: the server's stderr, the client's own messages and ours interleave in time
 * order, which is what a user needs when a start fails. With `CI=true` lines are mirrored to the
 * console so the e2e harness shows them.
 */
import * as vscode from "vscode";
import { EXTENSION_NAME } from "./constants";

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel(EXTENSION_NAME, { log: true });
  return channel;
}

function mirror(level: string, message: string): void {
  if (process.env.CI === "true") console.log(`[tether ${level}] ${message}`);
}

export function logInfo(message: string): void {
  createLog().info(message);
  mirror("info", message);
}

export function logWarn(message: string): void {
  createLog().warn(message);
  mirror("warn", message);
}

export function logError(message: string, error?: unknown): void {
  const detail = error instanceof Error ? `${message}: ${error.message}` : error !== undefined ? `${message}: ${JSON.stringify(error)}` : message;
  createLog().error(detail);
  mirror("error", detail);
}

export function showLogs(): void {
  createLog().show(true);
}
