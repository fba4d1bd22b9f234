"""`tether serve` with one extra tool whose policy verdict is *ask*: the Neovim approval e2e's server.

Why: until the policy answers *ask* for real commands (rules, issue 13), no built-in tool asks. This
is the real server, gate, approver and `tether/approve` request; only the asking tool is the test's
(like `MarkerTool` in tests/integration/test_approvals_gate.py): `ask_commit` makes a real git commit
in the workspace, and needs `command` permission and a person's approval.
Usage: python _neovim_asking_server.py [tether serve options]
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import tether.core.session as session_module
from tether.cli import main
from tether.core.approvals import ApprovalNeed, AskedSegment
from tether.core.tools.base import ToolContext, ToolOutcome, ToolSpec
from tether.core.tools.inputs import Prepared
from tether.core.tools.registry import default_tools

REASON = "changes your repository's history beyond the work tree"


class AskingCommit:
    spec = ToolSpec(
        "ask_commit",
        "git commit --allow-empty -m MESSAGE, after a person approves",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    )

    def prepare(self, ctx: ToolContext, args: Mapping[str, Any]) -> Prepared:
        argv = ("git", "commit", "--allow-empty", "-q", "-m", str(args["message"]))

        def run() -> ToolOutcome:
            proc = subprocess.run(argv, cwd=ctx.workspace, capture_output=True, text=True, check=False)
            ok = proc.returncode == 0
            return ToolOutcome(ok=ok, result={"ok": ok, "exit_code": proc.returncode}, text=proc.stderr)

        def preview() -> ToolOutcome:
            return ToolOutcome(ok=True, result={"ok": True}, text="dry run: " + " ".join(argv))

        need = ApprovalNeed(
            command=" ".join(argv),
            mode="command",
            rule="ask.git_state",
            reason=REASON,
            segments=(AskedSegment(argv, "ask.git_state", REASON),),
        )
        decision = {"allowed": False, "verdict": "ask", "rule": "ask.git_state", "reason": REASON}
        return Prepared("command", True, " ".join(argv), run, preview, decision, need)


_open_session = session_module.open_session


def _with_asking_tool(*args: Any, **kwargs: Any) -> Any:
    kwargs["tools"] = [*default_tools(), AskingCommit()]
    return _open_session(*args, **kwargs)


if __name__ == "__main__":
    session_module.open_session = _with_asking_tool  # type: ignore[assignment]
    sys.exit(main(["serve", *sys.argv[1:]]))
