/**
 * The chat's state: the person's prompts, the agent's text blocks, one card per tool call, notices,
 * how a turn stopped — folded from the server's `tether/turn` notifications (docs/lsp.md, "Chat")
 * or from a stored conversation (`tether.conversation`).
 *
 * Pure (no `vscode`): the view posts this state to the webview, which only draws it, and the unit
 * tests fold fixture streams through it.
 */

export interface HunkView {
  index: number;
  header: string;
  state: string;
}

export interface QuestionView {
  id: string;
  command: string;
  rule: string;
  reason: string;
  /** Whether the card offers "Always allow" (the server named a rule and a file). */
  always: boolean;
  answer?: { choice: string; message?: string };
}

export interface ToolCard {
  kind: "tool";
  id: string;
  name: string;
  summary: string;
  state: string;
  rule?: string;
  reason?: string;
  proposalId?: string;
  hunks?: HunkView[];
  output?: string;
  question?: QuestionView;
}

export type ChatEntry =
  | { kind: "user"; text: string }
  | { kind: "assistant"; block: number; text: string }
  | ToolCard
  | { kind: "notice"; text: string }
  | { kind: "stopped"; reason: string; message?: string };

export interface ChatState {
  entries: ChatEntry[];
  conversationId?: string;
  title?: string;
  turnId?: string;
  running: boolean;
  /** Dollars: earlier turns, plus `turnCost` for the running one. */
  cost: number;
  turnCost: number;
  inputTokens: number;
  outputTokens: number;
}

export function newChat(): ChatState {
  return { entries: [], running: false, cost: 0, turnCost: 0, inputTokens: 0, outputTokens: 0 };
}

/** The person sent `prompt` as turn `turnId`: drawn at once, before the server answers. */
export function beginTurn(state: ChatState, prompt: string, turnId: string): void {
  state.entries.push({ kind: "user", text: prompt });
  state.turnId = turnId;
  state.running = true;
  state.turnCost = 0;
  state.title ??= prompt.split("\n")[0];
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** Whether a card of this chat shows proposal `id`: the only proposals the view may act on. */
export function showsProposal(state: ChatState, id: string): boolean {
  return state.entries.some((e) => e.kind === "tool" && e.proposalId === id);
}

export function cardById(state: ChatState, id: string): ToolCard | undefined {
  return state.entries.find((e): e is ToolCard => e.kind === "tool" && e.id === id);
}

function cardFor(state: ChatState, id: string): ToolCard {
  let card = cardById(state, id);
  if (!card) {
    card = { kind: "tool", id, name: "?", summary: "", state: "running" };
    state.entries.push(card);
  }
  return card;
}

/**
 * Fold one `tether/turn` notification in. False for another turn's notification or a malformed
 * one (the view ignores it).
 */
export function applyUpdate(state: ChatState, raw: unknown): boolean {
  if (raw === null || typeof raw !== "object") return false;
  const u = raw as Record<string, unknown>;
  if (u.turnId !== state.turnId || typeof u.kind !== "string") return false;
  const conversation = str(u.conversationId);
  if (conversation) state.conversationId = conversation;
  switch (u.kind) {
    case "started":
      state.running = true;
      break;
    case "text": {
      const block = num(u.block);
      const last = state.entries[state.entries.length - 1];
      if (last?.kind === "assistant" && last.block === block) last.text += str(u.delta) ?? "";
      else state.entries.push({ kind: "assistant", block, text: str(u.delta) ?? "" });
      break;
    }
    case "tool": {
      const id = str(u.id);
      if (!id) return false;
      const card = cardFor(state, id);
      card.name = str(u.name) ?? card.name;
      card.summary = str(u.summary) ?? card.summary;
      card.state = str(u.state) ?? card.state;
      card.rule = str(u.rule) ?? card.rule;
      card.reason = str(u.reason) ?? card.reason;
      card.proposalId = str(u.proposalId) ?? card.proposalId;
      card.output = str(u.output) ?? card.output;
      break;
    }
    case "usage": {
      const usage = (u.usage ?? {}) as Record<string, unknown>;
      state.inputTokens += num(usage.inputTokens);
      state.outputTokens += num(usage.outputTokens);
      state.turnCost = num(u.cost);
      break;
    }
    case "notice":
      state.entries.push({ kind: "notice", text: str(u.text) ?? "" });
      break;
    case "stopped":
      endTurn(state, str(u.stopReason) ?? "error", str(u.message));
      break;
    default:
      return false;
  }
  return true;
}

/** The turn is over (`stopped`, or the `tether.ask` answer or error: whichever comes first). */
export function endTurn(state: ChatState, stopReason: string, message?: string): void {
  if (!state.running) return;
  state.running = false;
  state.cost += state.turnCost;
  state.turnCost = 0;
  for (const e of state.entries) {
    if (e.kind !== "tool") continue;
    if (e.state === "running") e.state = "cancelled";
    if (e.question && !e.question.answer) e.question.answer = { choice: "deny", message: "the turn ended first" };
  }
  if (stopReason !== "end_turn") state.entries.push(message ? { kind: "stopped", reason: stopReason, message } : { kind: "stopped", reason: stopReason });
}

/**
 * A question the server asks while a call runs: on that call's card (the newest running card of
 * the same tool without a question), else on a card of its own.
 */
export function attachQuestion(state: ChatState, q: { id: string; tool: string; command: string; rule: string; reason: string; always: boolean }): ToolCard {
  let card = [...state.entries]
    .reverse()
    .find((e): e is ToolCard => e.kind === "tool" && e.state === "running" && e.name === q.tool && !e.question);
  if (!card) {
    card = cardFor(state, `question-${q.id}`);
    card.name = q.tool || "?";
    card.summary = `${card.name}(${q.command})`;
  }
  card.question = { id: q.id, command: q.command, rule: q.rule, reason: q.reason, always: q.always };
  return card;
}

/** Record the answer to question `id`; false when no card shows it. */
export function answerQuestion(state: ChatState, id: string, choice: string, message?: string): boolean {
  for (const e of state.entries) {
    if (e.kind === "tool" && e.question?.id === id) {
      e.question.answer = message ? { choice, message } : { choice };
      return true;
    }
  }
  return false;
}

/** A stored conversation (`tether.conversation`) as a state to continue. */
export function fromConversation(raw: unknown): ChatState {
  const state = newChat();
  const conv = (raw ?? {}) as Record<string, unknown>;
  state.conversationId = str(conv.id);
  state.title = str(conv.title);
  state.cost = num(conv.cost);
  const entries = Array.isArray(conv.entries) ? (conv.entries as Record<string, unknown>[]) : [];
  entries.forEach((e, i) => {
    if (e.role === "user") state.entries.push({ kind: "user", text: str(e.text) ?? "" });
    else if (e.role === "assistant") state.entries.push({ kind: "assistant", block: i, text: str(e.text) ?? "" });
    else if (e.role === "tool") {
      const name = str(e.name) ?? "?";
      const input = (e.input ?? {}) as Record<string, unknown>;
      const arg = str(input.path) ?? str(input.command) ?? str(input.pattern);
      state.entries.push({
        kind: "tool",
        id: str(e.id) ?? `tool-${i}`,
        name,
        summary: arg ? `${name}(${arg})` : name,
        state: e.isError === true ? "failed" : "done",
        output: str(e.output),
      });
    }
  });
  return state;
}
