/**
 * Settings: read, validate, and turn into the server's command line and initializationOptions.
 *
 * Pure (no `vscode` 
 * `workspace.getConfiguration("tether")`, the unit tests pass a plain object. Why the server program
 * is read from *user* settings only: a repository's `.vscode/settings.json` must never choose the
 * program that enforces its own policy (package.json also marks both settings `machine`-scoped and
 * restricted in untrusted workspaces; this is the third, independent guard).
 */

import { API_KEY_ENV } from "./constants";

export const PERMISSION_WORDS = ["read", "write", "command"] as const;
export type PermissionWord = (typeof PERMISSION_WORDS)[number];
export const SANDBOX_BACKENDS = ["auto", "bubblewrap", "firejail", "landlock", "none"] as const;
export type SandboxBackend = (typeof SANDBOX_BACKENDS)[number];

/** The permission presets offered by Set Permission Mode, in the order of package.json's enum. */
export const PERMISSION_PRESETS = [
  "none",
  "read",
  "write",
  "command",
  "read,write",
  "read,command",
  "write,command",
  "all",
] as const;
export type PermissionPreset = (typeof PERMISSION_PRESETS)[number];

/** What each preset lets the agent do; a unit test keeps these equal to package.json's enumDescriptions. */
export const PERMISSION_DESCRIPTIONS: Record<PermissionPreset, string> = {
  none: "Every tool call is a dry run: edits become proposals you review, commands only show what would run.",
  read: "Read and search files; edits stay proposals, commands are previews.",
  write: "Apply edits directly (checkpointed first); commands are previews.",
  command: "Run allowed commands in the sandbox; edits stay proposals.",
  "read,write": "Read, and apply edits directly (checkpointed first).",
  "read,command": "Read, and run allowed commands in the sandbox; edits stay proposals you review.",
  "write,command": "Apply edits and run allowed commands in the sandbox.",
  all: "Read, apply edits and run allowed commands: everything, still inside the policy and the sandbox.",
};

export interface TetherSettings {
  serverPath: string;
  interpreter: string;
  permissions: string;
  sandbox: SandboxBackend;
  commandTimeout: number;
  model: string;
  maxCost: number;
}

/** Defaults; a unit test keeps them equal to package.json's. */
export const DEFAULTS: TetherSettings = {
  serverPath: "",
  interpreter: "",
  permissions: "none",
  sandbox: "auto",
  commandTimeout: 30,
  model: "",
  maxCost: 0,
};

/** The setting keys (below `tether.`) behind each field. */
export const SETTING_KEYS: Record<keyof TetherSettings, string> = {
  serverPath: "server.path",
  interpreter: "server.interpreter",
  permissions: "permissions",
  sandbox: "sandbox",
  commandTimeout: "commandTimeout",
  model: "model",
  maxCost: "maxCost",
};

