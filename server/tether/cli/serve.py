"""`tether serve [--log-file F] [-v]`: the language server over stdio.

stdout carries the protocol, so logging goes to stderr or the log file, never stdout. pygls is
imported only when the server starts, so other commands do not pay for it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from typing import Any

# After the client is gone, how long running work may take to notice its cancellation.
EXIT_GRACE_SECONDS = 10.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the language server over stdio (for editors)",
        description="Speak LSP over stdin/stdout. Logs go to stderr, or to --log-file.",
    )
    parser.add_argument("--log-file", metavar="F", help="append logs to this file instead of stderr")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="-v info, -vv debug (with protocol)"
    )
    parser.add_argument(
        "--stdio", action="store_true", help="accepted for clients that pass it; stdio is the default"
    )
    parser.set_defaults(handler=_serve)


def _configure_logging(log_file: str | None, verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler: logging.Handler
    if log_file:
        handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The protocol logger writes every message at INFO: only with -vv.
    logging.getLogger("pygls").setLevel(logging.DEBUG if verbose > 1 else logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(AnsweredErrors())


class AnsweredErrors(logging.Filter):
    """Errors the server answers on purpose (a typo in params, a stale proposal) are not crashes.

    pygls logs each of them with a traceback at ERROR, which buries real failures in an editor's
    log: they become one INFO line. Internal errors keep their traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from pygls.exceptions import JsonRpcException, JsonRpcInternalError

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            record.msg, record.args = "answered a request with an error: %s", (error,)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _serve(args: argparse.Namespace) -> int:
    _configure_logging(args.log_file, args.verbose)
    from tether.lsp.app import create_server

    server = create_server()
    server.start_io()
    # The client is gone: `exit`, or stdin closed because the editor crashed. Work still running
    # (a command, a turn waiting on the network) is cancelled; whatever ignores that for longer
    # than the grace period does not keep an orphaned server alive.
    server.stop_work()
    _exit_when_idle(EXIT_GRACE_SECONDS)
    return 0


def _exit_when_idle(grace: float) -> None:
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [
        t.name
        for t in threading.enumerate()
        if t.is_alive() and not t.daemon and t is not threading.current_thread()
    ]
    if stuck:
        logging.getLogger("tether.serve").warning("exiting with work still running: %s", ", ".join(stuck))
        logging.shutdown()
        os._exit(0)
