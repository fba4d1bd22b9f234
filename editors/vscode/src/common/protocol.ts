/**
 * The shapes of Tether's LSP commands and notifications, as documented in docs/lsp.md.
 *
 * Why a separate module: the client code and the unit tests both need these types, and none of them
 * depends on `vscode`, so the pure helpers stay testable under Node's test runner.
 */

/** Every server command id (docs/lsp.md "Commands"). Each takes exactly one JSON object argument. */
export const SERVER_COMMANDS = [
  "tether.status",
  "tether.ask",
  "tether.runTool",
  "tether.proposals",
  "tether.proposal",
  "tether.diff",
  "tether.accept",
  "tether.reject",
  "tether.rollback",
  "tether.checkpoints",
  "tether.toolLog",
  "tether.setPermissions",
  "tether.checkCommand",
  "tether.explain",
  "tether.allowSecret",
  "tether.cancel",
  "tether.conversations",
  "tether.conversation",
] as const;
export type ServerCommand = (typeof SERVER_COMMANDS)[number];

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

export type HunkState = "pending" | "accepted" | "rejected";
export type ProposalState = "pending" | "accepted" | "partially_accepted" | "rejected" | "stale";

export interface Hunk {
  index: number;
  header: string;
  state: HunkState;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** 0-based, in the current buffer; covers only the replaced lines. Empty for a pure insertion. */
  range: Range;
  removed: string[];
  added: string[];
  diff: string;
}

export interface Proposal {
  id: string;
  path: string;
  uri: string;
  state: ProposalState;
  reason: string;
  created: string;
  hunks: Hunk[];
}

export interface StatusResult {
  version: string;
  workspace: string | null;
  permissions: string;
  sandbox: string;
  pendingProposals: number;
  model: string | null;
  apiKeyPresent: boolean;
  checkpointsEnabled: boolean;
  /** Restricted Mode (initializationOptions.readOnly): nothing runs or is written. */
  readOnly?: boolean;
}

export interface GateResult {
  tool: string;
  ok: boolean;
  dryRun: boolean;
  isError: boolean;
  result: Record<string, unknown>;
  text: string;
  decision: Record<string, unknown> | null;
  checkpoint: string | null;
  proposalId: string | null;
  warnings: string[];
}

export interface RunToolResult {
  result: GateResult;
  proposal?: Proposal | null;
}

export interface ProposalDetail {
  proposal: Proposal;
  baseContent: string;
  proposedContent: string;
}

export interface AcceptResult {
  proposal: Proposal;
  applied: number[];
  checkpoint: string | null;
  /** `editor`: through workspace/applyEdit into the open buffer; `disk`: written by the gate. */
  appliedVia?: "editor" | "disk";
  warnings?: string[];
}

export interface RejectResult {
  proposal: Proposal;
  rejected: number[];
}

export interface CheckpointInfo {
  id: string;
  time: string;
  tool: string;
  message: string;
  files: string[];
}

export interface RollbackResult {
  restored: string[];
  deleted: string[];
  created: string[];
  target: unknown;
  checkpoint: unknown;
  dryRun?: boolean;
  /** Open buffers the server replaced with the restored disk content. */
  buffersUpdated?: string[];
}

export interface CheckCommandResult {
  allowed: boolean;
  rule: string;
  reason: string;
  suggestion: string | null;
  segments: string[][];
}

export interface AskResult {
  text: string;
  conversationId: string;
  stopReason: string;
  toolCalls: Array<Record<string, unknown>>;
  usage: Record<string, unknown>;
  cost: number;
}

/** One audit-log entry; the server owns the exact shape, so every field is optional here. */
export type AuditEntry = Record<string, unknown>;

/** `tether/event` notification parameters. */
export interface TetherEvent {
  tool: string;
  decision: unknown;
  state: string;
  proposalId?: string;
  checkpoint?: string;
}
