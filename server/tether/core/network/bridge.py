"""Inside the sandbox: a TCP port on the sandbox's own loopback that leads to the proxy's socket.

Why a bridge: the sandbox keeps its own network namespace (only loopback), so a program that ignores
the proxy variables reaches nothing at all; programs that honour `HTTP(S)_PROXY` connect to
127.0.0.1:PORT, and this forwards each connection to the proxy's Unix socket, bound into the
sandbox. The code runs with `python3 -c` so no file of Tether's needs to be visible inside.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SANDBOX_SOCKET = "/run/tether/proxy.sock"
PROXY_PORT = 3128
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"

BRIDGE = r"""
import os, socket, sys, threading
path, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
if os.fork():
    srv.close()
    os.execvp(cmd[0], cmd)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def serve(c):
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        u.connect(path)
    except OSError:
        c.close()
        return
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
    pump(c, u)
os.close(0)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


def bridge_prefix(command: tuple[str, ...]) -> tuple[str, ...]:
    """`command` started behind the bridge (the bridge listens before the command runs)."""
    return (_python(), "-c", BRIDGE, SANDBOX_SOCKET, str(PROXY_PORT), *command)


def _python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if Path(candidate).exists():
            return candidate
    return shutil.which("python3") or sys.executable


def proxy_env() -> tuple[tuple[str, str], ...]:
    """What points programs at the proxy: the usual variables and the package managers' own."""
    names = (
        "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
        "PIP_PROXY", "npm_config_proxy", "npm_config_https_proxy", "CARGO_HTTP_PROXY",
        "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
    )  # fmt: skip
    return (*((name, PROXY_URL) for name in names), ("NO_PROXY", ""), ("no_proxy", ""))


__all__ = ["PROXY_URL", "SANDBOX_SOCKET", "bridge_prefix", "proxy_env"]
