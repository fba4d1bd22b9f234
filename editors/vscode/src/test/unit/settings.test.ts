import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  DEFAULTS,
  type SettingsSource,
  canonicalPermissions,
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
    const { settings, problems } = resolveSettings(source({}));
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
    const { settings, problems } = resolveSettings(
      source({ permissions: "root", sandbox: "docker", commandTimeout: 0, maxCost: -1 }),
    );
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

  test("timeout bounds are inclusive, non-numbers rejected", () => {
    assert.equal(resolveSettings(source({ commandTimeout: 600 })).settings.commandTimeout, 600);
    assert.equal(resolveSettings(source({ commandTimeout: 1 })).settings.commandTimeout, 1);
    assert.equal(resolveSettings(source({ commandTimeout: 601 })).problems.length, 1);
    assert.equal(resolveSettings(source({ commandTimeout: "30" })).problems.length, 1);
    assert.equal(resolveSettings(source({ commandTimeout: Number.NaN })).problems.length, 1);
  });

  test("valid values are kept and permissions canonicalised", () => {
    const { settings, problems } = resolveSettings(
      source({ permissions: "write,read", sandbox: "bubblewrap", commandTimeout: 5, model: " claude-x ", maxCost: 0.5 }),
    );
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
  test("an interpreter setting means python -m tether", () => {
    const line = resolveServerCommand({ ...DEFAULTS, interpreter: "/venv/bin/python" }, () => "/usr/bin/tether");
    assert.deepEqual(line, { command: "/venv/bin/python", args: ["-m", "tether", "serve"], origin: "tether.server.interpreter" });
  });
  test("else python3 -m tether", () => {
    assert.deepEqual(resolveServerCommand(DEFAULTS, none), { command: "python3", args: ["-m", "tether", "serve"], origin: "python3" });
  });
});

describe("initializationOptions and environment", () => {
  test("only what the user set is sent; the server's config file decides the rest", () => {
    assert.deepEqual(initializationOptions(resolveSettings(source({}))), {});
    const set = resolveSettings(source({ permissions: "write,read", sandbox: "firejail", commandTimeout: 9, model: "claude-x", maxCost: 2 }));
    assert.deepEqual(initializationOptions(set), { permissions: "read,write", sandbox: "firejail", commandTimeout: 9, model: "claude-x", maxCost: 2 });
  });

  test("invalid settings are not sent (the server keeps its default)", () => {
    const bad = resolveSettings(source({ permissions: "root", commandTimeout: 0, sandbox: "bubblewrap" }));
    assert.deepEqual(initializationOptions(bad), { sandbox: "bubblewrap" });
  });

  test("the session's permission mode survives restarts and wins over the setting", () => {
    const set = resolveSettings(source({ permissions: "all" }));
    assert.deepEqual(initializationOptions(set, "read"), { permissions: "read" });
    assert.deepEqual(initializationOptions(resolveSettings(source({})), "none"), { permissions: "none" });
  });

  test("the API key never goes into initializationOptions", () => {
    const opts = initializationOptions(resolveSettings(source({ model: "m" }))) as Record<string, unknown>;
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