export interface InspectResult {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The slice of `WorkspaceConfiguration` the resolver needs. */
export interface SettingsSource {
  get(key: string): unknown;
  inspect(key: string): InspectResult | undefined;
}

export interface ResolvedSettings {
  settings: TetherSettings;
  /** Human-readable problems with the user's values; each falls back to its default. */
  problems: string[];
  /**
   * The settings the user actually set (valid, in any scope). Only these are sent to the server:
   * an unset VS Code setting must not override the user's Tether config file with our default.
   */
  explicit: ReadonlySet<keyof TetherSettings>;
}

function isSet(source: SettingsSource, key: string): boolean {
  const i = source.inspect(key);
  return i !== undefined && (i.globalValue !== undefined || i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
}

/**
 * Parse `none`, `all`, `read`, `read,write`, `write+read`… into the canonical spelling used by the
 * server (`none`, `all`, or the words in read/write/command order). Throws on anything else: an
 * unknown word is an error, never silently "none".
 */
export function canonicalPermissions(text: string): string {
  const words = text
    .replace(/\+/g, ",")
    .split(",")
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w.length > 0);
  const granted = new Set<PermissionWord>();
  for (const word of words) {
    if (word === "none") continue;
    if (word === "all") {
      PERMISSION_WORDS.forEach((p) => granted.add(p));
    } else if ((PERMISSION_WORDS as readonly string[]).includes(word)) {
      granted.add(word as PermissionWord);
    } else {
      throw new Error(`unknown permission '${word}': use none, read, write, command, all, or a comma list`);
    }
  }
  if (granted.size === 0) return "none";
  if (granted.size === PERMISSION_WORDS.length) return "all";
  return PERMISSION_WORDS.filter((p) => granted.has(p)).join(",");
}

function userString(source: SettingsSource, key: string): string {
  const value = source.inspect(key)?.globalValue;
  return typeof value === "string" ? value.trim() : "";
}

/** Read and validate every setting; invalid values are reported and replaced by defaults. */
export function resolveSettings(source: SettingsSource): ResolvedSettings {
  const problems: string[] = [];
  const settings: TetherSettings = { ...DEFAULTS };
  settings.serverPath = userString(source, SETTING_KEYS.serverPath);
  settings.interpreter = userString(source, SETTING_KEYS.interpreter);

  const perms = source.get(SETTING_KEYS.permissions);
  if (perms !== undefined && perms !== null) {
    try {
      settings.permissions = canonicalPermissions(typeof perms === "string" ? perms : JSON.stringify(perms));
    } catch (err) {
      problems.push(`tether.permissions: ${(err as Error).message}; using 'none'`);
    }
  }

  const sandbox = source.get(SETTING_KEYS.sandbox);
  if (sandbox !== undefined && sandbox !== null) {
    if ((SANDBOX_BACKENDS as readonly unknown[]).includes(sandbox)) {
      settings.sandbox = sandbox as SandboxBackend;
    } else {
      problems.push(`tether.sandbox: ${JSON.stringify(sandbox)} is not one of ${SANDBOX_BACKENDS.join(", ")}; using 'auto'`);
    }
  }

  const timeout = source.get(SETTING_KEYS.commandTimeout);
  if (timeout !== undefined && timeout !== null) {
    if (typeof timeout === "number" && Number.isFinite(timeout) && timeout >= 1 && timeout <= 600) {
      settings.commandTimeout = timeout;
    } else {
      problems.push(`tether.commandTimeout: ${JSON.stringify(timeout)} is not a number of seconds from 1 to 600; using ${DEFAULTS.commandTimeout}`);
    }
  }

  const model = source.get(SETTING_KEYS.model);
  if (typeof model === "string") settings.model = model.trim();

  const maxCost = source.get(SETTING_KEYS.maxCost);
  if (maxCost !== undefined && maxCost !== null) {
    if (typeof maxCost === "number" && Number.isFinite(maxCost) && maxCost >= 0) {
      settings.maxCost = maxCost;
    } else {
      problems.push(`tether.maxCost: ${JSON.stringify(maxCost)} is not a non-negative number of dollars; using the server's default`);
    }
  }
  const explicit = new Set<keyof TetherSettings>();
  for (const field of ["permissions", "sandbox", "commandTimeout", "model", "maxCost"] as const) {
    const invalid = problems.some((p) => p.startsWith(`tether.${SETTING_KEYS[field]}:`));
    if (isSet(source, SETTING_KEYS[field]) && !invalid) explicit.add(field);
  }
  return { settings, problems, explicit };
}

export interface ServerCommandLine {
  command: string;
  args: string[];
  /** Where the command came from, for the logs and the error message. */
  origin: "tether.server.path" | "PATH" | "tether.server.interpreter" | "python3";
}

/**
 * How to start `tether serve`: `tether.server.path`, else `tether` on PATH, else
 * `<interpreter> -m tether serve` (interpreter defaulting to `python3`).
 * `which` looks a program up on PATH and returns its absolute path or null.
 */
export function resolveServerCommand(settings: TetherSettings, which: (name: string) => string | null): ServerCommandLine {
  if (settings.serverPath) {
    return { command: settings.serverPath, args: ["serve"], origin: "tether.server.path" };
  }
  if (!settings.interpreter) {
    const onPath = which("tether");
    if (onPath) return { command: onPath, args: ["serve"], origin: "PATH" };
    return { command: "python3", args: ["-m", "tether", "serve"], origin: "python3" };
  }
  return { command: settings.interpreter, args: ["-m", "tether", "serve"], origin: "tether.server.interpreter" };
}

export interface InitializationOptions {
  permissions?: string;
  sandbox?: SandboxBackend;
  commandTimeout?: number;
  model?: string;
  maxCost?: number;
}

/**
 * The server's initializationOptions (docs/lsp.md): only what the user set in VS Code, so the
 * server's own config file decides the rest. The API key is deliberately NOT here: it goes to the
 * server process's environment, so LSP traces of `initialize` can never contain it.
 * `sessionPermissions` (from Set Permission Mode) wins over the setting so a restart keeps it.
 */
export function initializationOptions(resolved: Pick<ResolvedSettings, "settings" | "explicit">, sessionPermissions?: string): InitializationOptions {
  const { settings, explicit } = resolved;
  const options: InitializationOptions = {};
  if (sessionPermissions !== undefined) options.permissions = sessionPermissions;
  else if (explicit.has("permissions")) options.permissions = settings.permissions;
  if (explicit.has("sandbox")) options.sandbox = settings.sandbox;
  if (explicit.has("commandTimeout")) options.commandTimeout = settings.commandTimeout;
  if (explicit.has("model") && settings.model) options.model = settings.model;
  if (explicit.has("maxCost") && settings.maxCost > 0) options.maxCost = settings.maxCost;
  return options;
}

/** The environment of the server process: the editor's, plus the API key when one is stored. */
export function serverEnvironment(base: Record<string, string | undefined>, apiKey: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    if (value !== undefined) env[key] = value;
  }
  if (apiKey) env[API_KEY_ENV] = apiKey;
  return env;
}

/** True when a configuration change needs a server restart (every Tether setting is read at start). */
export function needsRestart(event: { affectsConfiguration(section: string): boolean }): boolean {
  return event.affectsConfiguration("tether");
}
