"""The network allowlist end to end: real curl and git in the real sandbox, through the real proxy,
against local servers; and the proxy itself against what an attacker sends it (docs/network.md).

Local servers listen on 127.0.0.1 and are reached by the name `localhost` (the system resolver), so
the user config says `allow_local_addresses = true` — as it must for any local development server.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_support import init_repo, tether

from tether.core.network.proxy import NetworkProxy
from tether.core.network.rules import NetworkSettings
from tether.core.sandbox import probe_backend

pytestmark = pytest.mark.skipif(
    not probe_backend("bubblewrap").available, reason="the network allowlist needs bubblewrap"
)

BODY = "hello from the test server\n"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _serve(root: Path, tls: tuple[Path, Path] | None = None) -> Iterator[int]:
    handler = lambda *a, **k: _Quiet(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "hello.txt").write_text(BODY)
    return root


@pytest.fixture
def http_port(site: Path) -> Iterator[int]:
    yield from _serve(site)


@pytest.fixture
def https_port(site: Path, tmp_path: Path) -> Iterator[int]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    yield from _serve(site, (cert, key))


def configure(home: Path, text: str) -> None:
    config = home / "config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


LOCAL = '[network]\nallowed_domains = ["localhost"]\nallow_local_addresses = true\n'


def run(ws: Path, home: Path, command: str) -> dict[str, Any]:
    done = tether(ws, "run", "--json", "--permissions", "command", command, home=home)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def audit(ws: Path, home: Path) -> list[dict[str, Any]]:
    log = tether(ws, "log", "--json", home=home).stdout
    return [
        e for e in (json.loads(line) for line in log.splitlines() if line.strip()) if e["tool"] == "network"
    ]


def test_curl_reaches_an_allowed_name_and_each_connection_is_audited(tmp_path: Path, http_port: int) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    configure(tmp_path, LOCAL)
    result = run(ws, tmp_path, f"curl -sS http://localhost:{http_port}/hello.txt")
    assert result["state"] == "executed", result
    assert result["result"]["stdout"] == BODY
    lines = audit(ws, tmp_path)
    assert len(lines) == 1, (result, lines)
    line = lines[0]
    assert line["state"] == "executed"
    assert line["input"]["host"] == "localhost"
    assert line["input"]["port"] == http_port
    assert line["input"]["command"] == f"curl -sS http://localhost:{http_port}/hello.txt"
    assert line["result"]["bytesDown"] > len(BODY)


def test_https_through_connect_with_the_tls_name_checked(tmp_path: Path, https_port: int) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    configure(tmp_path, LOCAL)
    result = run(ws, tmp_path, f"curl -sSk https://localhost:{https_port}/hello.txt")
    assert result["result"]["stdout"] == BODY, result
    assert audit(ws, tmp_path)[0]["result"]["method"] == "CONNECT"


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://127.0.0.1:{port}/hello.txt", "network.ip_literal"),
        ("http://2130706433:{port}/hello.txt", "network.ip_literal"),
        ("http://[::1]:{port}/hello.txt", "network.ip_literal"),
        ("http://example.com/", "network.unknown_domain"),
        ("http://169.254.169.254/latest/meta-data/", "network.ip_literal"),
    ],
)
def test_other_names_and_ip_literals_fail_with_a_clear_message(
    tmp_path: Path, http_port: int, url: str, rule: str
) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    configure(tmp_path, LOCAL)
    command = f"curl -sS {url.format(port=http_port)}"
    result = run(ws, tmp_path, command)
    assert BODY not in result["result"]["stdout"]
    assert f"tether: {rule}" in result["result"]["stdout"]  # what curl printed: the proxy's 403
    assert result["state"] == "failed"  # curl exits 0 on a 403: the result says it failed, and why
    assert "the network proxy refused" in result["text"]
    assert rule in result["result"]["error"]
    assert audit(ws, tmp_path)[0]["state"] == "denied"
    assert tether(ws, "run", "--permissions", "command", command, home=tmp_path).returncode != 0


def test_without_allow_local_addresses_a_name_that_resolves_to_loopback_is_refused(
    tmp_path: Path, http_port: int
) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    configure(tmp_path, f'[network]\nallowed_domains = ["localhost:{http_port}"]\n')  # the port named
    result = run(ws, tmp_path, f"curl -sS http://localhost:{http_port}/hello.txt")
    assert "tether: network.local_address" in result["result"]["stdout"]


def test_a_program_that_ignores_the_proxy_gets_no_network_at_all(tmp_path: Path, http_port: int) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    (ws / "direct.py").write_text(
        "import socket, sys\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {http_port}), timeout=3)\n"
        "    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e)\n"
    )
    configure(tmp_path, LOCAL)
    done = tether(ws, "run", "--json", "--permissions", "workspace", "python3 direct.py", home=tmp_path)
    result = json.loads(done.stdout)
    assert result["state"] == "executed", result
    assert "CONNECTED" not in result["result"]["stdout"]
    assert "refused" in result["result"]["stdout"]


def test_off_by_default_curl_stays_denied(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    result = run(ws, tmp_path, "curl -sS http://localhost/")
    assert result["state"] == "denied"
    assert result["decision"]["rule"] == "command.blocked"


def test_the_project_cannot_allow_domains_but_can_deny_them(tmp_path: Path, http_port: int) -> None:
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    (ws / ".tether").mkdir()
    (ws / ".tether" / "config.toml").write_text('[network]\nallowed_domains = ["evil.example"]\n')
    assert run(ws, tmp_path, "curl -sS http://evil.example/")["state"] == "denied"  # still off
    configure(tmp_path, LOCAL)
    (ws / ".tether" / "config.toml").write_text('[network]\ndenied_domains = ["localhost"]\n')
    result = run(ws, tmp_path, f"curl -sS http://localhost:{http_port}/hello.txt")
    assert "tether: network.denied_domain" in result["result"]["stdout"]


# --- the proxy itself, spoken to directly ------------------------------------------------------------


def _proxy(records: list[dict[str, Any]]) -> NetworkProxy:
    settings = NetworkSettings(allowed_domains=("localhost", "other.test"), allow_local_addresses=True)
    return NetworkProxy(settings, records.append)


def _ask(proxy: NetworkProxy, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(proxy.socket_path))
        s.sendall(payload)
        chunks = []
        while True:
            try:
                data = s.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)


def _client_hello(server_name: str) -> bytes:
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def test_a_tunnel_whose_tls_name_differs_from_the_connect_host_is_closed(https_port: int) -> None:
    records: list[dict[str, Any]] = []
    with _proxy(records) as proxy:
        answer = _ask(
            proxy, f"CONNECT localhost:{https_port} HTTP/1.1\r\n\r\n".encode() + _client_hello("other.test")
        )
        assert answer.startswith(b"HTTP/1.1 200")
        assert len(answer) == len(b"HTTP/1.1 200 Connection Established\r\n\r\n")  # nothing relayed
        good = _ask(
            proxy, f"CONNECT localhost:{https_port} HTTP/1.1\r\n\r\n".encode() + _client_hello("localhost")
        )
        assert len(good) > 60  # the server's handshake came back
    assert [r["rule"] for r in records] == ["network.sni_mismatch", "network.allowed"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"CONNECT localhost\x00.evil:443 HTTP/1.1\r\n\r\n",
        b"GET http://localhost%00.evil/ HTTP/1.1\r\n\r\n",
        b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n",
        b"CONNECT [::ffff:169.254.169.254]:80 HTTP/1.1\r\n\r\n",
        b"GET ftp://localhost/ HTTP/1.1\r\n\r\n",
        b"GET /relative HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"\x05\x01\x00",  # SOCKS5: not spoken
        b"CONNECT " + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"CONNECT localhost:99999 HTTP/1.1\r\n\r\n",
    ],
)
def test_what_the_proxy_refuses(request_bytes: bytes) -> None:
    records: list[dict[str, Any]] = []
    with _proxy(records) as proxy:
        answer = _ask(proxy, request_bytes)
    assert not answer.startswith(b"HTTP/1.1 200")
    assert records
    assert records[0]["decision"] == "deny"


def test_the_proxy_socket_is_private(tmp_path: Path) -> None:
    with _proxy([]) as proxy:
        mode = os.stat(proxy.socket_path.parent).st_mode & 0o777
        assert mode == 0o700
    assert not proxy.socket_path.exists()


# --- package managers and git through the proxy (each asked about first: the person allows once) ----


def _approving_session(ws: Path, home: Path, permissions: str = "workspace") -> Any:
    from tether.core.approvals import ApprovalAnswer
    from tether.core.config import load_config
    from tether.core.session import FaceOverrides, open_session

    configure(home, LOCAL)
    config = load_config(ws, user_path=home / "config" / "tether" / "config.toml")
    return open_session(
        ws,
        FaceOverrides(permissions=permissions),
        config=config,
        approver=lambda request, cancel: ApprovalAnswer("allow_once"),
    )


def _wheel(directory: Path, name: str, version: str) -> Path:
    """A minimal valid wheel, enough for `pip download` to accept it."""
    import zipfile

    path = directory / f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "VALUE = 1\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as zf:
        for rel, text in files.items():
            zf.writestr(rel, text)
        zf.writestr(f"{dist}/RECORD", "".join(f"{rel},,\n" for rel in files) + f"{dist}/RECORD,,\n")
    return path


def test_pip_downloads_from_a_local_index_through_the_proxy(
    tmp_path: Path, site: Path, http_port: int
) -> None:
    wheel = _wheel(tmp_path, "tetherdemo", "1.0")
    package = site / "simple" / "tetherdemo"
    package.mkdir(parents=True)
    (package / wheel.name).write_bytes(wheel.read_bytes())
    (package / "index.html").write_text(
        f'<html><body><a href="{wheel.name}">{wheel.name}</a></body></html>\n'
    )
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    session = _approving_session(ws, tmp_path)
    command = (
        f"python3 -m pip download --no-deps --disable-pip-version-check -q -d dl "
        f"--index-url http://localhost:{http_port}/simple/ tetherdemo"
    )
    result = session.gate.call("bash_command", {"command": command})
    assert result.state == "executed", result.text
    assert (ws / "dl" / wheel.name).read_bytes() == wheel.read_bytes()
    lines = [e for e in session.gate.log() if e["tool"] == "network"]
    assert lines
    assert {e["input"]["host"] for e in lines} == {"localhost"}


def test_git_fetches_over_http_through_the_proxy(tmp_path: Path, site: Path, http_port: int) -> None:
    origin = init_repo(tmp_path / "origin", {"lib.txt": "library\n"})
    bare = site / "lib.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, check=True)
    ws = init_repo(tmp_path / "ws", {"README.md": "x\n"})
    session = _approving_session(ws, tmp_path)
    command = f"git fetch -q http://localhost:{http_port}/lib.git HEAD"
    result = session.gate.call("bash_command", {"command": command})
    assert result.state == "executed", result.text
    fetched = subprocess.run(
        ["git", "cat-file", "-p", "FETCH_HEAD:lib.txt"], cwd=ws, capture_output=True, text=True, check=True
    )
    assert fetched.stdout == "library\n"
    assert any(e["tool"] == "network" and e["state"] == "executed" for e in session.gate.log())
