// The chat view's pure parts: the state folded from tether/turn streams, the webview's messages
// validated, and the agent's markdown rendered with every character escaped.
import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { escapeHtml, renderMarkdown } from "../../chat/markdown";
import { MAX_PROMPT_CHARS, parseWebviewMessage, viewOf } from "../../chat/messages";
import { answerQuestion, applyUpdate, attachQuestion, beginTurn, cardById, endTurn, fromConversation, newChat, showsProposal } from "../../chat/state";

function stream(turnId: string): (u: Record<string, unknown>) => Record<string, unknown> {
  let seq = 0;
  return (u) => ({ turnId, seq: seq++, conversationId: "c-1", ...u });
}

describe("chat state", () => {
  test("a turn: prompt, text blocks as separate entries, one card per call, usage, stop", () => {
    const s = newChat();
    beginTurn(s, "fix the average\nplease", "t-1");
    const u = stream("t-1");
    assert.equal(applyUpdate(s, u({ kind: "started", prompt: "fix the average" })), true);
    applyUpdate(s, u({ kind: "text", delta: "I will make ", block: 1 }));
    applyUpdate(s, u({ kind: "text", delta: "it a float.", block: 1 }));
    applyUpdate(s, u({ kind: "tool", id: "tu1", name: "write_file", summary: "write_file(calc.py)", state: "running" }));
    applyUpdate(s, u({ kind: "tool", id: "tu1", name: "write_file", state: "proposed", proposalId: "p-1a2b" }));
    applyUpdate(s, u({ kind: "text", delta: "Please review.", block: 2 }));
    applyUpdate(s, u({ kind: "usage", usage: { inputTokens: 100, outputTokens: 20 }, cost: 0.002 }));
    assert.equal(applyUpdate(s, { turnId: "other", kind: "text", delta: "x", block: 1 }), false);
    assert.equal(applyUpdate(s, null), false);
    assert.equal(applyUpdate(s, u({ kind: "mystery" })), false);
    assert.deepEqual(
      s.entries.map((e) => e.kind),
      ["user", "assistant", "tool", "assistant"],
    );
    assert.equal(s.title, "fix the average");
    assert.equal(s.conversationId, "c-1");
    const card = cardById(s, "tu1");
    assert.equal(card?.summary, "write_file(calc.py)");
    assert.equal(card?.state, "proposed");
    assert.equal(card?.proposalId, "p-1a2b");
    assert.equal(showsProposal(s, "p-1a2b"), true);
    assert.equal(showsProposal(s, "p-ffff"), false, "a proposal no card shows");
    assert.equal(s.turnCost, 0.002);
    applyUpdate(s, u({ kind: "stopped", stopReason: "end_turn" }));
    assert.equal(s.running, false);
    assert.equal(s.cost, 0.002);
    assert.equal(s.entries.length, 4, "end_turn adds no line");
  });

  test("a question lands on the running card of its tool; the end of a turn denies what is open", () => {
    const s = newChat();
    beginTurn(s, "go", "t-2");
    applyUpdate(s, { turnId: "t-2", kind: "tool", id: "tb", name: "bash_command", summary: "bash_command(git commit)", state: "running" });
    const card = attachQuestion(s, { id: "ap-1", tool: "bash_command", command: "git commit -m x", rule: "ask.git_state", reason: "history", always: true });
    assert.equal(card.id, "tb");
    const lone = attachQuestion(s, { id: "ap-2", tool: "bash_command", command: "npm install", rule: "", reason: "", always: false });
    assert.equal(lone.id, "question-ap-2", "no second question on the same card");
    assert.equal(answerQuestion(s, "ap-1", "allow_once"), true);
    assert.equal(answerQuestion(s, "ap-9", "deny"), false);
    endTurn(s, "cancelled", "stopped by you");
    assert.deepEqual(card.question?.answer, { choice: "allow_once" });
    assert.deepEqual(lone.question?.answer, { choice: "deny", message: "the turn ended first" });
    assert.equal(card.state, "cancelled");
    assert.deepEqual(s.entries[s.entries.length - 1], { kind: "stopped", reason: "cancelled", message: "stopped by you" });
    endTurn(s, "error", "twice");
    assert.equal(s.entries.filter((e) => e.kind === "stopped").length, 1, "a second end is a no-op");
  });

  test("a stored conversation", () => {
    const s = fromConversation({
      id: "c-9",
      title: "fix it",
      cost: 0.5,
      entries: [
        { role: "user", text: "fix it" },
        { role: "assistant", text: "Done." },
        { role: "tool", id: "x", name: "bash_command", input: { command: "ls" }, output: "a\nb\n", isError: true },
      ],
    });
    assert.equal(s.conversationId, "c-9");
    assert.equal(s.cost, 0.5);
    assert.deepEqual(cardById(s, "x"), { kind: "tool", id: "x", name: "bash_command", summary: "bash_command(ls)", state: "failed", output: "a\nb\n" });
    assert.deepEqual(fromConversation("garbage").entries, []);
  });
});

