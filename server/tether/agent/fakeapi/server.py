"""An offline Messages API on 127.0.0.1, playing a script: the real SDK talks real HTTP to it.

Streaming follows the wire format of the real API event for event (`message_start`, `ping`,
`content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`, `thinking_delta`)
/ `content_block_stop`, `message_delta` with `stop_reason` and `usage`, `message_stop`), sent as
HTTP/1.1 chunked server-sent events; a dropped connection is therefore an incomplete chunked body,
exactly what a client sees when a real connection dies.

Only the standard library: `http.server.ThreadingHTTPServer` — one thread per connection, so a
stalled stream never blocks the next request.
"""

from __future__ import annotations

import json
import select
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tether.agent.fakeapi.checks import check_request
from tether.agent.fakeapi.script import Script, Step

STALL_LIMIT_SECONDS = 60.0
TEXT_CHUNK = 12  # characters per text_delta: several deltas per block, as the real API sends
JSON_CHUNK = 16  # characters per input_json_delta


@dataclass
class ReceivedRequest:
    """What a test may inspect about one request (the key itself is kept only as a fingerprint)."""

    number: int
    path: str
    body: Any
    headers: dict[str, str]
    step: int | None
    status: int


@dataclass
class _State:
    script: Script
    next_step: int = 0
    served_tool_ids: list[str] = field(default_factory=list)
    requests: list[ReceivedRequest] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)


class FakeAnthropicServer:
    """The scripted API as an object: `with FakeAnthropicServer(script) as api: … api.url …`."""

    def __init__(self, script: Script, *, host: str = "127.0.0.1", port: int = 0, quiet: bool = True) -> None:
        self.state = _State(script)
        self.quiet = quiet
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        shown = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{shown}:{port}"

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def failures(self) -> list[str]:
        with self.state.lock:
            return list(self.state.failures)

    @property
    def steps_left(self) -> int:
        with self.state.lock:
            return len(self.state.script.steps) - self.state.next_step

    def start(self) -> FakeAnthropicServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self.state.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, message: str) -> None:
        if not self.quiet:
            print(f"fake-api: {message}", file=sys.stderr, flush=True)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tether-fake-api/1"

    def setup(self) -> None:
        super().setup()
        # many small SSE chunks: without this, Nagle + delayed ACKs add ~40 ms per response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def fake(self) -> FakeAnthropicServer:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib would print to stderr
        self.fake.log(format % args)

    # --- routing ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("", "/health"):
            self._json(200, {"ok": True, "steps_left": self.fake.steps_left})
        else:
            self._error(404, "not_found_error", f"no such endpoint: GET {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError as exc:
            self._reject(path, None, f"request body is not valid JSON: {exc}")
            return
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": _estimate_tokens(raw)})
            return
        if path != "/v1/messages":
            self._error(404, "not_found_error", f"no such endpoint: POST {path}")
            return
        if not self.headers.get("x-api-key") and not self.headers.get("authorization"):
            self._record(path, body, None, 401)
            self._error(401, "authentication_error", "x-api-key header is required")
            return
        self._messages(path, body, raw)

    # --- /v1/messages --------------------------------------------------------------------------

    def _messages(self, path: str, body: Any, raw: bytes) -> None:
        state = self.fake.state
        with state.lock:
            if state.next_step >= len(state.script.steps):
                message = (
                    f"script {state.script.name!r} is exhausted: request {len(state.requests) + 1} has no "
                    f"step left ({len(state.script.steps)} step(s) in the script)"
                )
                index = None
                step = None
            else:
                index = state.next_step
                step = state.script.steps[index]
                message = ""
                if step.kind == "message":
                    message = check_request(body, state.served_tool_ids, step.expect) or ""
                state.next_step += 1
        if step is None or message:
            self._reject(path, body, message, step=index)
            return
        assert index is not None
        self._record(path, body, index, step.status if step.kind == "error" else 200)
        if step.kind == "error":
            headers = {}
            if step.retry_after is not None:
                headers["retry-after"] = _format_seconds(step.retry_after)
            self._error(step.status, step.error_type, step.message, headers)
            return
        if step.kind == "drop" and step.drop in ("before_response", "stall"):
            if step.drop == "stall":
                self._stall(state.closing)
            self._hang_up()
            return
        stream = isinstance(body, Mapping) and bool(body.get("stream"))
        message_obj = _message(step, body, raw, state.script.model)
        if step.kind == "message":
            with state.lock:
                state.served_tool_ids = step.tool_use_ids
        if not stream and step.kind == "message":
            self._json(200, message_obj)
            return
        self._stream(step, message_obj)

    def _stream(self, step: Step, message: Mapping[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:20]}")
        self.end_headers()
        closing = self.fake.state.closing
        try:
            for n, (event, data) in enumerate(_events(step, message), start=1):
                if step.kind == "drop" and n > 4:
                    self._hang_up()  # mid-stream: headers and a few events, then the connection dies
                    return
                if step.kind == "error_event" and n > 2:
                    error = {"type": step.error_type, "message": step.message}
                    self._chunk(_sse("error", {"type": "error", "error": error}))
                    break
                self._chunk(_sse(event, data))
                if step.hang_after is not None and n >= step.hang_after:
                    self._stall(closing)
                    self._hang_up()
                    return
                if step.chunk_delay:
                    closing.wait(step.chunk_delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.fake.log("client went away mid-stream")
            self.close_connection = True

    # --- helpers -------------------------------------------------------------------------------

    def _stall(self, closing: threading.Event) -> None:
        """Send nothing until the client hangs up, the server stops, or the stall limit passes."""
        deadline = time.monotonic() + STALL_LIMIT_SECONDS
        while not closing.wait(0.05) and time.monotonic() < deadline:
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    self.fake.log("client hung up during a stall")
                    return
            except OSError:
                return

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:20]}")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        self._json(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)

    def _reject(self, path: str, body: Any, message: str, step: int | None = None) -> None:
        state = self.fake.state
        with state.lock:
            number = len(state.requests) + 1
            state.failures.append(f"request {number}: {message}")
        self._record(path, body, step, 400)
        print(f"fake-api: request {number} rejected: {message}", file=sys.stderr, flush=True)
        # x-should-retry: false — a malformed request will not improve by being sent again
        self._error(400, "invalid_request_error", f"fake-api: {message}", {"x-should-retry": "false"})

    def _record(self, path: str, body: Any, step: int | None, status: int) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        for secret in ("x-api-key", "authorization"):
            if secret in headers:
                headers[secret] = _fingerprint(headers[secret])
        state = self.fake.state
        with state.lock:
            state.requests.append(ReceivedRequest(len(state.requests) + 1, path, body, headers, step, status))
        self.fake.log(f"{path} step={step} status={status}")


