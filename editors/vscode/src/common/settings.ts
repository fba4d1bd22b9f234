/**
 * Settings: read, validate, and turn into the server's command line and initializationOptions.
 *
 * Pure (no `vscode` 
 * `workspace.getConfiguration("tether")`, the unit tests pass a plain object. Why the server program
 * is read from *user* settings only: a repository's `.vscode/settings.json` must never choose the
 * program that enforces its own policy (package.json also marks both settings `machine`-scoped and
 * restricted in untrusted workspaces; this is the third, independent guard).
 */

import * as path from "path";

import { API_KEY_ENV } from "./constants";

export const PERMISSION_WORDS = ["read", "write", "command", "workspace"] as const;
export type PermissionWord = (typeof PERMISSION_WORDS)[number];
/** What `all` grants: not `workspace`, which is only ever granted by name (docs/policy.md). */
export const ALL_WORDS: readonly PermissionWord[] = ["read", "write", "command"];
/** What `workspace` grants: it includes read and command (the ladder none < read < command < workspace). */
export const WORKSPACE_WORDS: readonly PermissionWord[] = ["read", "command", "workspace"];
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
  "read,command,workspace",
  "read,write,command,workspace",
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
  "read,command,workspace":
    "Workspace mode: any program runs in the sandbox (workspace writable, no network, protected paths read-only, secrets hidden), after a checkpoint; edits stay proposals.",
  "read,write,command,workspace":
    "Workspace mode, and apply edits directly: any program in the sandbox after a checkpoint, edits checkpointed first.",
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
   * The settings actually set (valid, and allowed from where they came). Only these are sent to the
   * server: an unset VS Code setting must not override the user's Tether config file with our default.
   */
  explicit: ReadonlySet<keyof TetherSettings>;
  /** Values from workspace or folder settings that were ignored because they would widen. */
  ignored: IgnoredSetting[];
}

export interface IgnoredSetting {
  key: string;
  /** The file it came from, as `ScopeFiles` names it. */
  file: string;
  value: unknown;
  /** Why, in one phrase, for the notice. */
  message: string;
}

/**
 * How much a repository may say about each setting (issue "One session, one verdict": a layer the
 * repository controls may only narrow). `user`: only your user settings count; `narrow`: a workspace
 * or folder value is used when it is at least as narrow as yours (permissions: a subset; the
 * command timeout: shorter). A unit test keeps every contributed setting classified.
 */
export const TRUST: Record<keyof TetherSettings, "user" | "narrow"> = {
  serverPath: "user",
  interpreter: "user",
  permissions: "narrow",
  sandbox: "user",
  commandTimeout: "narrow",
  model: "user",
  maxCost: "user",
};

/** The files behind the workspace and folder scopes, for the notices (the caller knows them). */
export interface ScopeFiles {
  workspace: string;
  folder: string;
}

export const DEFAULT_SCOPE_FILES: ScopeFiles = {
  workspace: ".vscode/settings.json",
  folder: ".vscode/settings.json of the folder",
};

/** The repository's values of `key`: workspace (or .code-workspace) and folder settings. */
function repositoryValues(source: SettingsSource, key: string, files: ScopeFiles): { file: string; value: unknown }[] {
  const i = source.inspect(key);
  const out: { file: string; value: unknown }[] = [];
  if (i?.workspaceValue !== undefined) out.push({ file: files.workspace, value: i.workspaceValue });
  if (i?.workspaceFolderValue !== undefined) out.push({ file: files.folder, value: i.workspaceFolderValue });
  return out;
}

/**
 * Parse `none`, `all`, `read`, `read,write`, `write+read`, `workspace`… into the canonical spelling
 * used by the server (`none`, `all`, or the words in read/write/command/workspace order; `workspace`
 * grants read and command with it). Throws on anything else: an unknown word is an error, never
 * silently "none".
 */
export function canonicalPermissions(text: string): string {
  return formatPermissions(permissionSet(text));
}

/** The set of permission words a spelling grants (throws on unknown words). */
export function permissionSet(text: string): Set<PermissionWord> {
  const words = text
    .replace(/\+/g, ",")
    .split(",")
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w.length > 0);
  const granted = new Set<PermissionWord>();
  for (const word of words) {
    if (word === "none") continue;
    if (word === "all") {
      ALL_WORDS.forEach((p) => granted.add(p));
    } else if (word === "workspace") {
      WORKSPACE_WORDS.forEach((p) => granted.add(p));
    } else if ((PERMISSION_WORDS as readonly string[]).includes(word)) {
      granted.add(word as PermissionWord);
    } else {
      throw new Error(`unknown permission '${word}': use none, read, write, command, workspace, all, or a comma list`);
    }
  }
  return granted;
}