describe("webview messages are validated", () => {
  test("the known shapes pass", () => {
    assert.deepEqual(parseWebviewMessage({ type: "send", prompt: "hi" }), { type: "send", prompt: "hi" });
    assert.deepEqual(parseWebviewMessage({ type: "accept", proposalId: "p-1a2b3c4d", hunk: 2 }), { type: "accept", proposalId: "p-1a2b3c4d", hunk: 2 });
    assert.deepEqual(parseWebviewMessage({ type: "reject", proposalId: "p-1a2b3c4d" }), { type: "reject", proposalId: "p-1a2b3c4d" });
    assert.deepEqual(parseWebviewMessage({ type: "answer", questionId: "ap-1f2e-3", choice: "deny", message: "  not now " }), {
      type: "answer",
      questionId: "ap-1f2e-3",
      choice: "deny",
      message: "not now",
    });
    assert.deepEqual(parseWebviewMessage({ type: "answer", questionId: "ap-1", choice: "allow_once", message: "ignored" }), {
      type: "answer",
      questionId: "ap-1",
      choice: "allow_once",
    });
    assert.deepEqual(parseWebviewMessage({ type: "resume", conversationId: "c-20261124T101500-1a2b3c" }), {
      type: "resume",
      conversationId: "c-20261124T101500-1a2b3c",
    });
    for (const type of ["ready", "stop", "new", "conversations"]) assert.deepEqual(parseWebviewMessage({ type, extra: 1 }), { type });
  });

  test("anything else is refused", () => {
    const bad: unknown[] = [
      null,
      "send",
      [],
      { type: "eval", code: "x" },
      { type: "send" },
      { type: "send", prompt: "   " },
      { type: "send", prompt: "x".repeat(MAX_PROMPT_CHARS + 1) },
      { type: "send", prompt: 5 },
      { type: "accept", proposalId: "../../etc/passwd" },
      { type: "accept", proposalId: "p-1a2b", hunk: 0 },
      { type: "accept", proposalId: "p-1a2b", hunk: 1.5 },
      { type: "accept", proposalId: "p-1a2b", hunk: "1" },
      { type: "diff", proposalId: "p-XYZ" },
      { type: "answer", questionId: "ap-1", choice: "allow_forever" },
      { type: "answer", questionId: "ap 1; rm", choice: "deny" },
      { type: "answer", questionId: "ap-1", choice: "deny", message: 7 },
      { type: "resume", conversationId: "c-1/../../x" },
      { type: "resume" },
    ];
    for (const message of bad) assert.equal(parseWebviewMessage(message), undefined, JSON.stringify(message)?.slice(0, 80));
  });
});

describe("markdown is rendered with everything escaped", () => {
  test("no tag, attribute or entity the model wrote survives as markup", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"> & <script>alert(2)</script>\n[link](javascript:alert(3))');
    assert.ok(!html.includes("<img"), html);
    assert.ok(!html.includes("<script"), html);
    assert.ok(html.includes("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;script&gt;"), html);
    assert.ok(!/<a\b/.test(html), "no links");
  });

  test("code, bold, lists and paragraphs", () => {
    assert.equal(renderMarkdown("Use `a<b` and **this**."), "<p>Use <code>a&lt;b</code> and <strong>this</strong>.</p>");
    assert.equal(renderMarkdown("one\ntwo\n\nthree"), "<p>one<br>two</p><p>three</p>");
    assert.equal(renderMarkdown("- a\n- **b**"), "<ul><li>a</li><li><strong>b</strong></li></ul>");
    assert.equal(renderMarkdown("```py\nif a < b:\n    **x**\n```"), "<pre><code>if a &lt; b:\n    **x**</code></pre>");
    assert.equal(escapeHtml(`'"`), "&#39;&quot;");
  });

  test("the view's state carries the rendered text", () => {
    const s = newChat();
    beginTurn(s, "q", "t");
    applyUpdate(s, { turnId: "t", kind: "text", delta: "<b>x</b>", block: 1 });
    const view = viewOf(s) as { entries: Array<{ kind: string; html?: string }> };
    assert.equal(view.entries[1].html, "<p>&lt;b&gt;x&lt;/b&gt;</p>");
  });
});
