import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CHOICES, answerFor, choicesFor, parseQuestion, questionDetail, questionTitle } from "../../common/approve";

const QUESTION = {
  id: "ap-1",
  tool: "bash_command",
  command: "ls && git commit -m wip",
  mode: "command",
  rule: "ask.git_state",
  reason: "`git commit` changes your repository beyond the work tree",
  segments: [{ argv: ["git", "commit", "-m", "wip"], rule: "ask.git_state", reason: "`git commit` changes your repository beyond the work tree" }],
  sandbox: { backend: "bubblewrap", network: "none", writable: ["/home/me/project"] },
  always: { file: "/home/me/.config/tether/config.toml", toml: '[[rules]]\npattern = ["git", "commit"]\ndecision = "allow"\n' },
  timeoutMs: 300000,
};

describe("the approval modal", () => {
  test("the buttons are exactly the four choices (docs/lsp.md)", () => {
    assert.deepEqual([...CHOICES], ["Allow once", "Allow for this session", "Always allow", "Deny"]);
    const q = parseQuestion(QUESTION);
    assert.ok(q);
    assert.deepEqual(choicesFor(q), [...CHOICES]);
    assert.deepEqual(choicesFor({ ...q, always: null }), ["Allow once", "Allow for this session", "Deny"]);
  });

  test("the question names the command, each segment and why, the sandbox, and the rule and file for Always allow", () => {
    const q = parseQuestion(QUESTION);
    assert.ok(q);
    assert.match(questionTitle(q), /`ls && git commit -m wip`/);
    const detail = questionDetail(q);
    assert.match(detail, /• git commit -m wip — `git commit` changes your repository beyond the work tree \(ask\.git_state\)/);
    assert.match(detail, /bubblewrap \(command mode\): writes only \/home\/me\/project, network none/);
    assert.match(detail, /"Always allow" adds this rule to \/home\/me\/\.config\/tether\/config\.toml/);
    assert.match(detail, /pattern = \["git", "commit"\]/);
  });

  test("each button maps to its answer; closing the modal is a deny; Deny carries the message", () => {
    assert.deepEqual(answerFor("Allow once"), { choice: "allow_once" });
    assert.deepEqual(answerFor("Allow for this session"), { choice: "allow_session" });
    assert.deepEqual(answerFor("Always allow"), { choice: "allow_always" });
    assert.deepEqual(answerFor("Deny", "squash first"), { choice: "deny", message: "squash first" });
    assert.deepEqual(answerFor("Deny"), { choice: "deny" });
    assert.deepEqual(answerFor(undefined), { choice: "deny" });
    assert.deepEqual(answerFor("Allow everything"), { choice: "deny" });
  });

  test("malformed params are not a question (the client answers deny)", () => {
    for (const bad of [null, 3, "x", {}, { command: 1, segments: [] }, { command: "ls" }]) {
      assert.equal(parseQuestion(bad), undefined, JSON.stringify(bad));
    }
    const odd = parseQuestion({ command: "x", segments: [null, { argv: "no" }], always: { file: 3 } });
    assert.ok(odd);
    assert.equal(odd.always, null);
    assert.deepEqual(odd.segments, [{ argv: [], rule: "", reason: "" }]);
  });
});
