/**
 * The agent's markdown as HTML for the chat webview: safe by construction. Every character of the
 * text is HTML-escaped first; only then are a few constructs turned into tags (fenced and inline
 * code, bold, bullet lists, paragraphs). No links, images or raw HTML: nothing the model writes can
 * load a resource or run a script, and the webview's Content Security Policy forbids both anyway.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Inline constructs of one escaped line: `code` first (its content stays literal), then **bold**. */
function inline(escaped: string): string {
  return escaped
    .split(/(`[^`\n]+`)/)
    .map((part) =>
      part.startsWith("`") && part.endsWith("`") && part.length > 1
        ? `<code>${part.slice(1, -1)}</code>`
        : part.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>"),
    )
    .join("");
}

export function renderMarkdown(text: string): string {
  const out: string[] = [];
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let paragraph: string[] = [];
  let list: string[] = [];
  const flush = (): void => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    if (list.length) out.push(`<ul>${list.map((item) => `<li>${inline(item)}</li>`).join("")}</ul>`);
    paragraph = [];
    list = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*```/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const item = /^\s*[-*] (.*)$/.exec(line);
    if (item) {
      if (paragraph.length) flush();
      list.push(escapeHtml(item[1]));
    } else if (line.trim() === "") {
      flush();
    } else {
      if (list.length) flush();
      paragraph.push(escapeHtml(line));
    }
  }
  flush();
  return out.join("");
}
