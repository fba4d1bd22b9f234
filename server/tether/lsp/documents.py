"""Open editor buffers as the gate's `DocumentSource`: proposals are computed against what the user sees.

The gate asks from worker threads; pygls applies `didChange` on the event loop. Reading a buffer is
therefore done *on the loop* (`server.on_loop`), which gives a consistent (text, version) pair: never
the text of one version with the number of another.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from tether.core.tools.base import OpenDocument
    from tether.lsp.server import TetherServer


class WorkspaceDocuments:
    """Maps workspace paths to the client's open text documents."""

    def __init__(self, server: TetherServer) -> None:
        self._server = server
        self._paths: dict[str, Path] = {}  # uri -> resolved path, filled lazily

    def get(self, path: Path) -> OpenDocument | None:
        """The open buffer for `path` (text and version), or None when the file is not open."""
        return self._server.on_loop(lambda: self.snapshot(path))

    def snapshot(self, path: Path) -> OpenDocument | None:
        """Same as `get`, for callers already on the event loop."""
        from tether.core.tools.base import OpenDocument

        uri = self.uri_for(path)
        if uri is None:
            return None
        document = self._server.workspace.get_text_document(uri)
        return OpenDocument(text=document.source, version=document.version)

    def uri_for(self, path: Path) -> str | None:
        """The URI under which the client opened `path`, if it is open."""
        target = _resolve(path)
        uri: str
        for uri in list(self._server.workspace.text_documents):
            if self.path_of(uri) == target:
                return uri
        return None

    def path_of(self, uri: str) -> Path | None:
        """The resolved filesystem path of an open document's URI (None for non-file URIs)."""
        cached = self._paths.get(uri)
        if cached is None:
            fs_path = to_fs_path(uri)
            if not fs_path or not uri.startswith("file:"):
                return None
            cached = self._paths[uri] = _resolve(Path(fs_path))
        return cached

    def forget(self, uri: str) -> None:
        self._paths.pop(uri, None)


def _resolve(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except OSError:
        return path.absolute()