export function formatPermissions(granted: ReadonlySet<PermissionWord>): string {
  if (granted.size === 0) return "none";
  if (granted.size === ALL_WORDS.length && ALL_WORDS.every((w) => granted.has(w))) return "all";
  return PERMISSION_WORDS.filter((p) => granted.has(p)).join(",");
}

/** Whether the permissions include workspace mode (any program in the sandbox): shown as a warning. */
export function hasWorkspaceMode(permissions: string): boolean {
  try {
    return permissionSet(permissions).has("workspace");
  } catch {
    return false;
  }
}

function userString(source: SettingsSource, key: string): string {
  const value = source.inspect(key)?.globalValue;
  return typeof value === "string" ? value.trim() : "";
}

/**
 * Read and validate every setting; invalid values are reported and replaced by defaults. Values a
 * repository supplies (workspace or folder settings) count only as far as `TRUST` allows; the rest
 * are listed in `ignored` so the editor can say so once.
 */
export function resolveSettings(source: SettingsSource, files: ScopeFiles = DEFAULT_SCOPE_FILES): ResolvedSettings {
  const problems: string[] = [];
  const ignored: IgnoredSetting[] = [];
  const explicit = new Set<keyof TetherSettings>();
  const settings: TetherSettings = { ...DEFAULTS };
  const user = (key: string): unknown => source.inspect(key)?.globalValue;
  const ignoreAll = (field: keyof TetherSettings, why: string): void => {
    for (const { file, value } of repositoryValues(source, SETTING_KEYS[field], files)) {
      if (value === user(SETTING_KEYS[field])) continue;
      ignored.push({ key: `tether.${SETTING_KEYS[field]}`, file, value, message: why });
    }
  };

  settings.serverPath = userString(source, SETTING_KEYS.serverPath);
  settings.interpreter = userString(source, SETTING_KEYS.interpreter);
  for (const field of ["serverPath", "interpreter"] as const) {
    ignoreAll(field, "only your user settings choose the program that enforces the policy");
  }

  // permissions: yours (VS Code's default `none` when unset), narrowed by the repository's
  const userPerms = user(SETTING_KEYS.permissions);
  let granted = new Set<PermissionWord>();
  if (userPerms !== undefined && userPerms !== null) {
    try {
      granted = permissionSet(typeof userPerms === "string" ? userPerms : JSON.stringify(userPerms));
      explicit.add("permissions");
    } catch (err) {
      problems.push(`tether.permissions: ${(err as Error).message}; using 'none'`);
    }
  }
  for (const { file, value } of repositoryValues(source, SETTING_KEYS.permissions, files)) {
    let theirs: Set<PermissionWord>;
    try {
      theirs = permissionSet(typeof value === "string" ? value : JSON.stringify(value));
    } catch (err) {
      problems.push(`tether.permissions in ${file}: ${(err as Error).message}; ignored`);
      continue;
    }
    const wider = [...theirs].filter((w) => !granted.has(w));
    if (wider.length > 0) {
      ignored.push({
        key: "tether.permissions",
        file,
        value,
        message: `it would grant ${wider.join(", ")} beyond your user setting (${formatPermissions(granted)}); a repository may only narrow`,
      });
      granted = new Set([...granted].filter((w) => theirs.has(w)));
    } else {
      granted = theirs;
    }
    explicit.add("permissions");
  }
  settings.permissions = formatPermissions(granted);

  const sandbox = user(SETTING_KEYS.sandbox);
  if (sandbox !== undefined && sandbox !== null) {
    if ((SANDBOX_BACKENDS as readonly unknown[]).includes(sandbox)) {
      settings.sandbox = sandbox as SandboxBackend;
      explicit.add("sandbox");
    } else {
      problems.push(`tether.sandbox: ${JSON.stringify(sandbox)} is not one of ${SANDBOX_BACKENDS.join(", ")}; using 'auto'`);
    }
  }
  ignoreAll("sandbox", "only your user settings choose the sandbox");

  const validTimeout = (t: unknown): t is number => typeof t === "number" && Number.isFinite(t) && t >= 1 && t <= 600;
  const timeout = user(SETTING_KEYS.commandTimeout);
  if (timeout !== undefined && timeout !== null) {
    if (validTimeout(timeout)) {
      settings.commandTimeout = timeout;
      explicit.add("commandTimeout");
    } else {
      problems.push(`tether.commandTimeout: ${JSON.stringify(timeout)} is not a number of seconds from 1 to 600; using ${DEFAULTS.commandTimeout}`);
    }
  }
  for (const { file, value } of repositoryValues(source, SETTING_KEYS.commandTimeout, files)) {
    if (validTimeout(value) && value <= settings.commandTimeout) {
      settings.commandTimeout = value; // shorter: a narrowing
      explicit.add("commandTimeout");
    } else if (value !== user(SETTING_KEYS.commandTimeout)) {
      ignored.push({ key: "tether.commandTimeout", file, value, message: "a repository may only shorten the command timeout" });
    }
  }

  const model = user(SETTING_KEYS.model);
  if (typeof model === "string") {
    settings.model = model.trim();
    explicit.add("model");
  }
  ignoreAll("model", "only your user settings choose the model you pay for");

  const maxCost = user(SETTING_KEYS.maxCost);
  if (maxCost !== undefined && maxCost !== null) {
    if (typeof maxCost === "number" && Number.isFinite(maxCost) && maxCost >= 0) {
      settings.maxCost = maxCost;
      explicit.add("maxCost");
    } else {
      problems.push(`tether.maxCost: ${JSON.stringify(maxCost)} is not a non-negative number of dollars; using the server's default`);
    }
  }
  ignoreAll("maxCost", "only your user settings set your spending limit");
  return { settings, problems, explicit, ignored };
}

