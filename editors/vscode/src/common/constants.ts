/** Names shared by every module. One source of truth, checked against package.json by a unit test. */

export const EXTENSION_NAME = "Tether";
export const CONFIG_SECTION = "tether";
export const CLIENT_ID = "tether";

/** Scheme of the read-only proposed-content documents shown on the right of the diff editor. */
export const PROPOSAL_SCHEME = "tether-proposal";
/** Scheme of the read-only views (tool log, agent answers, command output). */
export const VIEW_SCHEME = "tether-view";

/** SecretStorage key of the Anthropic API key (never written to settings.json). */
export const API_KEY_SECRET = "tether.anthropicApiKey";
/** Environment variable the server (and Anthropic's SDK) reads the key from. */
export const API_KEY_ENV = "ANTHROPIC_API_KEY";

/** Client-side commands contributed in package.json. None may collide with a server command id. */
/** The chat webview view (package.json `contributes.views`); `<id>.focus` reveals it. */
export const CHAT_VIEW_ID = "tether.chat";

export const COMMANDS = {
  askAgent: "tether.askAgent",
  openChat: "tether.openChat",
  showProposalDiff: "tether.showProposalDiff",
  acceptProposal: "tether.acceptProposal",
  rejectProposal: "tether.rejectProposal",
  acceptHunk: "tether.acceptHunk",
  rejectHunk: "tether.rejectHunk",
  reviewInRefactorPreview: "tether.reviewInRefactorPreview",
  rollback: "tether.rollbackPick",
  showToolLog: "tether.showToolLog",
  setPermissionMode: "tether.setPermissionMode",
  runInSandbox: "tether.runInSandbox",
  checkCommand: "tether.checkCommandPrompt",
  runToolJson: "tether.runToolJson",
  allowSecretFile: "tether.allowSecretFile",
  setApiKey: "tether.setApiKey",
  restart: "tether.restart",
  showLogs: "tether.showLogs",
} as const;
export type CommandId = (typeof COMMANDS)[keyof typeof COMMANDS];

/** Palette titles (category "Tether"), as in package.json; used in error messages too. */
export const COMMAND_TITLES: Record<CommandId, string> = {
  [COMMANDS.askAgent]: "Ask Agent…",
  [COMMANDS.openChat]: "Open Chat",
  [COMMANDS.showProposalDiff]: "Show Proposal Diff",
  [COMMANDS.acceptProposal]: "Accept Proposal",
  [COMMANDS.rejectProposal]: "Reject Proposal",
  [COMMANDS.acceptHunk]: "Accept Hunk",
  [COMMANDS.rejectHunk]: "Reject Hunk",
  [COMMANDS.reviewInRefactorPreview]: "Review in Refactor Preview",
  [COMMANDS.rollback]: "Rollback…",
  [COMMANDS.showToolLog]: "Show Tool Log",
  [COMMANDS.setPermissionMode]: "Set Permission Mode",
  [COMMANDS.runInSandbox]: "Run Command in Sandbox…",
  [COMMANDS.checkCommand]: "Check Command…",
  [COMMANDS.runToolJson]: "Run Tool (JSON)…",
  [COMMANDS.allowSecretFile]: "Allow Secret File…",
  [COMMANDS.setApiKey]: "Set Anthropic API Key",
  [COMMANDS.restart]: "Restart Server",
  [COMMANDS.showLogs]: "Show Server Logs",
};

/** How many audit entries the tool log fetches. */
export const TOOL_LOG_LIMIT = 500;
/** How many checkpoints Rollback… previews (each preview is one dry-run request). */
export const ROLLBACK_PREVIEW_LIMIT = 15;
