"""Reading and writing workspace files without surprises.

Why this exists: an agent's write must never leave a half-written file (a crash between truncate and
write loses the user's code), never turn a read-only file writable, never escape the workspace through
a symlink swapped in after the policy looked, and never change a file's line endings, final newline
or byte-order mark behind the user's back. Every tool that writes goes through `atomic_write`.

Text model: a file is read as UTF-8 into a `TextFile` whose `text` has the BOM removed and the line
endings as on disk. `newline` says what the file uses ("\\r\\n" only when *every* line ending is CRLF;
mixed files are left exactly as they are and treated as "\\n"), so model-written LF text can be
converted to the file's convention with `to_file_newlines`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from tether.errors import ToolInputError

BOM = "\ufeff"
NEW_FILE_MODE = 0o644
MAX_TEXT_BYTES = 10 * 1024 * 1024
_SNIFF_BYTES = 8192


class FileProblem(ToolInputError):
    """A file cannot be read or written as text (binary, not UTF-8, too large, read-only, …)."""


@dataclass(frozen=True)
class TextFile:
    """A decoded text file: what tools edit and what proposals are computed against."""

    text: str
    bom: bool = False
    newline: str = "\n"
    exists: bool = True
    mode: int | None = None


def is_binary(data: bytes) -> bool:
    """Binary = a NUL byte in the first 8 KiB (git's and ripgrep's heuristic)."""
    return b"\x00" in data[:_SNIFF_BYTES]


def detect_newline(text: str) -> str:
    """`\\r\\n` when every line ending is CRLF, else `\\n` (LF or mixed: left untouched)."""
    lf = text.count("\n")
    if lf and text.count("\r\n") == lf:
        return "\r\n"
    return "\n"


def to_lf(text: str, newline: str) -> str:
    """The text with the file's CRLF turned into LF (for matching what the model wrote)."""
    return text.replace("\r\n", "\n") if newline == "\r\n" else text


def to_file_newlines(text: str, newline: str) -> str:
    """LF text converted to the file's newline (existing CRLF in `text` is not doubled)."""
    if newline != "\r\n":
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def keep_final_newline(old: str, new: str, newline: str) -> str:
    """If the old file ended with a newline and a non-empty replacement does not, add one."""
    if old.endswith("\n") and new and not new.endswith("\n"):
        return new + newline
    return new


def decode_text(data: bytes, display: str) -> TextFile:
    """Decode file bytes as UTF-8 text or raise FileProblem saying why not."""
    if is_binary(data):
        raise FileProblem(f"Error: {display} is a binary file; only UTF-8 text files can be read or edited")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            f"Error: {display} is not valid UTF-8 (byte {exc.start}); only UTF-8 text files can be "
            "read or edited"
        ) from exc
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    return TextFile(text=text, bom=bom, newline=detect_newline(text))


def encode_text(text: str, *, bom: bool) -> bytes:
    return ((BOM if bom else "") + text).encode("utf-8")


def open_if_regular(path: str | bytes) -> int | None:
    """A descriptor to read `path` if it is a regular file now; None if it is gone or is something
    else (a symlink, a FIFO, a socket, a device). Other errors are raised: a file that cannot be
    read must not pass for one that is not there.

    Why not `O_NONBLOCK`: it keeps a FIFO from making the open wait for a writer, but it also makes
    the open of a regular file under a write lease (Samba oplocks, NFS delegations) fail at once
    instead of waiting for the lease to be given back. `O_PATH` opens whatever is there without
    reading it; once `fstat` says it is a regular file, that same inode is opened for reading
    through `/proc/self/fd`, blocking as any open of a regular file does.
    """
    try:
        handle = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        try:
            return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # no /proc: the name again, with the old race between look and open
            return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    finally:
        os.close(handle)


