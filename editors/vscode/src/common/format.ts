/**
 * Pure text formatting for the status bar, the tool log, rollback previews and command results.
 *
 * Why pure: these strings are what the user reads to decide whether to accept, roll back or trust a
 * command; they are unit-tested without a server or an editor.
 */
import { hasWorkspaceMode } from "./settings";
import type { AuditEntry, CheckCommandResult, CheckpointInfo, GateResult, RollbackResult, StatusResult } from "./protocol";

// --- status bar ---------------------------------------------------------------------------------

/** `Tether: read,write · bubblewrap · 2 pending` — what the agent may do, where commands run. */
export function statusText(status: Pick<StatusResult, "permissions" | "sandbox" | "pendingProposals" | "readOnly">): string {
  const sandbox = status.sandbox.startsWith("unavailable") ? "no sandbox" : status.sandbox;
  if (status.readOnly === true) {
    const parts = ["$(lock) Tether: read-only (Restricted Mode)"];
    if (status.pendingProposals > 0) parts.push(`${status.pendingProposals} pending`);
    return parts.join(" · ");
  }
  const mode = hasWorkspaceMode(status.permissions) ? "$(warning)" : "$(shield)";
  const parts = [`${mode} Tether: ${status.permissions}`, sandbox];
  if (status.pendingProposals > 0) parts.push(`${status.pendingProposals} pending`);
  return parts.join(" · ");
}

/** Multi-line tooltip with everything `tether.status` reported. */
export function statusTooltip(status: StatusResult): string {
  const lines = [
    `Tether ${status.version}`,
    `Workspace: ${status.workspace ?? "(none: open a folder)"}`,
    `Permissions: ${status.permissions}${hasWorkspaceMode(status.permissions) ? " — workspace mode: any program may run in the sandbox (no network, protected paths read-only), after a checkpoint" : ""}`,
    ...(status.readOnly === true ? ["Restricted Mode: read-only. Trust the workspace to let the agent act."] : []),
    `Sandbox: ${status.sandbox}`,
    `Pending proposals: ${status.pendingProposals}`,
    `Model: ${status.model ?? "(default)"}`,
    `API key: ${status.apiKeyPresent ? "set" : "not set (Tether: Set Anthropic API Key)"}`,
    `Checkpoints: ${status.checkpointsEnabled ? "on" : "off"}`,
  ];
  return lines.join("\n");
}

// --- tool log -----------------------------------------------------------------------------------

export type Outcome = "ok" | "dry run" | "denied" | "failed";
export const OUTCOMES: readonly Outcome[] = ["ok", "dry run", "denied", "failed"];

function field(entry: AuditEntry, ...names: string[]): unknown {
  for (const name of names) {
    if (entry[name] !== undefined && entry[name] !== null) return entry[name];
  }
  return undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Denied (the policy or the permissions said no) wins over dry run, which wins over success. */
export function outcomeOf(entry: AuditEntry): Outcome {
  const decision = record(entry.decision);
  if (decision && decision.allowed === false) return "denied";
  if (field(entry, "dry_run", "dryRun") === true) return "dry run";
  return field(entry, "success", "ok") === true ? "ok" : "failed";
}

export function toolOf(entry: AuditEntry): string {
  const tool = field(entry, "tool");
  return typeof tool === "string" ? tool : "(unknown tool)";
}

/** Empty or missing lists mean "any"; tools and outcomes combine with AND. */
export interface LogFilter {
  tools?: readonly string[];
  outcomes?: readonly Outcome[];
}

export function matchesFilter(entry: AuditEntry, filter: LogFilter): boolean {
  if (filter.tools?.length && !filter.tools.includes(toolOf(entry))) return false;
  if (filter.outcomes?.length && !filter.outcomes.includes(outcomeOf(entry))) return false;
  return true;
}

/** The tools that appear in the log, sorted, for the filter picker. */
export function toolsInLog(entries: AuditEntry[]): string[] {
  return [...new Set(entries.map(toolOf))].sort();
}

function describeFilter(filter: LogFilter): string {
  const parts: string[] = [];
  if (filter.tools?.length) parts.push(`tool ${filter.tools.join(" or ")}`);
  if (filter.outcomes?.length) parts.push(`outcome ${filter.outcomes.join(" or ")}`);
  return parts.length ? parts.join(", ") : "all entries";
}

/** Any JSON value as display text: strings as they are, the rest as JSON. */
export function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    const text: string | undefined = JSON.stringify(value);
    return text ?? "(unprintable)";
  } catch {
    return "(unprintable)";
  }
}

