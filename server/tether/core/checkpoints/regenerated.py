"""Build outputs a checkpoint leaves out, by directory name: what regenerates is not worth a snapshot.

Why by name: a checkpoint covers git-ignored files too (an ignored `.env` or `local.db` is as much
the user's as any source file), but `node_modules/` with 50,000 files, a `target/` of compiled
objects or a `.venv/` would make every checkpoint cost seconds, and each is rebuilt by one command
(`npm install`, `cargo build`, `pip install`). Only *ignored* directories with one of these names
are left out: a tracked `build/` directory is the user's source and is snapshotted like any other.

The list is pure data so that every face can say "writable, not checkpointed" for a path; users
extend it with `[checkpoints] regenerated = [...]` (names of directories).
"""

from __future__ import annotations

from collections.abc import Iterable

REGENERATED_DIRS: frozenset[str] = frozenset(
    {
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        "target",
        "dist",
        "build",
        ".gradle",
        ".next",
        ".nuxt",
        ".parcel-cache",
        ".turbo",
        ".terraform",
    }
)
"""Directory names whose ignored copies are build outputs (docs/checkpoints.md lists them)."""


def regenerated_dir(path: str, extra: Iterable[str] = ()) -> str | None:
    """The build-output directory `path` (workspace-relative, `/`-separated) lies in, or None.

    `web/node_modules/react/index.js` → `web/node_modules`; a trailing `/` marks `path` itself as a
    directory (`dist/`), otherwise its last part is a file name and never matches. Whether the
    directory is ignored is the caller's question: only ignored ones are left out of checkpoints.
    """
    names = REGENERATED_DIRS.union(extra)
    parts = path.split("/")[:-1]  # `dist/` → ["dist"]; `a/b.txt` → ["a"]
    for index, part in enumerate(parts):
        if part in names:
            return "/".join(parts[: index + 1])
    return None