def read_text(path: Path, display: str, *, max_bytes: int = MAX_TEXT_BYTES) -> TextFile:
    """Read a regular file as text; a missing file gives an empty TextFile with exists=False."""
    try:
        # O_NONBLOCK: opening a FIFO must not hang the server (regular files ignore the flag).
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return TextFile(text="", exists=False)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileProblem(f"Error: {display} is a symbolic link; it was not followed") from exc
        if exc.errno == errno.EISDIR:
            raise FileProblem(f"Error: {display} is a directory, not a file") from exc
        raise FileProblem(f"Error: cannot read {display}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem(f"Error: {display} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"Error: {display} is not a regular file")
        if info.st_size > max_bytes:
            raise FileProblem(
                f"Error: {display} is too large ({info.st_size} bytes; the limit is {max_bytes} bytes)"
            )
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise FileProblem(f"Error: {display} is too large (the limit is {max_bytes} bytes)")
    finally:
        os.close(fd)
    decoded = decode_text(data, display)
    return TextFile(
        text=decoded.text,
        bom=decoded.bom,
        newline=decoded.newline,
        exists=True,
        mode=stat.S_IMODE(info.st_mode),
    )


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def safe_target(path: Path, workspace: Path, display: str) -> Path:
    """Re-check, right before writing, that the target's real directory is inside the workspace.

    The policy already resolved the path; this closes the gap where a directory is swapped for a
    symlink in between. A final component that is a symlink is resolved and must stay inside too.
    """
    root = Path(os.path.realpath(workspace))
    parent = Path(os.path.realpath(path.parent))
    if not _inside(parent, root):
        raise FileProblem(f"Error: {display} resolves outside the workspace; nothing was written")
    target = parent / path.name
    if target.is_symlink():
        real = Path(os.path.realpath(target))
        if not _inside(real, root):
            raise FileProblem(f"Error: {display} is a symlink pointing outside the workspace")
        target = real
    return target


def atomic_write(
    path: Path,
    data: bytes,
    workspace: Path,
    *,
    display: str,
    exclusive: bool = False,
    allow_read_only: bool = False,
) -> None:
    """Write `data` to `path` atomically: temp file in the same dir, fsync, rename, fsync dir.

    `exclusive` creates the file only if it does not exist, without a race: the finished temp file
    is hard-linked to the name (link(2) fails with EEXIST), so nobody ever sees a partial file and an
    existing file is never replaced. An existing file's permission bits are kept; new files get 0644.
    A read-only file (no owner write bit) is refused unless `allow_read_only`.
    """
    target = safe_target(path, workspace, display)
    directory = target.parent
    if not directory.is_dir():
        raise FileProblem(f"Error: the directory of {display} does not exist")
    mode = NEW_FILE_MODE
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None:
        if exclusive:
            raise FileProblem("Error: File already exists. Use str_replace to edit existing files.")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"Error: {display} is not a regular file; nothing was written")
        mode = stat.S_IMODE(info.st_mode)
        if not allow_read_only and not mode & stat.S_IWUSR:
            raise FileProblem(
                f"Error: {display} is read-only (mode {mode:o}); nothing was written. "
                "Make it writable first if this edit is intended."
            )
    tmp = directory / f".{target.name}.tether-{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(tmp, target, follow_symlinks=False)
            except FileExistsError as exc:
                raise FileProblem(
                    "Error: File already exists. Use str_replace to edit existing files."
                ) from exc
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
                    raise
                _exclusive_create(target, data, mode)  # no hard links here: O_EXCL directly
            finally:
                os.unlink(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def ensure_parent(path: Path, workspace: Path, display: str) -> None:
    """Create missing parent directories one by one, each checked to be inside the workspace.

    `mkdir(parents=True)` would happily create directories through a symlink pointing outside.
    """
    root = Path(os.path.realpath(workspace))
    missing = []
    parent = path.parent
    while not parent.exists() and not parent.is_symlink():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        real_parent = Path(os.path.realpath(directory.parent))
        if not _inside(real_parent, root):
            raise FileProblem(f"Error: {display} resolves outside the workspace; nothing was written")
        directory.mkdir(mode=0o755)


def atomic_write_text(
    path: Path,
    text: str,
    *,
    workspace: Path,
    display: str | None = None,
    exclusive: bool = False,
) -> None:
    """Write text as UTF-8, keeping the existing file's BOM (a BOM already in `text` is not doubled).

    Missing parent directories are created (inside the workspace only).
    """
    ensure_parent(path, workspace, display or path.name)
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    else:
        try:
            with open(safe_target(path, workspace, display or path.name), "rb") as handle:
                bom = handle.read(3) == BOM.encode("utf-8")
        except OSError:
            bom = False
    atomic_write(
        path,
        encode_text(text, bom=bom),
        workspace,
        display=display or path.name,
        exclusive=exclusive,
    )


def _exclusive_create(target: Path, data: bytes, mode: int) -> None:
    """O_EXCL create for filesystems without hard links (not atomic for readers, still race-free)."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError as exc:
        raise FileProblem("Error: File already exists. Use str_replace to edit existing files.") from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
