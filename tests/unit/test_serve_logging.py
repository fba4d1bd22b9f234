"""`tether serve` logging: answered errors are one line, real failures keep their traceback."""

from __future__ import annotations

import logging
import sys

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from tether.cli.serve import AnsweredErrors


def _record(error: Exception) -> logging.LogRecord:
    try:
        raise error
    except Exception:
        info = sys.exc_info()
    return logging.LogRecord("pygls.protocol.json_rpc", logging.ERROR, "x", 1, "failed %s", ("1",), info)


def test_an_answered_error_is_one_info_line() -> None:
    record = _record(JsonRpcInvalidParams("tether.accept: unknown key 'hunk'"))
    assert AnsweredErrors().filter(record)
    assert record.levelno == logging.INFO
    assert record.exc_info is None
    assert record.getMessage() == "answered a request with an error: tether.accept: unknown key 'hunk'"


def test_an_internal_error_keeps_its_traceback() -> None:
    record = _record(JsonRpcInternalError("boom"))
    assert AnsweredErrors().filter(record)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
