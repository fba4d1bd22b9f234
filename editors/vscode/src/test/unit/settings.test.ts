import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  DEFAULTS,
  SETTING_KEYS,
  type SettingsSource,
  TRUST,
  canonicalPermissions,
  hasWorkspaceMode,
  initializationOptions,
  needsRestart,
  resolveServerCommand,
  resolveSettings,
  serverEnvironment,
} from "../../common/settings";

/** A settings source with separate user (global) and effective values, like VS Code's. */
function source(effective: Record<string, unknown>, user: Record<string, unknown> = {}): SettingsSource {
  return {
    get: (key) => effective[key],
    // Effective values not in `user` come from the workspace (a repository's .vscode/settings.json).
    inspect: (key) => ({ globalValue: user[key], workspaceValue: key in user ? undefined : effective[key] }),
  };
}

/** Values the user set in their own (global) settings. */
function mine(values: Record<string, unknown>): SettingsSource {
  return source(values, values);
}

/** User values, plus workspace (`.vscode/settings.json`) and folder values of a repository. */
function layered(user: Record<string, unknown>, workspace: Record<string, unknown>, folder: Record<string, unknown> = {}): SettingsSource {
  return {
    get: (key) => folder[key] ?? workspace[key] ?? user[key],
    inspect: (key) => ({ globalValue: user[key], workspaceValue: workspace[key], workspaceFolderValue: folder[key] }),
  };
}

describe("canonicalPermissions", () => {
  test("canonical spellings, any order, + as separator", () => {
    assert.equal(canonicalPermissions("none"), "none");
    assert.equal(canonicalPermissions(""), "none");
    assert.equal(canonicalPermissions("write,read"), "read,write");
    assert.equal(canonicalPermissions(" Command + READ "), "read,command");
    assert.equal(canonicalPermissions("read,write,command"), "all");
    assert.equal(canonicalPermissions("all,none"), "all");
  });

  test("unknown words are errors, never silently none", () => {
    assert.throws(() => canonicalPermissions("rw"), /unknown permission 'rw'/);
    assert.throws(() => canonicalPermissions("read,sudo"), /unknown permission 'sudo'/);
  });
});

