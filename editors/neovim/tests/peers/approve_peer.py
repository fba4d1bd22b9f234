"""A JSON-RPC peer on stdio that asks Neovim the server's two approval questions, and records the answers.

Why it exists: until the policy answers *ask* for a real command, `tether serve` never sends
`tether/approve`; this peer sends exactly what docs/lsp.md specifies (`tether/approve`, then the
fallback `window/showMessageRequest` with the four actions) so the plugin's answer travels through
Neovim's real LSP client and RPC layer. Usage: approve_peer.py OUT.json (written once both are answered).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TITLES = ["Allow once", "Allow for this session", "Always allow", "Deny"]
APPROVE = {
    "id": "ap-peer-1",
    "tool": "bash_command",
    "command": "git commit -m x",
    "mode": "command",
    "rule": "ask.git_state",
    "reason": "changes your repository's history beyond the work tree",
    "segments": [
        {
            "argv": ["git", "commit", "-m", "x"],
            "rule": "ask.git_state",
            "reason": "changes your repository's history",
        }
    ],
    "sandbox": {"backend": "bubblewrap", "network": "none", "writable": ["/ws"]},
    "always": None,
    "timeoutMs": 60000,
}


def read() -> dict[str, Any]:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(msg: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def answer_of(request_id: int) -> dict[str, Any]:
    """Read until the response to `request_id`, answering the client's own requests with null."""
    while True:
        msg = read()
        if msg.get("id") == request_id and "method" not in msg:
            return msg
        if "method" in msg and "id" in msg:
            send({"id": msg["id"], "result": None})
            if msg["method"] == "shutdown":
                sys.exit(0)


def main() -> None:
    out = sys.argv[1]
    init = read()
    send({"id": init["id"], "result": {"capabilities": {}, "serverInfo": {"name": "approve-peer"}}})
    record: dict[str, Any] = {"initializationOptions": init["params"].get("initializationOptions")}
    send({"id": 9001, "method": "tether/approve", "params": APPROVE})
    record["approve"] = answer_of(9001)
    actions = [{"title": t} for t in TITLES]
    send(
        {
            "id": 9002,
            "method": "window/showMessageRequest",
            "params": {"type": 2, "message": "Tether: allow `git commit -m x`?", "actions": actions},
        }
    )
    record["showMessageRequest"] = answer_of(9002)
    with open(out + ".tmp", "w") as f:
        json.dump(record, f)

    os.replace(out + ".tmp", out)
    while True:
        answer_of(-1)


if __name__ == "__main__":
    main()