function compact(value: unknown, limit = 300): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) return "";
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} chars)` : text;
}

/** One entry as a few readable lines. */
export function formatEntry(entry: AuditEntry): string {
  const time = asText(field(entry, "time", "timestamp", "ts") ?? "(no time)");
  const duration = field(entry, "duration_ms", "durationMs");
  const head = [time, toolOf(entry), outcomeOf(entry).toUpperCase()];
  if (typeof duration === "number") head.push(`${duration} ms`);
  const source = field(entry, "source");
  if (typeof source === "string") head.push(`via ${source}`);
  const lines = [head.join("  ")];
  const input = field(entry, "input");
  if (input !== undefined) lines.push(`  input:    ${compact(input)}`);
  const decision = record(entry.decision);
  if (decision) {
    const rule = decision.rule ? asText(decision.rule) : "";
    const reason = decision.reason ? asText(decision.reason) : "";
    lines.push(`  decision: ${decision.allowed === false ? "denied" : "allowed"}${rule ? ` (${rule})` : ""}${reason ? ` — ${reason}` : ""}`);
  }
  const error = field(entry, "error");
  if (error !== undefined) lines.push(`  error:    ${compact(error)}`);
  const commit = field(entry, "git_commit", "checkpoint");
  if (commit !== undefined) lines.push(`  checkpoint: ${asText(commit)}`);
  const sandbox = field(entry, "sandbox");
  if (sandbox !== undefined) lines.push(`  sandbox:  ${compact(sandbox, 80)}`);
  return lines.join("\n");
}

/**
 * The whole tool log view. The server returns entries oldest first (append order); the view shows
 * them newest first, because the question is nearly always "what did it just do?".
 */
export function formatToolLog(entries: AuditEntry[], filter: LogFilter = {}): string {
  const shown = entries.filter((e) => matchesFilter(e, filter)).reverse();
  const header = [
    `Tether tool log — ${describeFilter(filter)} — ${shown.length} of ${entries.length} entries, newest first`,
    "=".repeat(78),
    "",
  ];
  if (shown.length === 0) return header.concat(["(no entries)"]).join("\n") + "\n";
  return header.concat(shown.map(formatEntry).join("\n\n")).join("\n") + "\n";
}

// --- rollback -----------------------------------------------------------------------------------

/** `2026-11-22T08:40:00.152+00:00` → `2026-11-22 08:40:00` (anything else is shown as it is). */
export function shortTime(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]}` : iso;
}

/** `2 restored, 1 deleted` — the size of a rollback, for the quick pick. */
export function rollbackCounts(plan: Pick<RollbackResult, "restored" | "deleted" | "created">): string {
  const parts: string[] = [];
  if (plan.restored.length) parts.push(`${plan.restored.length} restored`);
  if (plan.deleted.length) parts.push(`${plan.deleted.length} deleted`);
  if (plan.created.length) parts.push(`${plan.created.length} re-created`);
  return parts.length ? parts.join(", ") : "no file changes";
}

/** The files a rollback would touch, one line, for the quick pick's detail. */
export function rollbackFiles(plan: Pick<RollbackResult, "restored" | "deleted" | "created">, limit = 6): string {
  const files = [
    ...plan.restored.map((f) => `~${f}`),
    ...plan.deleted.map((f) => `-${f}`),
    ...plan.created.map((f) => `+${f}`),
  ];
  if (files.length === 0) return "the workspace already matches this checkpoint";
  const shown = files.slice(0, limit).join("  ");
  return files.length > limit ? `${shown}  … and ${files.length - limit} more` : shown;
}

/** The modal confirmation's detail: every file, grouped by what will happen to it. */
export function rollbackConfirmation(checkpoint: Pick<CheckpointInfo, "id" | "time" | "tool">, plan: Pick<RollbackResult, "restored" | "deleted" | "created">): string {
  const lines = [`Checkpoint ${checkpoint.id} (${shortTime(checkpoint.time)}, before ${checkpoint.tool}).`];
  const group = (title: string, files: string[]) => {
    if (files.length) lines.push(`${title}:`, ...files.map((f) => `  ${f}`));
  };
  group("Restored", plan.restored);
  group("Deleted", plan.deleted);
  group("Re-created", plan.created);
  lines.push("The present state is checkpointed first, so this rollback can itself be rolled back.");
  return lines.join("\n");
}

// --- command results ----------------------------------------------------------------------------

/** A sandboxed command's result as a readable document. */
export function formatCommandResult(command: string, gate: GateResult): string {
  const r = gate.result;
  const lines = [`$ ${command}`, ""];
  if (!gate.ok || gate.dryRun) {
    lines.push(gate.dryRun ? "(dry run: nothing was executed)" : "(not run)");
    if (gate.text) lines.push(gate.text);
    const decision = gate.decision;
    if (decision && decision.reason) lines.push(`reason: ${asText(decision.reason)}`);
    return lines.join("\n") + "\n";
  }
  if (typeof r.stdout === "string" && r.stdout) lines.push(r.stdout.replace(/\n$/, ""));
  if (typeof r.stderr === "string" && r.stderr) lines.push("--- stderr ---", r.stderr.replace(/\n$/, ""));
  const exit = r.exit_code ?? r.exitCode;
  const ms = r.duration_ms ?? r.durationMs;
  lines.push("", `exit code ${asText(exit)}${ms !== undefined ? ` · ${asText(ms)} ms` : ""}${r.timed_out ? " · timed out" : ""}`);
  for (const warning of gate.warnings) lines.push(`warning: ${warning}`);
  return lines.join("\n") + "\n";
}

/** A policy decision as one sentence (for Check Command…). */
export function formatCheck(command: string, check: CheckCommandResult): string {
  const verdict = check.allowed ? "Allowed" : "Denied";
  let text = `${verdict}: \`${command}\` — ${check.reason} [${check.rule}]`;
  if (!check.allowed && check.suggestion) text += ` Suggestion: ${check.suggestion}`;
  return text;
}
