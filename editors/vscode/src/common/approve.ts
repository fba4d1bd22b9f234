/**
 * The approval modal: the server's `tether/approve` request (docs/lsp.md, "Approvals") answered by
 * the person, while the agent's tool call waits.
 *
 * Why a modal: the question must not be missed or answered by accident while typing, and a tool call
 * is blocked until it is answered. The pure part (the question as text, the button → answer mapping,
 * validating the server's params) is tested under Node; `askPerson` is the only `vscode` part.
 */

export const CHOICES = ["Allow once", "Allow for this session", "Always allow", "Deny"] as const;
export type ChoiceTitle = (typeof CHOICES)[number];
export type Choice = "allow_once" | "allow_session" | "allow_always" | "deny";

export const CHOICE_OF: Record<ChoiceTitle, Choice> = {
  "Allow once": "allow_once",
  "Allow for this session": "allow_session",
  "Always allow": "allow_always",
  Deny: "deny",
};

export interface ApprovalAnswer {
  choice: Choice;
  message?: string;
}

export interface ApprovalQuestion {
  /** The question's id and the tool that asks (the chat view shows it on that tool's card). */
  id: string;
  tool: string;
  command: string;
  rule: string;
  reason: string;
  mode: string;
  segments: { argv: string[]; rule: string; reason: string }[];
  sandbox: { backend?: string; network?: string; writable?: string[] };
  always: { file: string; toml: string } | null;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The server's params, checked: anything malformed is answered with a deny (fail closed). */
export function parseQuestion(raw: unknown): ApprovalQuestion | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const q = raw as Record<string, unknown>;
  if (typeof q.command !== "string" || !Array.isArray(q.segments)) return undefined;
  const segments = q.segments
    .filter((s): s is Record<string, unknown> => s !== null && typeof s === "object")
    .map((s) => ({
      argv: Array.isArray(s.argv) ? s.argv.map(String) : [],
      rule: text(s.rule),
      reason: text(s.reason),
    }));
  const sandbox = q.sandbox !== null && typeof q.sandbox === "object" ? (q.sandbox as ApprovalQuestion["sandbox"]) : {};
  const always = q.always as { file?: unknown; toml?: unknown } | null | undefined;
  return {
    id: text(q.id),
    tool: text(q.tool),
    command: q.command,
    rule: text(q.rule),
    reason: text(q.reason),
    mode: text(q.mode),
    segments,
    sandbox,
    always:
      always && typeof always.file === "string" && typeof always.toml === "string" ? { file: always.file, toml: always.toml } : null,
  };
}

/** The modal's title line. */
export function questionTitle(q: ApprovalQuestion): string {
  return `Tether: allow the agent to run \`${q.command.length > 120 ? q.command.slice(0, 117) + "…" : q.command}\`?`;
}

/** The modal's detail: what needs a person and why, where it would run, what "Always allow" writes. */
export function questionDetail(q: ApprovalQuestion): string {
  const lines = ["Needs your approval:"];
  for (const s of q.segments) lines.push(`• ${s.argv.join(" ")} — ${s.reason} (${s.rule})`);
  const writable = q.sandbox.writable?.join(", ") ?? "the workspace";
  lines.push("", `Runs in the ${q.sandbox.backend ?? "sandbox"} (${q.mode} mode): writes only ${writable}, network ${q.sandbox.network ?? "none"}, after a checkpoint.`);
  if (q.always) lines.push("", `"Always allow" adds this rule to ${q.always.file}:`, q.always.toml.trim());
  else lines.push("", `"Always allow" is not offered: there is no user config file to write the rule to.`);
  return lines.join("\n");
}

/** The buttons, in order; "Always allow" only when the server named a rule and a file. */
export function choicesFor(q: ApprovalQuestion): ChoiceTitle[] {
  return CHOICES.filter((c) => c !== "Always allow" || q.always !== null);
}

/** The answer for a clicked button; closing the modal (undefined) is a deny. */
export function answerFor(title: string | undefined, message?: string): ApprovalAnswer {
  const choice = title !== undefined && title in CHOICE_OF ? CHOICE_OF[title as ChoiceTitle] : "deny";
  if (choice !== "deny") return { choice };
  return message ? { choice, message } : { choice };
}
