"""The LSP face's `Approver`: ask the person in the editor while the tool call waits.

Clients that declare support (`initializationOptions.approvals: true`, or
`capabilities.experimental.tetherApprovals: true`) get the request `tether/approve` with the whole
question and answer `{choice, message?}`. Every other client gets `window/showMessageRequest` with the
four actions, exactly "Allow once", "Allow for this session", "Always allow", "Deny" — any LSP client
can answer that. The gate calls the approver on a worker thread; the request is sent from the event
loop and the worker waits for the answer, the request's timeout, or the call's cancellation —
whichever comes first; the last two are a deny, and the client is told to drop the question.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tether.core.approvals import (
    TITLES,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    await_answer,
    choice_for_title,
    denied,
    parse_answer,
)

if TYPE_CHECKING:
    from tether.lsp.server import TetherServer

log = logging.getLogger(__name__)

APPROVE_METHOD = "tether/approve"


def client_answers_approvals(ls: TetherServer) -> bool:
    """Whether the client said it answers `tether/approve` (init option or experimental capability)."""
    if ls.options.approvals:
        return True
    try:
        experimental = ls.client_capabilities.experimental
    except AttributeError:  # before `initialize`
        return False
    return isinstance(experimental, Mapping) and experimental.get("tetherApprovals") is True


def make_approver(ls: TetherServer) -> Approver:
    """The approver the server's session uses; see the module docstring."""

    def approve(request: ApprovalRequest, cancel: threading.Event) -> ApprovalAnswer:
        if client_answers_approvals(ls):
            return _ask(
                ls, APPROVE_METHOD, request.to_json(), request=request, cancel=cancel, parse=parse_answer
            )
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=request.text(),
            actions=[types.MessageActionItem(title=title) for title in TITLES.values()],
        )
        return _ask(
            ls, types.WINDOW_SHOW_MESSAGE_REQUEST, params, request=request, cancel=cancel, parse=_from_action
        )

    return approve


def _from_action(raw: Any) -> ApprovalAnswer:
    title = raw.title if isinstance(raw, types.MessageActionItem) else None
    if isinstance(raw, Mapping):
        title = raw.get("title")
    return choice_for_title(title)


def _ask(
    ls: TetherServer,
    method: str,
    params: Any,
    *,
    request: ApprovalRequest,
    cancel: threading.Event,
    parse: Callable[[Any], ApprovalAnswer],
) -> ApprovalAnswer:
    try:
        future: Future[Any] = ls.on_loop(lambda: ls.protocol.send_request(method, params), timeout=10)
    except Exception as exc:  # no loop, closed transport: nobody can answer
        log.warning("cannot ask the editor: %s", exc)
        return denied(f"the editor could not be asked ({exc}): treated as deny")
    return await_answer(
        future,
        timeout=request.timeout,
        cancelled=cancel.is_set,
        parse=lambda raw: parse(_plain(raw)),
        withdraw=lambda: _drop(ls, future),
        who="the editor",
    )


def _drop(ls: TetherServer, future: Future[Any]) -> None:
    """Tell the client to take the question down (`$/cancelRequest`), and forget the answer."""
    msg_id = next((k for k, v in ls.protocol._request_futures.items() if v is future), None)
    future.cancel()
    if msg_id is not None:
        ls.call_soon(_withdraw, ls, msg_id)


def _withdraw(ls: TetherServer, msg_id: Any) -> None:
    """On the event loop: forget the pending request, so a late answer is dropped quietly
    (pygls logs "Error in server: CANCELLED" for an answer to a cancelled future), then cancel it."""
    ls.protocol._request_futures.pop(msg_id, None)
    ls.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))


def _plain(raw: Any) -> Any:
    """pygls may hand untyped results over as objects with attributes; the parsers want mappings."""
    if raw is None or isinstance(raw, Mapping | str | int | float | bool | list):
        return raw
    if isinstance(raw, types.MessageActionItem):
        return raw
    return {key: getattr(raw, key) for key in ("choice", "message", "title") if hasattr(raw, key)}
