"""`edit_file` (seed 004): `str_replace` one unique occurrence, or `create` a new file.

Uniqueness is judged on every occurrence, overlapping ones included: in `aaa`, `aa` occurs at two
places, and replacing "the" occurrence would be a guess, so it is refused like any other ambiguity.
The error names the line where each occurrence starts, so the model can add context.

On a CRLF file the model's `\\n` text is matched and written with the file's `\\r\\n`; mixed files
are matched exactly as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.core import fsutil
from tether.core.tools.base import ToolContext, ToolSpec
from tether.core.tools.inputs import Prepared, resolve, validate
from tether.core.tools.write import MAX_CONTENT_CHARS, FileEdit, check_content, load_base, prepared_edit
from tether.errors import ToolInputError

NOT_FOUND = "Error: old_str not found in file"
ALREADY_EXISTS = "Error: File already exists. Use str_replace to edit existing files."

EDIT_SPEC = ToolSpec(
    name="edit_file",
    description=(
        "Edit a text file. command 'str_replace' replaces the single occurrence of old_str with "
        "new_str (old_str must match exactly once, whitespace included; add surrounding lines to make "
        "it unique). command 'create' makes a new file with content and fails if it exists. Without "
        "write permission the edit becomes a proposal the user can accept."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["str_replace", "create"]},
            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
            "old_str": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS},
            "new_str": {"type": "string", "maxLength": MAX_CONTENT_CHARS},
            "content": {"type": "string", "maxLength": MAX_CONTENT_CHARS},
        },
        "required": ["command", "path"],
        "additionalProperties": False,
    },
)


def occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of every occurrence of `needle`, overlapping ones included."""
    found = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def replace_unique(text: str, old: str, new: str) -> str:
    """Replace the one occurrence of `old`, or raise ToolInputError with the seed's message."""
    places = occurrences(text, old)
    if not places:
        raise ToolInputError(NOT_FOUND)
    if len(places) > 1:
        lines = ", ".join(str(text.count("\n", 0, p) + 1) for p in places)
        raise ToolInputError(
            f"Error: old_str found {len(places)} times at lines {lines}. "
            "Provide more context for unique match."
        )
    at = places[0]
    return text[:at] + new + text[at + len(old) :]


class EditFileTool:
    spec = EDIT_SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        a = validate(self.spec, args)
        command = a["command"]
        target = resolve(a["path"], ctx.workspace, write=True, settings=ctx.config.policy, tool="edit_file")
        if command == "create":
            for field in ("old_str", "new_str"):
                if field in a:
                    raise ToolInputError(f"edit_file: `{field}` is not used with command 'create'")
            if "content" not in a:
                raise ToolInputError("edit_file: `content` is required for command 'create'")
            content: str = a["content"]
            check_content(content, "edit_file")
            if target.path.exists() or target.path.is_symlink():
                raise ToolInputError(ALREADY_EXISTS)
            edit = FileEdit(
                tool="edit_file",
                target=target,
                base="",
                new=content,
                exists=False,
                exclusive=True,
                from_buffer=False,
                success=f"Created {target.rel} ({len(content.encode('utf-8'))} bytes)",
            )
            return prepared_edit(ctx, edit)

        if "content" in a:
            raise ToolInputError("edit_file: `content` is only used with command 'create'")
        if "old_str" not in a:
            raise ToolInputError("edit_file: `old_str` is required for command 'str_replace'")
        new_str: str = a.get("new_str", "")
        check_content(new_str, "edit_file")
        base, from_buffer = load_base(ctx, target)
        if not base.exists and not from_buffer:
            raise ToolInputError(f"Error: File not found: {target.rel}. Use create to make a new file.")
        crlf = base.newline == "\r\n"
        text = fsutil.to_lf(base.text, base.newline)
        old = a["old_str"].replace("\r\n", "\n") if crlf else a["old_str"]
        new = new_str.replace("\r\n", "\n") if crlf else new_str
        replaced = replace_unique(text, old, new)
        line = text.count("\n", 0, text.find(old)) + 1
        edit = FileEdit(
            tool="edit_file",
            target=target,
            base=base.text,
            new=fsutil.to_file_newlines(replaced, base.newline),
            exists=base.exists,  # False for an unsaved new buffer
            exclusive=False,
            from_buffer=from_buffer,
            success=f"Edited {target.rel}: replaced 1 occurrence at line {line}",
        )
        return prepared_edit(ctx, edit)
