"""Fixtures for the language-server e2e tests (helpers in `_lsp_support.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from _lsp_support import CLIENTS, Editor, capabilities, start_editor, stop_editor


@pytest.fixture(params=CLIENTS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture
async def editor(tmp_path: Path, client_kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Editor]:
    files = getattr(request, "param", None)
    started = await start_editor(tmp_path, capabilities(client_kind), client_kind, files=files)
    yield started
    await stop_editor(started)