def _fingerprint(secret: str) -> str:
    """Tests check *that* a key was sent, never what it was: keep a length and a tiny hash."""
    import hashlib

    return f"<{len(secret)} chars sha256:{hashlib.sha256(secret.encode()).hexdigest()[:12]}>"


def _format_seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _estimate_tokens(raw: bytes) -> int:
    return max(1, len(raw) // 4)


def _message(step: Step, body: Any, raw: bytes, model: str | None) -> dict[str, Any]:
    requested = body.get("model") if isinstance(body, Mapping) else None
    content = [dict(b) for b in step.content]
    usage = {
        "input_tokens": _estimate_tokens(raw),
        "output_tokens": max(1, len(json.dumps(content)) // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    usage.update(step.usage or {})
    return {
        "id": f"msg_fake_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model or requested or "claude-fake",
        "content": content,
        "stop_reason": step.stop_reason if step.kind == "message" else None,
        "stop_sequence": None,
        "usage": usage,
    }


def _events(step: Step, message: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in _pieces(block["text"], TEXT_CHUNK):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        elif kind == "thinking":
            yield (
                "content_block_start",
                _block_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
            )
            for piece in _pieces(block["thinking"], TEXT_CHUNK):
                yield "content_block_delta", _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": block["signature"]}),
            )
        elif kind == "tool_use":
            start_block = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield "content_block_start", _block_start(index, start_block)
            for piece in _pieces(json.dumps(block["input"]), JSON_CHUNK):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "input_json_delta", "partial_json": piece}),
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _pieces(text: str, size: int) -> Iterator[str]:
    if not text:
        yield ""
        return
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def serve(script: Script, *, port: int = 0, quiet: bool = False) -> None:
    """Run in the foreground until interrupted; print the URL on stdout once listening."""
    server = FakeAnthropicServer(script, port=port, quiet=quiet)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (kill, make) ends it as Ctrl-C does, with the summary

    signal.signal(signal.SIGTERM, stop)
    print(server.url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.state.closing.set()
        server._httpd.server_close()
        failures = server.failures
        if failures:
            print(f"fake-api: {len(failures)} request(s) were rejected:", file=sys.stderr)
            for failure in failures:
                print(f"  {failure}", file=sys.stderr)
        print(f"fake-api: {server.steps_left} step(s) of {script.name!r} left unplayed", file=sys.stderr)