describe("resolveSettings", () => {
  test("defaults when nothing is set", () => {
    const { settings, problems } = resolveSettings(mine({}));
    assert.deepEqual(settings, DEFAULTS);
    assert.deepEqual(problems, []);
  });

  test("server path and interpreter come from user settings only", () => {
    // A repository's .vscode/settings.json shows up in the effective value, never in globalValue.
    const repo = source({ "server.path": "/tmp/evil/tether", "server.interpreter": "/tmp/evil/python" });
    const { settings } = resolveSettings(repo);
    assert.equal(settings.serverPath, "");
    assert.equal(settings.interpreter, "");
    const user = source({}, { "server.path": " /opt/tether/bin/tether ", "server.interpreter": "/usr/bin/python3" });
    assert.equal(resolveSettings(user).settings.serverPath, "/opt/tether/bin/tether");
    assert.equal(resolveSettings(user).settings.interpreter, "/usr/bin/python3");
  });

  test("user server path of the wrong type is ignored", () => {
    const { settings } = resolveSettings(source({}, { "server.path": ["tether"] }));
    assert.equal(settings.serverPath, "");
  });

  test("invalid values are reported and fall back to defaults", () => {
    const { settings, problems } = resolveSettings(mine({ permissions: "root", sandbox: "docker", commandTimeout: 0, maxCost: -1 }));
    assert.equal(settings.permissions, "none");
    assert.equal(settings.sandbox, "auto");
    assert.equal(settings.commandTimeout, 30);
    assert.equal(settings.maxCost, 0);
    assert.equal(problems.length, 4);
    assert.match(problems[0], /tether\.permissions: unknown permission 'root'/);
    assert.match(problems[1], /tether\.sandbox: "docker"/);
    assert.match(problems[2], /tether\.commandTimeout: 0/);
    assert.match(problems[3], /tether\.maxCost: -1/);
  });

  test("a repository may only narrow: permissions are intersected with yours, and it says so", () => {
    const all = layered({ permissions: "read" }, { permissions: "all" });
    const resolved = resolveSettings(all, { workspace: "/ws/.vscode/settings.json", folder: "/ws/.vscode/settings.json" });
    assert.equal(resolved.settings.permissions, "read");
    assert.equal(resolved.ignored.length, 1);
    assert.equal(resolved.ignored[0].key, "tether.permissions");
    assert.equal(resolved.ignored[0].file, "/ws/.vscode/settings.json");
    assert.match(resolved.ignored[0].message, /would grant write, command beyond your user setting \(read\)/);
    // unset user value: VS Code's default `none`, so a repository can grant nothing
    const unset = resolveSettings(layered({}, { permissions: "read,command,workspace" }));
    assert.equal(unset.settings.permissions, "none");
    assert.deepEqual(initializationOptions(unset), { approvals: true, chat: true, permissions: "none" });
    // a narrower value is honoured, from the folder too, without a notice
    const narrower = resolveSettings(layered({ permissions: "all" }, { permissions: "read,write" }, { permissions: "read" }));
    assert.equal(narrower.settings.permissions, "read");
    assert.deepEqual(narrower.ignored, []);
  });

  test("a repository cannot choose the sandbox, the model or your spending limit; it may shorten the timeout", () => {
    const repo = layered({ sandbox: "bubblewrap", commandTimeout: 60 }, { sandbox: "none", model: "expensive", maxCost: 99, commandTimeout: 600 }, { commandTimeout: 10 });
    const resolved = resolveSettings(repo);
    assert.equal(resolved.settings.sandbox, "bubblewrap");
    assert.equal(resolved.settings.model, "");
    assert.equal(resolved.settings.maxCost, 0);
    assert.equal(resolved.settings.commandTimeout, 10);
    assert.deepEqual(resolved.ignored.map((i) => i.key).sort(), ["tether.commandTimeout", "tether.maxCost", "tether.model", "tether.sandbox"]);
    assert.deepEqual(initializationOptions(resolved), { approvals: true, chat: true, sandbox: "bubblewrap", commandTimeout: 10 });
  });

  test("every contributed setting is classified for trust", () => {
    assert.deepEqual(Object.keys(TRUST).sort(), Object.keys(SETTING_KEYS).sort());
  });

  test("untrusted workspaces: read-only, and nothing from the settings is sent", () => {
    const set = resolveSettings(mine({ permissions: "all", sandbox: "firejail" }));
    assert.deepEqual(initializationOptions(set, "all", false), { approvals: true, chat: true, readOnly: true });
  });

  test("workspace is granted only by name; all is read,write,command", () => {
    assert.equal(canonicalPermissions("workspace"), "read,command,workspace");
    assert.equal(canonicalPermissions("all,workspace"), "read,write,command,workspace");
    assert.equal(canonicalPermissions("all"), "all");
    assert.equal(hasWorkspaceMode("read,command,workspace"), true);
    assert.equal(hasWorkspaceMode("all"), false);
  });

  test("timeout bounds are inclusive, non-numbers rejected", () => {
    assert.equal(resolveSettings(mine({ commandTimeout: 600 })).settings.commandTimeout, 600);
    assert.equal(resolveSettings(mine({ commandTimeout: 1 })).settings.commandTimeout, 1);
    assert.equal(resolveSettings(mine({ commandTimeout: 601 })).problems.length, 1);
    assert.equal(resolveSettings(mine({ commandTimeout: "30" })).problems.length, 1);
    assert.equal(resolveSettings(mine({ commandTimeout: Number.NaN })).problems.length, 1);
  });

  test("valid values are kept and permissions canonicalised", () => {
    const { settings, problems } = resolveSettings(mine({ permissions: "write,read", sandbox: "bubblewrap", commandTimeout: 5, model: " claude-x ", maxCost: 0.5 }));
    assert.deepEqual(problems, []);
    assert.equal(settings.permissions, "read,write");
    assert.equal(settings.sandbox, "bubblewrap");
    assert.equal(settings.commandTimeout, 5);
    assert.equal(settings.model, "claude-x");
    assert.equal(settings.maxCost, 0.5);
  });
});

