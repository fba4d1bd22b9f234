// Keeps package.json, the TypeScript constants and docs/lsp.md from drifting apart.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import { COMMAND_TITLES, COMMANDS } from "../../common/constants";
import { SERVER_COMMANDS } from "../../common/protocol";
import { DEFAULTS, PERMISSION_DESCRIPTIONS, PERMISSION_PRESETS, SANDBOX_BACKENDS, SETTING_KEYS } from "../../common/settings";

const root = path.resolve(__dirname, "../../..");

interface Contributed {
  command: string;
  title: string;
  category: string;
}
interface Setting {
  default: unknown;
  scope?: string;
  enum?: string[];
  enumDescriptions?: string[];
  markdownDescription?: string;
  description?: string;
}
interface Manifest {
  engines: { vscode: string };
  main: string;
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: { commands: Contributed[]; configuration: { properties: Record<string, Setting> } };
  devDependencies: Record<string, string>;
}
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as Manifest;
const properties = manifest.contributes.configuration.properties;

describe("package.json", () => {
  test("contributes exactly the commands the extension registers, all in category Tether", () => {
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(contributed, Object.values(COMMANDS).sort());
    for (const c of manifest.contributes.commands) {
      assert.equal(c.category, "Tether", c.command);
      assert.equal(c.title, COMMAND_TITLES[c.command as keyof typeof COMMAND_TITLES], c.command);
    }
  });

  test("no client command shadows a server command (the language client registers those)", () => {
    const server = new Set<string>(SERVER_COMMANDS);
    for (const id of Object.values(COMMANDS)) assert.equal(server.has(id), false, id);
  });

  test("setting defaults equal the resolver's defaults", () => {
    for (const [field, key] of Object.entries(SETTING_KEYS)) {
      const setting = properties[`tether.${key}`];
      assert.ok(setting, `tether.${key} is contributed`);
      assert.deepEqual(setting.default, DEFAULTS[field as keyof typeof DEFAULTS], `tether.${key}`);
    }
    assert.equal(Object.keys(properties).length, Object.keys(SETTING_KEYS).length);
  });

  test("every setting has a scope and a description; enums have enumDescriptions", () => {
    for (const [name, setting] of Object.entries(properties)) {
      assert.ok(setting.scope, `${name} scope`);
      assert.ok(setting.markdownDescription ?? setting.description, `${name} description`);
      if (setting.enum) assert.equal(setting.enumDescriptions?.length, setting.enum.length, `${name} enumDescriptions`);
    }
  });

  test("permission and sandbox enums match the code", () => {
    assert.deepEqual(properties["tether.permissions"].enum, [...PERMISSION_PRESETS]);
    assert.deepEqual(properties["tether.permissions"].enumDescriptions, PERMISSION_PRESETS.map((p) => PERMISSION_DESCRIPTIONS[p]));
    assert.deepEqual(properties["tether.sandbox"].enum, [...SANDBOX_BACKENDS]);
  });

  test("a repository cannot choose the server program", () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, "limited");
    for (const key of ["tether.server.path", "tether.server.interpreter"]) {
      assert.ok(trust.restrictedConfigurations.includes(key), `${key} restricted`);
      assert.equal(properties[key].scope, "machine", `${key} is machine-scoped (not settable per workspace)`);
    }
  });

  test("TypeScript is pinned to 5.x and @types/vscode does not exceed the engine", () => {
    assert.match(manifest.devDependencies.typescript, /^\^?5\./);
    const engine = manifest.engines.vscode.replace(/^\^/, "");
    assert.equal(manifest.devDependencies["@types/vscode"], engine);
    assert.equal(manifest.main, "./dist/extension.js");
  });
});

describe("docs/lsp.md", () => {
  test("lists exactly the server commands the client knows", () => {
    const doc = fs.readFileSync(path.resolve(root, "../../docs/lsp.md"), "utf8");
    const documented = [...doc.matchAll(/^\| `(tether\.[A-Za-z]+)` \|/gm)].map((m) => m[1]).sort();
    assert.deepEqual(documented, [...SERVER_COMMANDS].sort());
  });
});
