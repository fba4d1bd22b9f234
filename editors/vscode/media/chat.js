// The chat webview's script: draws the state the extension posts (src/chat/view.ts) and sends the
// person's actions back. It builds the DOM with textContent; the only HTML it inserts is the
// agent's text, which the extension renders with every character escaped (src/chat/markdown.ts).
// Every message it sends is validated again by the extension (src/chat/messages.ts).
(function () {
  "use strict";
  const vscode = acquireVsCodeApi();
  const log = document.getElementById("log");
  const prompt = document.getElementById("prompt");
  const send = document.getElementById("send");
  const stop = document.getElementById("stop");
  const meta = document.getElementById("meta");
  const conversations = document.getElementById("conversations");
  const newButton = document.getElementById("new");
  /** Cards whose output the person unfolded (kept across redraws). */
  const unfolded = new Set();
  let running = false;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function button(label, className, onClick, title) {
    const b = el("button", className, label);
    if (title) b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  const ANSWERS = {
    allow_once: "✓ Allowed once",
    allow_session: "✓ Allowed for this session",
    allow_always: "✓ Always allowed (rule added to your user config)",
    deny: "✗ Denied",
  };

  function questionBlock(card) {
    const q = card.question;
    const box = el("div", "question");
    box.appendChild(el("div", "question-text", `Allow \`${q.command}\`? ${q.reason || ""}${q.rule ? ` (${q.rule})` : ""}`));
    if (q.answer) {
      const words = (ANSWERS[q.answer.choice] || q.answer.choice) + (q.answer.message ? `: ${q.answer.message}` : "");
      box.appendChild(el("div", q.answer.choice === "deny" ? "answer denied" : "answer allowed", words));
      return box;
    }
    const row = el("div", "buttons");
    const answer = (choice, message) => vscode.postMessage({ type: "answer", questionId: q.id, choice, message });
    row.appendChild(button("Allow once", "", () => answer("allow_once")));
    row.appendChild(button("Allow for this session", "secondary", () => answer("allow_session")));
    if (q.always) row.appendChild(button("Always allow", "secondary", () => answer("allow_always")));
    const why = el("input", "deny-message");
    why.placeholder = "Why not? (optional, sent to the agent)";
    why.setAttribute("aria-label", "Message to the agent with the denial");
    row.appendChild(why);
    row.appendChild(button("Deny", "danger", () => answer("deny", why.value)));
    box.appendChild(row);
    return box;
  }

  function toolCard(card) {
    const box = el("section", `card state-${card.state}`);
    box.setAttribute("aria-label", `${card.summary || card.name}: ${card.state}`);
    const head = el("div", "card-head");
    head.appendChild(el("span", "tool", card.summary || card.name));
    head.appendChild(el("span", "badge", card.state));
    box.appendChild(head);
    if ((card.state === "denied" || card.state === "failed") && card.reason) {
      box.appendChild(el("div", "reason", card.rule ? `${card.reason} (${card.rule})` : card.reason));
    }
    if (card.question) box.appendChild(questionBlock(card));
    if (card.proposalId) {
      const row = el("div", "buttons");
      row.appendChild(button("Open diff", "secondary", () => vscode.postMessage({ type: "diff", proposalId: card.proposalId })));
      box.appendChild(row);
      for (const h of card.hunks || []) {
        const hunk = el("div", `hunk hunk-${h.state}`);
        hunk.appendChild(el("code", "", `hunk ${h.index} ${h.header}`));
        if (h.state === "pending") {
          const accept = button("Accept", "", () => vscode.postMessage({ type: "accept", proposalId: card.proposalId, hunk: h.index }));
          accept.setAttribute("aria-label", `Accept hunk ${h.index}`);
          const reject = button("Reject", "secondary", () => vscode.postMessage({ type: "reject", proposalId: card.proposalId, hunk: h.index }));
          reject.setAttribute("aria-label", `Reject hunk ${h.index}`);
          hunk.appendChild(accept);
          hunk.appendChild(reject);
        } else {
          hunk.appendChild(el("span", "badge", h.state));
        }
        box.appendChild(hunk);
      }
    }
    if (card.output) {
      const details = el("details", "output");
      details.open = unfolded.has(card.id);
      details.addEventListener("toggle", () => (details.open ? unfolded.add(card.id) : unfolded.delete(card.id)));
      const lines = card.output.split("\n").filter((l) => l !== "").length;
      details.appendChild(el("summary", "", `Output (${lines} line${lines === 1 ? "" : "s"})`));
      details.appendChild(el("pre", "", card.output));
      box.appendChild(details);
    }
    return box;
  }

  function draw(state) {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    log.replaceChildren();
    if (state.entries.length === 0) log.appendChild(el("p", "empty", "Ask the agent something. Its tool calls appear here as cards you can review."));
    for (const e of state.entries) {
      if (e.kind === "user") log.appendChild(el("div", "user", e.text));
      else if (e.kind === "assistant") {
        const text = el("div", "assistant");
        text.innerHTML = e.html; // escaped by the extension: src/chat/markdown.ts
        log.appendChild(text);
      } else if (e.kind === "tool") log.appendChild(toolCard(e));
      else if (e.kind === "notice") log.appendChild(el("div", "notice", e.text));
      else if (e.kind === "stopped") log.appendChild(el("div", "stopped", `Stopped: ${e.reason}${e.message ? ` — ${e.message}` : ""}`));
    }
    running = state.running;
    stop.disabled = !running;
    send.disabled = running;
    const cost = state.cost + (state.turnCost || 0);
    meta.textContent = `$${cost.toFixed(4)} · ${state.inputTokens} in / ${state.outputTokens} out${running ? " · running…" : ""}${
      state.conversationId ? ` · ${state.conversationId}` : ""
    }`;
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  function drawConversations(list) {
    const keep = conversations.value;
    conversations.replaceChildren(el("option", "", "Conversations…"));
    conversations.firstChild.value = "";
    for (const c of list) {
      const option = el("option", "", `${c.title || c.id} · ${c.turns} turn${c.turns === 1 ? "" : "s"}`);
      option.value = c.id;
      conversations.appendChild(option);
    }
    conversations.value = keep;
  }

  function submit() {
    const text = prompt.value;
    if (!text.trim() || running) return;
    vscode.postMessage({ type: "send", prompt: text });
    prompt.value = "";
  }

  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  send.addEventListener("click", submit);
  stop.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
  newButton.addEventListener("click", () => vscode.postMessage({ type: "new" }));
  conversations.addEventListener("focus", () => vscode.postMessage({ type: "conversations" }));
  conversations.addEventListener("change", () => {
    if (conversations.value) vscode.postMessage({ type: "resume", conversationId: conversations.value });
  });
  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message && message.type === "state") draw(message.state);
    else if (message && message.type === "conversations") drawConversations(message.conversations);
  });
  vscode.postMessage({ type: "ready" });
})();
