"""The network proxy: runs outside the sandbox for one command, reachable inside only through a
Unix socket bound into it (docs/network.md).

HTTP CONNECT (for https and anything tunnelled) and plain HTTP (absolute-form requests). For each
connection: parse the request, check the host against the allowlist (`rules.host_verdict`), resolve
the name here, check every address (`rules.address_verdict`), connect to an address that passed —
so nothing can rebind between the check and the connection — and, for CONNECT, read the TLS
ClientHello and close the tunnel unless its SNI names the same host. Every connection is one audit
record (host, port, decision, bytes each way).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.core.network.rules import NetworkSettings, Verdict, address_verdict, host_verdict, normalize_host

MAX_HEAD = 16 * 1024
IDLE_SECONDS = 60.0
CONNECT_SECONDS = 10.0

Record = Callable[[dict[str, Any]], None]


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        self.server.track(client)
        client.settimeout(IDLE_SECONDS)
        record: dict[str, Any] = {"host": None, "port": None, "method": None, "bytesUp": 0, "bytesDown": 0}
        started = time.monotonic()
        try:
            self._serve(client, record)
        except (OSError, ValueError) as exc:
            record.setdefault("error", str(exc))
        finally:
            record["ms"] = int((time.monotonic() - started) * 1000)
            record.setdefault("decision", "deny")
            self.server.record(record)

    def _serve(self, client: socket.socket, record: dict[str, Any]) -> None:
        head, rest = _read_head(client)
        method, target, version, headers = _parse_head(head)
        record["method"] = method
        if method == "CONNECT":
            host, port = _split_host_port(target, default=443)
        else:
            host, port, target = _absolute_target(target)
        record["host"], record["port"] = host, port
        verdict, addresses = self._check(host, port)
        record["rule"] = verdict.rule
        if not verdict.allowed or not addresses:
            record["decision"], record["reason"] = "deny", verdict.reason
            _refuse(client, verdict)
            return
        try:
            upstream = _connect(addresses)
        except OSError as exc:
            unreachable = Verdict(False, "network.unreachable", f"{host}:{port} did not answer ({exc})")
            record["decision"], record["rule"], record["reason"] = (
                "deny",
                unreachable.rule,
                unreachable.reason,
            )
            _refuse(client, unreachable, status=b"502 Bad Gateway")
            return
        self.server.track(upstream)
        record["address"] = upstream.getpeername()[0]
        with upstream:
            upstream.settimeout(IDLE_SECONDS)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                hello = _read_client_hello(client, rest)
                sni = _sni(hello)
                if sni is None or normalize_host(sni) != normalize_host(host):
                    record["decision"] = "deny"
                    record["rule"] = "network.sni_mismatch"
                    record["reason"] = f"the TLS name {sni!r} is not the CONNECT host {host!r}"
                    return
                upstream.sendall(hello)
                record["bytesUp"] += len(hello)
            else:
                upstream.sendall(_origin_request(method, target, version, headers) + rest)
                record["bytesUp"] += len(rest)
            record["decision"] = "allow"
            _relay(client, upstream, record)

    def _check(self, raw_host: str, port: int) -> tuple[Verdict, list[tuple[int, str, int]]]:
        """The verdict, and the addresses that passed it (family, address, port), in resolver order.

        A name that resolves to any forbidden address is refused as a whole: a mix of public and
        private answers is how DNS rebinding starts.
        """
        settings = self.server.settings
        host, verdict = host_verdict(raw_host, port, settings)
        if not verdict.allowed:
            return verdict, []
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            return Verdict(False, "network.unresolved", f"{host} does not resolve ({exc})"), []
        passed: list[tuple[int, str, int]] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            address = str(sockaddr[0])
            checked = address_verdict(address, port, settings, host)
            if not checked.allowed:
                return checked, []
            verdict = checked
            passed.append((family, address, port))
        return verdict, passed


def _connect(addresses: list[tuple[int, str, int]]) -> socket.socket:
    """Connect to the first checked address that answers (never to a name: no second lookup)."""
    error: OSError | None = None
    for family, address, port in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect((address, port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error if error is not None else OSError("no address to connect to")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    # Not daemon threads: `server_close` joins them, so every connection's audit record is written
    # before the command's result is returned (a CLI process would otherwise exit first).
    daemon_threads = False
    block_on_close = True
    settings: NetworkSettings
    record: Record

    def __init__(self, path: str, handler: type[_Handler]) -> None:
        super().__init__(path, handler)
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._live.add(sock)

    def cut_all(self) -> None:
        """The command has ended: end its connections too (their records keep the bytes so far)."""
        with self._lock:
            live, self._live = self._live, set()
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class NetworkProxy:
    """One proxy on a Unix socket in a private directory; `socket_path` is bound into the sandbox."""

    def __init__(self, settings: NetworkSettings, record: Record) -> None:
        self._dir = tempfile.mkdtemp(prefix="tether-net-")
        os.chmod(self._dir, 0o700)
        self.socket_path = Path(self._dir) / "proxy.sock"
        self._server = _Server(str(self.socket_path), _Handler)
        self._server.settings = settings
        self._server.record = record
        self._thread = threading.Thread(target=self._server.serve_forever, name="tether-proxy", daemon=True)

    def __enter__(self) -> NetworkProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.cut_all()
        self._server.server_close()  # joins the handler threads: every record is written
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
            os.rmdir(self._dir)


# --- HTTP ---------------------------------------------------------------------------------------------


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise ValueError("request head too large")
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("connection closed before the request head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _parse_head(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    if b"\0" in head:
        raise ValueError("NUL byte in the request")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.x request line: {lines[0][:100]!r}")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise ValueError(f"bad header line {line[:100]!r}")
        headers.append((name, value.strip()))
    return parts[0].upper(), parts[1], parts[2], headers


def _split_host_port(target: str, *, default: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, tail = target[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, sep, port = target.rpartition(":")
        if not sep:
            host, port = target, ""
    if port and not port.isdigit():
        raise ValueError(f"bad port in {target!r}")
    return host, int(port) if port else default


def _absolute_target(target: str) -> tuple[str, int, str]:
    if not target.lower().startswith("http://"):
        raise ValueError("only absolute http:// requests and CONNECT are proxied")
    rest = target[7:]
    authority, slash, path = rest.partition("/")
    host, port = _split_host_port(authority, default=80)
    return host, port, slash + path if slash else "/"


_HOP_HEADERS = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


def _origin_request(method: str, path: str, version: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {path} {version}"]
    lines += [f"{k}: {v}" for k, v in headers if k.lower() not in _HOP_HEADERS]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _refuse(client: socket.socket, verdict: Verdict, status: bytes = b"403 Forbidden") -> None:
    body = f"tether: {verdict.rule}: {verdict.reason}\n".encode()
    client.sendall(
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
        + f"X-Tether-Rule: {verdict.rule}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _relay(a: socket.socket, b: socket.socket, record: dict[str, Any]) -> None:
    pair = {a: (b, "bytesUp"), b: (a, "bytesDown")}
    open_ = [a, b]
    while open_:
        ready, _, _ = select.select(open_, [], [], IDLE_SECONDS)
        if not ready:
            return
        for sock in ready:
            data = sock.recv(65536)
            other, key = pair[sock]
            if not data:
                open_.remove(sock)
                with contextlib.suppress(OSError):
                    other.shutdown(socket.SHUT_WR)
                continue
            other.sendall(data)
            record[key] += len(data)


# --- TLS ClientHello: the server name ------------------------------------------------------------------


def _read_client_hello(client: socket.socket, already: bytes) -> bytes:
    data = already
    while len(data) < 5:
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("the tunnel closed before a TLS ClientHello")
        data += chunk
    if data[0] != 0x16:
        raise ValueError("the tunnel did not start with a TLS handshake")
    length = int.from_bytes(data[3:5], "big")
    while len(data) < 5 + length:
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("the TLS ClientHello was cut short")
        data += chunk
    return data


def _sni(record: bytes) -> str | None:
    """The server_name of a ClientHello in one TLS record, or None."""
    try:
        body = record[5:]
        if body[0] != 0x01:
            return None
        pos = 4 + 2 + 32  # handshake header, client version, random
        pos += 1 + body[pos]  # session id
        pos += 2 + int.from_bytes(body[pos : pos + 2], "big")  # cipher suites
        pos += 1 + body[pos]  # compression methods
        end = pos + 2 + int.from_bytes(body[pos : pos + 2], "big")
        pos += 2
        while pos + 4 <= end:
            kind = int.from_bytes(body[pos : pos + 2], "big")
            size = int.from_bytes(body[pos + 2 : pos + 4], "big")
            data = body[pos + 4 : pos + 4 + size]
            if kind == 0:  # server_name: list length, type 0 (host_name), name length, name
                if data[2] != 0:
                    return None
                name_len = int.from_bytes(data[3:5], "big")
                name = data[5 : 5 + name_len]
                return name.decode("ascii") if name.isascii() and b"\0" not in name else None
            pos += 4 + size
    except IndexError:
        return None
    return None
