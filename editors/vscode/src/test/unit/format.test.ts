import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  formatCheck,
  formatCommandResult,
  formatToolLog,
  outcomeOf,
  rollbackConfirmation,
  rollbackCounts,
  rollbackFiles,
  shortTime,
  statusText,
  toolsInLog,
} from "../../common/format";
import type { AuditEntry, GateResult } from "../../common/protocol";

const entries: AuditEntry[] = [
  { timestamp: "2026-11-22T10:00:00Z", tool: "read_file", input: { path: "a.py" }, success: true, dry_run: false, duration_ms: 3 },
  {
    timestamp: "2026-11-22T10:01:00Z",
    tool: "bash_command",
    input: { command: "curl x" },
    success: false,
    dry_run: false,
    error: "Command 'curl' is not in the allowed list",
    decision: { allowed: false, rule: "deny.not_allowed", reason: "curl is not allowed" },
  },
  { timestamp: "2026-11-22T10:02:00Z", tool: "write_file", input: { path: "a.py" }, success: true, dry_run: true },
  { timestamp: "2026-11-22T10:03:00Z", tool: "bash_command", input: { command: "false" }, success: false, dry_run: false, git_commit: "c-1" },
];

describe("tool log", () => {
  test("outcomes: denied beats dry run beats success", () => {
    assert.deepEqual(entries.map(outcomeOf), ["ok", "denied", "dry run", "failed"]);
    assert.equal(outcomeOf({ tool: "x", dry_run: true, decision: { allowed: false } }), "denied");
  });

  test("newest first", () => {
    const text = formatToolLog(entries);
    const order = ["10:03", "10:02", "10:01", "10:00"].map((t) => text.indexOf(t));
    assert.deepEqual([...order].sort((a, b) => a - b), order);
    assert.ok(order.every((i) => i > 0));
    assert.match(text, /all entries — 4 of 4 entries, newest first/);
  });

  test("filter by tool, by outcome, and by both", () => {
    const bash = formatToolLog(entries, { tools: ["bash_command"] });
    assert.match(bash, /tool bash_command — 2 of 4/);
    assert.doesNotMatch(bash, /read_file/);
    const denied = formatToolLog(entries, { outcomes: ["denied"] });
    assert.match(denied, /outcome denied — 1 of 4/);
    assert.match(denied, /decision: denied \(deny\.not_allowed\) — curl is not allowed/);
    assert.match(denied, /error: {4}Command 'curl' is not in the allowed list/);
    const both = formatToolLog(entries, { tools: ["bash_command", "write_file"], outcomes: ["failed", "dry run"] });
    assert.match(both, /tool bash_command or write_file, outcome failed or dry run — 2 of 4/);
    assert.match(both, /10:03/);
    assert.match(both, /10:02/);
    assert.match(formatToolLog(entries, { tools: ["nothing"] }), /\(no entries\)/);
    assert.match(formatToolLog(entries, { tools: [], outcomes: [] }), /all entries — 4 of 4/);
  });

  test("long inputs are cut with their length", () => {
    const text = formatToolLog([{ tool: "write_file", input: { content: "x".repeat(1000) }, success: true }]);
    assert.match(text, /… \(\d+ chars\)/);
  });

  test("tools for the filter picker", () => {
    assert.deepEqual(toolsInLog(entries), ["bash_command", "read_file", "write_file"]);
  });
});

describe("rollback preview", () => {
  const plan = { restored: ["a.py", "b.py"], deleted: ["new.txt"], created: [] };
  test("counts and files", () => {
    assert.equal(rollbackCounts(plan), "2 restored, 1 deleted");
    assert.equal(rollbackCounts({ restored: [], deleted: [], created: [] }), "no file changes");
    assert.equal(rollbackFiles(plan), "~a.py  ~b.py  -new.txt");
    assert.equal(rollbackFiles({ restored: ["1", "2", "3"], deleted: [], created: [] }, 2), "~1  ~2  … and 1 more");
  });
  test("checkpoint times are shortened, unknown formats kept", () => {
    assert.equal(shortTime("2026-11-22T08:40:00.152+00:00"), "2026-11-22 08:40:00");
    assert.equal(shortTime("20261122_083918"), "20261122_083918");
  });
  test("confirmation lists every file by what happens to it", () => {
    const text = rollbackConfirmation({ id: "c-1", time: "10:00", tool: "write_file" }, plan);
    assert.match(text, /Restored:\n {2}a\.py\n {2}b\.py\nDeleted:\n {2}new\.txt/);
    assert.doesNotMatch(text, /Re-created/);
  });
});

describe("status and results", () => {
  test("status text", () => {
    assert.equal(statusText({ permissions: "read,write", sandbox: "bubblewrap", pendingProposals: 2 }), "$(shield) Tether: read,write · bubblewrap · 2 pending");
    assert.equal(statusText({ permissions: "none", sandbox: "unavailable: no backend", pendingProposals: 0 }), "$(shield) Tether: none · no sandbox");
  });

  const gate: GateResult = {
    tool: "bash_command", ok: true, dryRun: false, isError: false,
    result: { stdout: "hello\n", stderr: "warn\n", exit_code: 0, duration_ms: 12 },
    text: "hello", decision: null, checkpoint: null, proposalId: null, warnings: [],
  };
  test("command output shows stdout, stderr and the exit code", () => {
    assert.equal(formatCommandResult("echo hello", gate), "$ echo hello\n\nhello\n--- stderr ---\nwarn\n\nexit code 0 · 12 ms\n");
  });
  test("a dry run says nothing was executed", () => {
    const text = formatCommandResult("rm -rf x", { ...gate, dryRun: true, text: "would run: rm -rf x" });
    assert.match(text, /dry run: nothing was executed/);
    assert.doesNotMatch(text, /exit code/);
  });
  test("check verdicts carry the rule and the suggestion when denied", () => {
    assert.equal(
      formatCheck("curl x", { allowed: false, rule: "deny.not_allowed", reason: "curl is not allowed", suggestion: "use the fetch tool", segments: [] }),
      "Denied: `curl x` — curl is not allowed [deny.not_allowed] Suggestion: use the fetch tool",
    );
    assert.equal(formatCheck("ls", { allowed: true, rule: "allow.read", reason: "read-only", suggestion: "x", segments: [["ls"]] }), "Allowed: `ls` — read-only [allow.read]");
  });
});