export interface ServerCommandLine {
  command: string;
  args: string[];
  /** Where the command came from, for the logs and the error message. */
  origin: "tether.server.path" | "PATH" | "tether.server.interpreter" | "python3";
}

/**
 * How to start `tether serve`: `tether.server.path`, else `tether` on PATH, else
 * `<interpreter> -P -m tether serve` (interpreter defaulting to `python3`). `-P`: the server starts
 * in the workspace folder, and without it Python would import a `tether/` folder the repository (or
 * a command the agent ran) put there, in place of the installed Tether.
 * `which` looks a program up on PATH and returns its absolute path or null.
 */
export function resolveServerCommand(settings: TetherSettings, which: (name: string) => string | null): ServerCommandLine {
  if (settings.serverPath) {
    return { command: settings.serverPath, args: ["serve"], origin: "tether.server.path" };
  }
  if (!settings.interpreter) {
    const onPath = which("tether");
    if (onPath) return { command: onPath, args: ["serve"], origin: "PATH" };
    // By absolute path when found; else the bare name, looked up in the server's PATH, from which
    // `serverEnvironment` drops relative entries (the workspace folder).
    return { command: which("python3") ?? "python3", args: ["-P", "-m", "tether", "serve"], origin: "python3" };
  }
  return { command: settings.interpreter, args: ["-P", "-m", "tether", "serve"], origin: "tether.server.interpreter" };
}

export interface InitializationOptions {
  /** The client answers `tether/approve` with the modal (approve.ts). */
  approvals: true;
  /** The chat view shows agent turns while they run (`tether/turn`). */
  chat: true;
  /** Restricted Mode: the server runs read-only (previews, proposals list, log, checkpoints list). */
  readOnly?: true;
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
export function initializationOptions(
  resolved: Pick<ResolvedSettings, "settings" | "explicit">,
  sessionPermissions?: string,
  trusted = true,
): InitializationOptions {
  const { settings, explicit } = resolved;
  const options: InitializationOptions = { approvals: true, chat: true };
  if (!trusted) {
    options.readOnly = true; // nothing else from settings a repository may have written
    return options;
  }
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
  // Relative PATH entries (an empty one means ".") resolve against the workspace folder, where the
  // server starts: Node's lookup of the command, and every program the server runs, would find a
  // repository's `python3` or `git` there. Only absolute entries are kept.
  if (env.PATH !== undefined) env.PATH = env.PATH.split(path.delimiter).filter((dir) => path.isAbsolute(dir)).join(path.delimiter);
  return env;
}

/** True when a configuration change needs a server restart (every Tether setting is read at start). */
export function needsRestart(event: { affectsConfiguration(section: string): boolean }): boolean {
  return event.affectsConfiguration("tether");
}
