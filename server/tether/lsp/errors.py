"""Tether errors → JSON-RPC errors. The only place they are converted (see `tether.errors`).

Bad arguments (wrong shape, unknown proposal or hunk) are `InvalidParams` (-32602); everything the
user can act on but that is not a bad argument — no workspace folder, a stale proposal, an edit the
editor refused — is `RequestFailed` (-32803) with the readable message and, where useful, `data`.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tether.errors import ProposalError, ProposalStale, TetherError, ToolInputError

REQUEST_FAILED = -32803


class ParamsError(TetherError):
    """A command's argument does not have the documented shape."""


class NoWorkspace(TetherError):
    """The client opened no folder, so there is no workspace to guard."""

    def __init__(self) -> None:
        super().__init__(
            "Tether needs a workspace folder: open a folder (or start the server with a rootUri) and "
            "run the command again"
        )


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=f"Invalid Params: {message}")


def request_failed(message: str, data: Any = None) -> JsonRpcException:
    return JsonRpcException(message=message, code=REQUEST_FAILED, data=data)


def to_jsonrpc(exc: TetherError, data: Any = None) -> JsonRpcException:
    """Translate one Tether error for the client."""
    if isinstance(exc, ParamsError | ToolInputError) or (
        isinstance(exc, ProposalError) and not isinstance(exc, ProposalStale)
    ):
        return invalid_params(str(exc))
    return request_failed(str(exc), data)
