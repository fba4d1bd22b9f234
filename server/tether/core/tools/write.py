"""`write_file`, and the edit machinery `edit_file` shares: preview as a proposal, or write atomically.

Why the new content is computed in `prepare`: every error the model must see (`old_str not found`,
`File already exists`, a binary file) is found before the gate takes a checkpoint, and the dry run
and the real run show exactly the same change. `execute` re-reads the file and refuses if it moved
on in between, so nothing computed against an old text is ever written.

The base text is the open editor buffer when there is one (what the user sees), else the disk.
Line endings, a final newline and a UTF-8 BOM are kept (see `tether.core.fsutil`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.core import diff, fsutil
from tether.core.gitnames import git_can_store
from tether.core.redact import CREDENTIAL_MARK
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.inputs import Prepared, ResolvedPath, resolve, validate
from tether.errors import ToolInputError

MAX_CONTENT_CHARS = 10 * 1024 * 1024

WRITE_SPEC = ToolSpec(
    name="write_file",
    description=(
        "Create a file or replace its whole content. Keeps the file's line endings (CRLF/LF), final "
        "newline, byte-order mark and permissions. Without write permission this creates a proposal "
        "(a diff the user can accept) instead of writing. Prefer edit_file for small changes."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Workspace path."},
            "content": {"type": "string", "maxLength": MAX_CONTENT_CHARS, "description": "Full new text."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class FileEdit:
    """A computed change of one file: base text (as seen), new text, and how to write it."""

    tool: str
    target: ResolvedPath
    base: str
    new: str
    exists: bool
    exclusive: bool
    from_buffer: bool
    success: str


def load_base(ctx: ToolContext, target: ResolvedPath) -> tuple[fsutil.TextFile, bool]:
    """The text an edit is computed against: the open buffer, else the disk. (text, from_buffer)."""
    if target.path.is_dir():
        raise ToolInputError(f"Error: {target.rel} is a directory, not a file")
    document = ctx.documents.get(target.path)
    if document is not None:
        text = document.text
        bom = text.startswith(fsutil.BOM)
        text = text.removeprefix(fsutil.BOM)
        on_disk = target.path.exists()
        return fsutil.TextFile(text=text, bom=bom, newline=fsutil.detect_newline(text), exists=on_disk), True
    return fsutil.read_text(target.path, target.rel), False


def check_content(content: str, tool: str) -> None:
    if CREDENTIAL_MARK in content:
        raise ToolInputError(
            f"Error: {tool} content contains {CREDENTIAL_MARK!r}: a credential was hidden from you, and "
            "writing the marker would destroy it. Leave that line as it is (edit around it), or ask "
            "the user to change it"
        )
    if "\x00" in content:
        raise ToolInputError(f"Error: {tool} content contains NUL bytes; only text files can be written")
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_CONTENT_CHARS:
        raise ToolInputError(f"Error: content is too large ({size} bytes; the limit is {MAX_CONTENT_CHARS})")


def prepared_edit(ctx: ToolContext, edit: FileEdit) -> Prepared:
    """The gate's view of an edit: dry run → proposal; execute → atomic write."""
    rel = edit.target.rel
    if ctx.config.checkpoints.enabled and not git_can_store(rel):
        # refused before any proposal too: accepted in the editor, it could not be undone either
        raise ToolInputError(
            f"Error: git cannot store a file named {rel} (a `.git` or `git~1` part, in any case), so no "
            "checkpoint could hold it and rollback could not undo this write: nothing was written. "
            "Choose another name"
        )

    def dry_run() -> ToolOutcome:
        if edit.new == edit.base and edit.exists:
            text = f"=== {rel} (dry-run) ===\n(no changes)\n(dry-run: use --tool=write to apply)"
            return ToolOutcome(ok=True, result={"path": rel, "changed": False}, text=text)
        proposal = ctx.proposals.create(rel, edit.base, edit.new, reason=f"{edit.tool} {rel}", tool=edit.tool)
        result = {
            "path": rel,
            "changed": True,
            "proposal_id": proposal.id,
            "hunks": len(proposal.hunks),
            "diff": proposal.render_unified(),
        }
        return ToolOutcome(ok=True, result=result, text=proposal.render_dry_run(), proposal=proposal)

    def execute() -> ToolOutcome:
        # Where the path leads now, too: a folder swapped for a symlink since `prepare` (while the
        # user was asked, or the checkpoint taken) would lead the write somewhere else
        leads_to = (edit.target.path, Path(os.path.realpath(edit.target.path)))
        if any(path.is_relative_to(p) for path in leads_to for p in ctx.not_checkpointed):  # or inside
            limit = ctx.config.checkpoints.max_file_bytes / 1_000_000
            raise ToolInputError(
                f"Error: {rel} is held read-only for this call: it is, or is in a folder of, what this "
                f"call's checkpoint could not take (files over {limit:g} MB, or a nested repository "
                "without a commit), so rollback could not restore it: nothing was written. The user "
                "can raise `[checkpoints] max_file_bytes` in the user config, or make the change "
                "themselves"
            )
        current, _ = load_base(ctx, edit.target)
        if edit.exclusive:
            if edit.target.path.exists():
                raise ToolInputError("Error: File already exists. Use str_replace to edit existing files.")
        elif current.text != edit.base or current.exists != edit.exists:
            raise ToolInputError(
                f"Error: {rel} changed after this edit was prepared; nothing was written. "
                "Read the file again and retry."
            )
        fsutil.ensure_parent(edit.target.path, ctx.workspace, rel)
        data = fsutil.encode_text(edit.new, bom=current.bom)
        fsutil.atomic_write(edit.target.path, data, ctx.workspace, display=rel, exclusive=edit.exclusive)
        result = {
            "path": rel,
            "bytes": len(data),
            "created": not edit.exists,
            "changed": edit.new != edit.base or not edit.exists,
            "hunks": len(diff.compute_hunks(edit.base, edit.new)),
        }
        return ToolOutcome(ok=True, result=result, text=edit.success)

    return Prepared("write", True, f"{edit.tool}({rel})", execute, dry_run)


class WriteFileTool:
    spec = WRITE_SPEC

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        a = validate(self.spec, args)
        target = resolve(a["path"], ctx.workspace, write=True, settings=ctx.config.policy, tool="write_file")
        content: str = a["content"]
        check_content(content, "write_file")
        base, from_buffer = load_base(ctx, target)
        if base.exists or from_buffer:
            new = fsutil.to_file_newlines(content, base.newline)
            new = fsutil.keep_final_newline(base.text, new, base.newline)
            success = f"Wrote {len(new.encode('utf-8'))} bytes to {target.rel}"
        else:
            new = content
            success = f"Created {target.rel} ({len(new.encode('utf-8'))} bytes)"
        edit = FileEdit(
            tool="write_file",
            target=target,
            base=base.text,
            new=new,
            exists=base.exists,
            exclusive=False,
            from_buffer=from_buffer,
            success=success,
        )
        return prepared_edit(ctx, edit)
