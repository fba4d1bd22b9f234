"""Network proxy benchmark: latency and throughput through Tether's proxy vs a direct connection.

Run: python tests/bench/bench_network.py [--rounds N] [--megabytes M]
Both are measured in the same run against the same local HTTP server: a direct TCP request, and the
same request through the proxy's Unix socket (what the bridge in the sandbox connects to), so the
ratio is the proxy's own cost (its checks, resolving the name, relaying).
"""

from __future__ import annotations

import argparse
import http.server
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tether.core.network.proxy import NetworkProxy
from tether.core.network.rules import NetworkSettings


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _get(sock: socket.socket, request: bytes) -> int:
    sock.sendall(request)
    total = 0
    while True:
        data = sock.recv(1 << 20)
        if not data:
            return total
        total += len(data)


def direct(port: int, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        return _get(sock, f"GET /{path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())


def proxied(proxy: NetworkProxy, port: int, path: str) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(proxy.socket_path))
        return _get(sock, f"GET http://localhost:{port}/{path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())


def timed(fn: object, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--megabytes", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.txt").write_text("hello\n")
        (root / "big.bin").write_bytes(b"\0" * (args.megabytes << 20))
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a, **k: _Quiet(*a, directory=str(root), **k)
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        settings = NetworkSettings(allowed_domains=("localhost",), allow_local_addresses=True)
        with NetworkProxy(settings, lambda record: None) as proxy:
            base = timed(lambda: direct(port, "small.txt"), args.rounds)
            through = timed(lambda: proxied(proxy, port, "small.txt"), args.rounds)
            print(f"small request, direct:        median {base * 1000:7.2f} ms ({args.rounds} rounds)")
            print(
                f"small request, through proxy: median {through * 1000:7.2f} ms   "
                f"+{(through - base) * 1000:.2f} ms, ratio {through / base:.1f}x"
            )
            big_direct = timed(lambda: direct(port, "big.bin"), 3)
            big_proxy = timed(lambda: proxied(proxy, port, "big.bin"), 3)
            mb = args.megabytes
            print(f"{mb} MB download, direct:        {mb / big_direct:8.0f} MB/s")
            print(
                f"{mb} MB download, through proxy: {mb / big_proxy:8.0f} MB/s   "
                f"ratio {big_proxy / big_direct:.2f}x the time"
            )
        server.shutdown()


if __name__ == "__main__":
    main()