describe("resolveServerCommand", () => {
  const none = () => null;
  test("tether.server.path wins", () => {
    const line = resolveServerCommand({ ...DEFAULTS, serverPath: "/opt/t/tether", interpreter: "/usr/bin/python3" }, () => "/usr/bin/tether");
    assert.deepEqual(line, { command: "/opt/t/tether", args: ["serve"], origin: "tether.server.path" });
  });
  test("then tether on PATH", () => {
    const line = resolveServerCommand(DEFAULTS, (name) => (name === "tether" ? "/usr/local/bin/tether" : null));
    assert.deepEqual(line, { command: "/usr/local/bin/tether", args: ["serve"], origin: "PATH" });
  });
  test("an interpreter setting means python -P -m tether (the workspace folder is not imported)", () => {
    const line = resolveServerCommand({ ...DEFAULTS, interpreter: "/venv/bin/python" }, () => "/usr/bin/tether");
    assert.deepEqual(line, { command: "/venv/bin/python", args: ["-P", "-m", "tether", "serve"], origin: "tether.server.interpreter" });
  });
  test("else python3 -P -m tether, by the absolute path found on PATH", () => {
    const line = resolveServerCommand(DEFAULTS, (name) => (name === "python3" ? "/usr/bin/python3" : null));
    assert.deepEqual(line, { command: "/usr/bin/python3", args: ["-P", "-m", "tether", "serve"], origin: "python3" });
    assert.deepEqual(resolveServerCommand(DEFAULTS, none), { command: "python3", args: ["-P", "-m", "tether", "serve"], origin: "python3" });
  });
});

describe("initializationOptions and environment", () => {
  test("the server's PATH keeps absolute entries only: a relative one is the workspace folder", () => {
    const env = serverEnvironment({ PATH: "/usr/local/bin::.:bin:/usr/bin" }, undefined);
    assert.equal(env.PATH, "/usr/local/bin:/usr/bin");
  });
  test("only what the user set is sent; the server's config file decides the rest", () => {
    assert.deepEqual(initializationOptions(resolveSettings(mine({}))), { approvals: true, chat: true });
    const set = resolveSettings(mine({ permissions: "write,read", sandbox: "firejail", commandTimeout: 9, model: "claude-x", maxCost: 2 }));
    assert.deepEqual(initializationOptions(set), { approvals: true, chat: true, permissions: "read,write", sandbox: "firejail", commandTimeout: 9, model: "claude-x", maxCost: 2 });
  });

  test("invalid settings are not sent (the server keeps its default)", () => {
    const bad = resolveSettings(mine({ permissions: "root", commandTimeout: 0, sandbox: "bubblewrap" }));
    assert.deepEqual(initializationOptions(bad), { approvals: true, chat: true, sandbox: "bubblewrap" });
  });

  test("the session's permission mode survives restarts and wins over the setting", () => {
    const set = resolveSettings(mine({ permissions: "all" }));
    assert.deepEqual(initializationOptions(set, "read"), { approvals: true, chat: true, permissions: "read" });
    assert.deepEqual(initializationOptions(resolveSettings(mine({})), "none"), { approvals: true, chat: true, permissions: "none" });
  });

  test("the API key never goes into initializationOptions", () => {
    const opts = initializationOptions(resolveSettings(mine({ model: "m" }))) as unknown as Record<string, unknown>;
    assert.equal("apiKey" in opts, false);
  });

  test("the API key goes to the process environment only when set", () => {
    const base = { PATH: "/bin", UNSET: undefined };
    assert.deepEqual(serverEnvironment(base, undefined), { PATH: "/bin" });
    assert.deepEqual(serverEnvironment(base, "sk-test"), { PATH: "/bin", ANTHROPIC_API_KEY: "sk-test" });
    assert.equal("ANTHROPIC_API_KEY" in base, false, "the editor's own environment is not modified");
  });

  test("any tether.* change restarts the server, others do not", () => {
    assert.equal(needsRestart({ affectsConfiguration: (s) => s === "tether" }), true);
    assert.equal(needsRestart({ affectsConfiguration: () => false }), false);
  });
});
