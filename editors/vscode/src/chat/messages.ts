/**
 * Messages between the chat webview and the extension. Everything the webview sends is checked
 * here before anything acts on it: the webview draws text the model wrote, so it is treated like
 * any other untrusted input (wrong types, unknown kinds, ids in the wrong shape, huge prompts are
 * refused, never passed on).
 */

import type { Choice } from "../common/approve";
import { renderMarkdown } from "./markdown";
import type { ChatState } from "./state";

export const MAX_PROMPT_CHARS = 100_000;
const MAX_MESSAGE_CHARS = 4_000;
const CHOICES: readonly Choice[] = ["allow_once", "allow_session", "allow_always", "deny"];

export type WebviewMessage =
  | { type: "ready" }
  | { type: "send"; prompt: string }
  | { type: "stop" }
  | { type: "new" }
  | { type: "conversations" }
  | { type: "resume"; conversationId: string }
  | { type: "accept" | "reject"; proposalId: string; hunk?: number }
  | { type: "diff"; proposalId: string }
  | { type: "answer"; questionId: string; choice: Choice; message?: string };

const PROPOSAL_ID = /^p-[0-9a-f]{4,64}$/;
const CONVERSATION_ID = /^c-[A-Za-z0-9_-]{1,100}$/;
const QUESTION_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The message if it is one the extension understands, in the right shape; otherwise undefined. */
export function parseWebviewMessage(raw: unknown): WebviewMessage | undefined {
  if (!isObject(raw) || typeof raw.type !== "string") return undefined;
  switch (raw.type) {
    case "ready":
    case "stop":
    case "new":
    case "conversations":
      return { type: raw.type };
    case "send":
      if (typeof raw.prompt !== "string" || raw.prompt.trim() === "" || raw.prompt.length > MAX_PROMPT_CHARS) return undefined;
      return { type: "send", prompt: raw.prompt };
    case "resume":
      return typeof raw.conversationId === "string" && CONVERSATION_ID.test(raw.conversationId)
        ? { type: "resume", conversationId: raw.conversationId }
        : undefined;
    case "accept":
    case "reject": {
      if (typeof raw.proposalId !== "string" || !PROPOSAL_ID.test(raw.proposalId)) return undefined;
      if (raw.hunk === undefined) return { type: raw.type, proposalId: raw.proposalId };
      if (typeof raw.hunk !== "number" || !Number.isInteger(raw.hunk) || raw.hunk < 1 || raw.hunk > 100_000) return undefined;
      return { type: raw.type, proposalId: raw.proposalId, hunk: raw.hunk };
    }
    case "diff":
      return typeof raw.proposalId === "string" && PROPOSAL_ID.test(raw.proposalId) ? { type: "diff", proposalId: raw.proposalId } : undefined;
    case "answer": {
      if (typeof raw.questionId !== "string" || !QUESTION_ID.test(raw.questionId)) return undefined;
      if (!CHOICES.includes(raw.choice as Choice)) return undefined;
      const choice = raw.choice as Choice;
      if (raw.message === undefined || choice !== "deny") return { type: "answer", questionId: raw.questionId, choice };
      if (typeof raw.message !== "string") return undefined;
      const message = raw.message.trim().slice(0, MAX_MESSAGE_CHARS);
      return message ? { type: "answer", questionId: raw.questionId, choice, message } : { type: "answer", questionId: raw.questionId, choice };
    }
    default:
      return undefined;
  }
}

/** The state as the webview draws it: the agent's text already rendered to safe HTML. */
export function viewOf(state: ChatState): Record<string, unknown> {
  return {
    ...state,
    entries: state.entries.map((e) => (e.kind === "assistant" ? { ...e, html: renderMarkdown(e.text) } : e)),
  };
}
