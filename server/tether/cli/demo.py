"""`tether demo [--prompt P] [--offline] [--keep]`: an agent session through the real language server.

The demo plays the editor. It starts `tether serve` as a child process and talks LSP to it with
pygls' client, opens the file the agent will edit as a buffer, and answers the server's
`workspace/applyEdit` the way an editor does. The agent is Claude through the `anthropic` SDK: the
offline Messages API in this process (scripted, `tether.demo`'s `script.yaml`) unless
ANTHROPIC_API_KEY is set, then the real one. Nothing is mocked between the SDK and the disk.

It exits non-zero when a step does not do what the demo says it does, so a test can run it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient
    from rich.console import Console

DEMO_PERMISSIONS = "read,command"
EDITED_FILE = "calc.py"
SESSION_TIMEOUT = 600.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="an agent session through the real language server, on a throwaway repository",
        description="Create a small buggy project in a temporary git repository, start `tether serve`, "
        "and play an editor: ask the agent to fix it, show its tool calls (one denied), review its "
        "proposal hunk by hunk, roll back, and print the audit log. Offline (a scripted Messages API "
        "in this process) unless ANTHROPIC_API_KEY is set.",
    )
    parser.add_argument("--prompt", help="the first request to the agent (default: the demo's)")
    parser.add_argument("--offline", action="store_true", help="use the scripted API even with a key set")
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary repository and print its path"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    console = Console(highlight=False)
    online = bool(os.environ.get("ANTHROPIC_API_KEY")) and not args.offline
    with _scratch_dir(keep=args.keep, console=console) as scratch:
        demo = Demo(console, scratch, online=online, prompt=args.prompt)
        code: int = asyncio.run(asyncio.wait_for(demo.run(), SESSION_TIMEOUT))
        return code


@contextlib.contextmanager
def _scratch_dir(*, keep: bool, console: Console) -> Iterator[Path]:
    if keep:
        path = Path(tempfile.mkdtemp(prefix="tether-demo-"))
        yield path
        console.print(f"\nThe demo repository is kept at {path / 'project'}")
        return
    with tempfile.TemporaryDirectory(prefix="tether-demo-") as name:
        yield Path(name)


@dataclass
class Buffer:
    """One open editor buffer: what the demo's 'editor' shows for a file."""

    uri: str
    path: Path
    text: str
    version: int = 1


@dataclass
class Demo:
    console: Console
    scratch: Path
    online: bool
    prompt: str | None
    problems: list[str] = field(default_factory=list)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    accept_checkpoint: str | None = None  # taken before the first accepted hunk: the rollback target
    previews: dict[str, int] = field(default_factory=dict)
    # What a chat view received while the turns ran (`tether/turn`), by kind.
    streamed: dict[str, int] = field(default_factory=dict)
    docs_port: int | None = None  # the local "documentation server" the network step reaches
    sandbox: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)  # tether/approve requests seen
    answer: dict[str, Any] = field(default_factory=lambda: {"choice": "deny"})
    # Set once the session starts; the LSP handlers (called by pygls with params only) need them.
    workspace: Path = field(init=False)
    client: LanguageClient = field(init=False)

    # --- the session -----------------------------------------------------------------------------

    async def run(self) -> int:
        from tether.agent.fakeapi import FakeAnthropicServer, load_script
        from tether.demo import DEMO_PROMPT, DEMO_SCRIPT, make_demo_workspace

        workspace = make_demo_workspace(self.scratch / "project")
        self.workspace = workspace
        prompt = self.prompt or DEMO_PROMPT
        self._title("Tether demo")
        self.console.print(f"Workspace: a fresh git repository at {workspace} (calc.py has two bugs)")
        if self.online:
            self.console.print("Model: Claude through the Anthropic API (ANTHROPIC_API_KEY is set)")
            await self._session(workspace, prompt, base_url=None)
        else:
            self.console.print(
                "Model: the offline Messages API (a scripted Claude served over HTTP in this process; "
                "set ANTHROPIC_API_KEY for the real one)"
            )
            with FakeAnthropicServer(load_script(DEMO_SCRIPT)) as api:
                await self._session(workspace, prompt, base_url=api.url)
                self._check(
                    not api.failures, "the client sent what the script expected: " + "; ".join(api.failures)
                )
        return self._verdict()

    async def _session(self, workspace: Path, prompt: str, *, base_url: str | None) -> None:
        from pygls.exceptions import JsonRpcException

        self.docs_port = self._start_docs_server()
        client = await self._start_server(workspace, base_url)
        try:
            await self._steps(client, workspace, prompt)
        except JsonRpcException as exc:  # e.g. the real API refused the key: say so, do not crash
            self._check(False, f"the server answered a request with an error: {exc}")
        finally:
            await self._stop(client)

    async def _steps(self, client: LanguageClient, workspace: Path, prompt: str) -> None:
        from tether.demo import DEMO_FOLLOW_UP

        await self._open(workspace / EDITED_FILE)
        status = await self._command(client, "tether.status", {})
        self.sandbox = str(status["sandbox"])
        self.console.print(
            f"Server: tether {status['version']}, permissions [bold]{status['permissions']}[/] "
            f"(commands run, edits are proposals), sandbox [bold]{status['sandbox']}[/]"
        )

        self._step(1, f"The agent is asked: {prompt!r}")
        first = await self._command(client, "tether.ask", {"prompt": prompt})
        self._show_turn(first)
        self.console.print(
            f"  [dim]tether/turn: {self.streamed.get('text', 0)} pieces of text and "
            f"{self.streamed.get('tool', 0)} tool-card updates reached the editor while the turn ran "
            "(what the chat views draw)[/]"
        )
        self._check(self.streamed.get("text", 0) > 1, "the answer streamed to the editor (tether/turn)")
        self._check(first["stopReason"] == "end_turn", f"turn 1 ended with {first['stopReason']}")
        self._check(
            any(call["verdict"] == "denied" for call in first["toolCalls"]) or self.online,
            "the dangerous command was denied",
        )

        proposals = (await self._command(client, "tether.proposals", {"pending": True}))["proposals"]
        self._check(bool(proposals), "the agent proposed an edit")
        for proposal in proposals:
            await self._review(client, proposal)

        self._step(3, "The tests, run through the gate and the sandbox")
        tests = await self._command(
            client,
            "tether.runTool",
            {"name": "bash_command", "input": {"command": "python3 -m pytest -q", "reason": "check"}},
        )
        self._show_run(tests["result"])

        await self._person_in_the_loop(client, workspace)

        self._step(5, f"The agent hears back: {DEMO_FOLLOW_UP!r}")
        second = await self._command(
            client, "tether.ask", {"prompt": DEMO_FOLLOW_UP, "conversationId": first["conversationId"]}
        )
        self._show_turn(second)

        await self._rollback(client, workspace)
        await self._audit(client, workspace)

    # --- the steps -------------------------------------------------------------------------------

    async def _review(self, client: LanguageClient, proposal: dict[str, Any]) -> None:
        self._step(
            2, f"Review of proposal {proposal['id']} for {proposal['path']} ({len(proposal['hunks'])} hunks)"
        )
        diff = (await self._command(client, "tether.diff", {"id": proposal["id"]}))["diff"]
        self._show_diff(diff)
        hunks = [h["index"] for h in proposal["hunks"]]
        accepted = await self._command(client, "tether.accept", {"id": proposal["id"], "hunks": hunks[:1]})
        self.console.print(
            f"  accept hunk {hunks[0]}: applied via the {accepted['appliedVia']}, "
            f"checkpoint {accepted['checkpoint']} taken first"
        )
        if self.accept_checkpoint is None:
            self.accept_checkpoint = accepted["checkpoint"]
        if len(hunks) > 1:
            rejected = await self._command(
                client, "tether.reject", {"id": proposal["id"], "hunks": hunks[1:]}
            )
            self.console.print(
                f"  reject hunk(s) {', '.join(map(str, rejected['rejected']))}: nothing written"
            )
        buffer = self.buffers.get(proposal["path"])
        if buffer is not None:
            self._check(buffer.path.read_text() == buffer.text, "the accepted buffer was saved to disk")

    async def _person_in_the_loop(self, client: LanguageClient, workspace: Path) -> None:
        """An ask answered in the editor, then workspace mode: any program, in the sandbox."""
        self._step(4, "The person in the loop: an approval, then workspace mode")
        commit = "git commit -qam 'fix add'"
        explained = await self._command(client, "tether.explain", {"command": commit})
        self.console.print(
            f"  tether explain {commit!r}: [yellow]{explained['verdict']}[/] ({explained['rule']}), "
            f"by mode {explained['modes']}"
        )
        self.answer = {"choice": "deny", "message": "Not yet: I commit after my own review."}
        asked = await self._command(
            client, "tether.runTool", {"name": "bash_command", "input": {"command": commit}}
        )
        result = asked["result"]
        self.console.print(f"  → [red]{result['state']}[/]; the model is told: {result['text']}")
        self._check(bool(self.questions), "the editor was asked about `git commit`")
        self._check(result["state"] == "denied", "the user's Deny stopped the commit")
        self._check(self.answer["message"] in result["text"], "the user's reason reached the model")
        self._check(len(_git(workspace, "log", "--oneline").splitlines()) == 1, "nothing was committed")

        work = (
            "mkdir -p build && cat <<'EOF' > build/NOTES.md\nadd() is fixed; mean() still divides wrong\nEOF"
        )
        before = await self._command(client, "tether.checkCommand", {"command": work, "mode": "command"})
        self.console.print(
            f"  in command mode `mkdir … && cat <<'EOF' > …`: {before['verdict']} ({before['rule']})"
        )
        changed = await self._command(client, "tether.setPermissions", {"permissions": "workspace"})
        self.console.print(f"  permissions → [bold]{changed['permissions']}[/] (an audit line of its own)")
        ran = await self._command(
            client, "tether.runTool", {"name": "bash_command", "input": {"command": work}}
        )
        payload = ran["result"].get("result") or {}
        written = "written" if (workspace / "build" / "NOTES.md").exists() else "missing"
        self.console.print(
            f"  workspace mode ran it in the {payload.get('sandbox', 'sandbox')}: "
            f"exit {payload.get('exit_code')}, build/NOTES.md {written}"
        )
        self._check(ran["result"]["state"] == "executed", "workspace mode ran mkdir and the here-document")
        await self._command(client, "tether.setPermissions", {"permissions": DEMO_PERMISSIONS})
        await self._network_step(client, workspace)

    async def _network_step(self, client: LanguageClient, workspace: Path) -> None:
        """The network allowlist: an allowed name answers through the proxy, any other is refused."""
        from rich.markup import escape

        if self.docs_port is None:
            return
        allowed = f"curl -sS http://localhost:{self.docs_port}/python-docs.txt"
        ran = await self._command(
            client, "tether.runTool", {"name": "bash_command", "input": {"command": allowed}}
        )
        result = ran["result"]
        if result.get("state") == "executed":
            body = str((result.get("result") or {}).get("stdout", "")).strip()
            self.console.print(
                f"  network allowlist: `{allowed}` → [green]{body}[/] (through Tether's proxy)"
            )
            self._check("statistics.fmean" in body, "an allowed name answered through the proxy")
        else:
            self.console.print(f"  network allowlist: {result.get('text', '').splitlines()[0]}")
            self._check(result.get("state") != "executed" and "bubblewrap" not in self.sandbox, "curl ran")
            return
        refused = await self._command(
            client,
            "tether.runTool",
            {"name": "bash_command", "input": {"command": "curl -sS http://example.com/"}},
        )
        text = str((refused["result"].get("result") or {}).get("stdout", "")).strip()
        self.console.print(f"  any other name: `curl -sS http://example.com/` → [red]{escape(text)}[/]")
        self._check("network.unknown_domain" in text, "a name outside the allowlist was refused")

    def _on_approve(self, params: Any) -> dict[str, Any]:
        """The editor's approval dialog: show the question, give the scripted answer."""
        from rich.markup import escape

        question = _as_dict(params)
        self.questions.append(question)
        always = question.get("always") or {}
        self.console.print(
            f"  [yellow]editor asks:[/] {escape(str(question.get('command')))} — "
            + escape(
                f"{question.get('reason')} [{question.get('rule')}]; "
                f"sandbox network {(question.get('sandbox') or {}).get('network')}"
            )
        )
        if always:
            self.console.print(f'  [dim]  "Always allow" would add to {escape(str(always.get("file")))}[/]')
        self.console.print(f"  [yellow]user:[/] Deny — {self.answer.get('message')!r}")
        return self.answer

    async def _rollback(self, client: LanguageClient, workspace: Path) -> None:
        self._step(6, "Rollback: undo the accepted edit, and what workspace mode did, from the editor")
        listed = (await self._command(client, "tether.checkpoints", {}))["checkpoints"]
        for cp in listed:
            files = ", ".join(cp["files"]) or "nothing"
            self.console.print(f"  checkpoint {cp['id']}  before {cp['tool']}  (changed since: {files})")
        target = self.accept_checkpoint
        if target is None:
            self._check(False, "there is an accepted edit to roll back")
            return
        preview = await self._command(client, "tether.rollback", {"checkpoint": target, "dryRun": True})
        self.console.print(f"  dry run: would restore {preview['restored']}, delete {preview['deleted']}")
        done = await self._command(client, "tether.rollback", {"checkpoint": target})
        self.console.print(
            f"  rolled back: restored {done['restored']}, deleted {done['deleted']}; "
            f"the present was checkpointed first as {done['checkpoint']} (so this is undoable too)"
        )
        changed = _git(workspace, "status", "--porcelain")
        self.console.print(f"  git status: {changed.strip() or 'clean, as before the accepted edit'}")
        self._check(not changed.strip(), "the working tree is back to the committed project")
        git_log = _git(workspace, "log", "--oneline", "--all")
        stash = _git(workspace, "stash", "list")
        self.console.print(
            f"  your git history is untouched: {len(git_log.splitlines())} commit(s) on your refs, "
            f"{len(stash.splitlines())} stash entries"
        )
        self._check(
            len(git_log.splitlines()) == 1 and not stash.strip(), "the user's refs and stash are untouched"
        )

    async def _audit(self, client: LanguageClient, workspace: Path) -> None:
        from rich.table import Table

        from tether.core.session import open_session

        self._step(7, "The audit log (append-only JSONL, hash-chained)")
        entries = (await self._command(client, "tether.toolLog", {"n": 50}))["entries"]
        table = Table(show_edge=False, pad_edge=False)
        for column in ("tool", "state", "rule", "ms", "source", "permissions"):
            table.add_column(column)
        for entry in entries:
            decision = entry.get("decision") or {}
            result = entry.get("result") or {}
            state = str(entry.get("state", ""))
            # faces do not import tools: this is how tools/bash.py's PROXY_REFUSED starts (test_demo
            # fails if they drift); curl without -f exits 0 on the proxy's refusal
            if state == "failed" and str(result.get("error", "")).startswith("the network proxy refused"):
                state = "failed (network)"
            if state.startswith(("executed", "failed")) and result.get("exit_code") is not None:
                state = f"{state}, exit {result['exit_code']}"
            table.add_row(
                str(entry.get("tool")),
                state,
                str(decision.get("rule") or ""),
                str(entry.get("duration_ms", "")),
                str(entry.get("source", "")),
                str(entry.get("permissions", "")),
            )
        self.console.print(table)
        gate = open_session(workspace).gate
        chain = gate.verify_log()
        self.console.print(
            f"  hash chain: {'intact' if chain.ok else 'BROKEN: ' + str(chain.reason)}, "
            f"{chain.checked} entries ({gate.audit.path})"
        )
        self._check(chain.ok and len(entries) > 0, "the audit log is complete and its chain intact")

    # --- the language server and the 'editor' ----------------------------------------------------

    async def _start_server(self, workspace: Path, base_url: str | None) -> LanguageClient:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        client = LanguageClient("tether-demo", "1")
        # pygls tags handler functions with attributes, which bound methods cannot carry: wrap them.
        handlers: dict[str, Callable[[Any], Any]] = {
            "tether/event": self._on_event,
            "tether/turn": self._on_turn,
            "tether/approve": self._on_approve,
            types.WORKSPACE_APPLY_EDIT: self._on_apply_edit,
            types.WINDOW_SHOW_MESSAGE: self._on_message,
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: self._on_diagnostics,
        }
        for method, handler in handlers.items():
            client.feature(method)(_plain_function(handler))
        await client.start_io(
            sys.executable, "-P", "-m", "tether", "serve", env=self._server_env(base_url), cwd=workspace
        )
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(apply_edit=True),
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True)
            ),
        )
        await client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities,
                process_id=os.getpid(),
                root_uri=workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
                initialization_options={"permissions": DEMO_PERMISSIONS, "approvals": True, "chat": True},
            )
        )
        client.initialized(types.InitializedParams())
        self.client = client
        return client

    def _server_env(self, base_url: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        # The demo's own config dirs: your Tether config (hooks, rules, model) does not change it.
        for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[name] = str(self.scratch / name.lower())
        if self.docs_port is not None:  # the demo's user config: one allowed name, a local server
            config = self.scratch / "xdg_config_home" / "tether" / "config.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text('[network]\nallowed_domains = ["localhost"]\nallow_local_addresses = true\n')
        env["TETHER_MANAGED_CONFIG"] = str(self.scratch / "managed.toml")
        if base_url is not None:
            env["ANTHROPIC_BASE_URL"] = base_url
            env.pop("ANTHROPIC_API_KEY", None)
        return env

    async def _open(self, path: Path) -> None:
        from lsprotocol import types

        buffer = Buffer(uri=path.as_uri(), path=path, text=path.read_text(encoding="utf-8"))
        self.buffers[path.relative_to(self.workspace).as_posix()] = buffer
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=buffer.uri, language_id="python", version=buffer.version, text=buffer.text
                )
            )
        )

    def _on_apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        """Apply the edit to the open buffer and save it, as an editor with auto-save would."""
        from lsprotocol import types

        changes = params.edit.changes or {}
        for uri, edits in changes.items():
            buffer = next((b for b in self.buffers.values() if b.uri == uri), None)
            if buffer is None:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} is not open")
            buffer.text = apply_text_edits(buffer.text, edits)
            buffer.version += 1
            buffer.path.write_text(buffer.text, encoding="utf-8")
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=buffer.version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=buffer.text)],
                )
            )
            self.client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            self.console.print(
                f"  [dim]editor: workspace/applyEdit, {len(edits)} edit(s) to {buffer.path.name} "
                f"(version {buffer.version}), saved[/]"
            )
        return types.ApplyWorkspaceEditResult(applied=bool(changes))

    def _on_event(self, params: Any) -> None:
        event = _as_dict(params)
        decision = event.get("decision") or {}
        rule = f" ({decision.get('rule')})" if decision.get("rule") else ""
        color = {"denied": "red", "failed": "red", "stale": "yellow", "dry_run": "yellow"}.get(
            str(event.get("state")), "cyan"
        )
        self.console.print(
            f"  [dim]tether/event:[/] {event.get('tool')} [{color}]{event.get('state')}[/]{rule}"
        )

    def _on_turn(self, params: Any) -> None:
        kind = str(_as_dict(params).get("kind"))
        self.streamed[kind] = self.streamed.get(kind, 0) + 1

    def _on_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        """The inline previews an editor shows: one diagnostic per pending hunk."""
        name = params.uri.rsplit("/", 1)[-1]
        shown = len(params.diagnostics)
        if self.previews.get(name, 0) != shown:
            self.previews[name] = shown
            self.console.print(f"  [dim]editor: {shown} pending hunk preview(s) shown in {name}[/]")

    def _on_message(self, params: types.ShowMessageParams) -> None:
        from lsprotocol import types

        if params.type in (types.MessageType.Error, types.MessageType.Warning):
            self.console.print(f"  [yellow]server says:[/] {params.message}")

    async def _command(self, client: LanguageClient, name: str, argument: dict[str, Any]) -> dict[str, Any]:
        from lsprotocol import types

        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=[argument])
        )
        return _as_dict(result)

    def _start_docs_server(self) -> int:
        """A local HTTP server (in this process) that the network step may reach by name."""
        import http.server
        import threading

        root = self.scratch / "docs-server"
        root.mkdir(exist_ok=True)
        (root / "python-docs.txt").write_text("statistics.fmean(data): the mean of data, as a float\n")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a, **k: Quiet(*a, directory=str(root), **k)
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return int(server.server_address[1])

    async def _stop(self, client: LanguageClient) -> None:
        import asyncio

        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 10)  # type: ignore[no-untyped-call]

    # --- output ----------------------------------------------------------------------------------

    def _title(self, text: str) -> None:
        self.console.rule(f"[bold]{text}")

    def _step(self, number: int, text: str) -> None:
        self.console.print()
        self.console.print(f"[bold]{number}. {text}[/]")

    def _show_turn(self, turn: dict[str, Any]) -> None:
        from rich.markup import escape

        for call in turn["toolCalls"]:
            verdict = call["verdict"]
            color = {"denied": "red", "failed": "red", "proposed": "yellow", "dry_run": "yellow"}.get(
                verdict, "green"
            )
            line = f"  tool {call['name']}({_brief(call['input'])}) → [{color}]{verdict}[/]"
            if verdict == "denied" and call.get("reason"):
                line += f": {escape(str(call['reason']))}"
            self.console.print(line)
        self.console.print(f"  [bold]Claude:[/] {turn['text']}")
        self.console.print(f"  [dim]{turn['requests']} request(s), ${turn['cost']:.4f}[/]")

    def _show_diff(self, diff: str) -> None:
        from rich.syntax import Syntax

        self.console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))

    def _show_run(self, result: dict[str, Any]) -> None:
        payload = result.get("result") or {}
        self.console.print(f"  exit {payload.get('exit_code')} in the {payload.get('sandbox', 'sandbox')}")
        for line in str(payload.get("stdout", "")).strip().splitlines()[-3:]:
            self.console.print(f"  | {line}")

    def _check(self, ok: bool, what: str) -> None:
        if not ok:
            self.problems.append(what)
            self.console.print(f"  [red]✗ expected: {what}[/]")

    def _verdict(self) -> int:
        self.console.print()
        if self.problems:
            self.console.rule("[red]The demo did not go as described")
            for problem in self.problems:
                self.console.print(f"  - {problem}")
            return 1
        self.console.rule("[green]Demo complete: every step did what it says")
        return 0


def _plain_function(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def handler(params: Any) -> Any:
        return method(params)

    return handler


def apply_text_edits(text: str, edits: Sequence[Any]) -> str:
    """Apply LSP TextEdits (non-overlapping, all against `text`) the way an editor does."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: Any) -> int:  # into the original text; characters are UTF-16 units in LSP,
        line, character = int(position.line), int(position.character)  # = code points for ASCII
        if line >= len(lines):
            return starts[-1]
        return starts[line] + min(character, len(lines[line]))

    result = text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        result = result[: offset(edit.range.start)] + edit.new_text + result[offset(edit.range.end) :]
    return result


def _as_dict(value: Any) -> dict[str, Any]:
    """pygls hands over custom JSON as dicts or as attribute objects, depending on the path."""
    if isinstance(value, dict):
        return value
    if hasattr(value, "_asdict"):  # pygls.protocol.Object, a namedtuple
        return {k: _plain(v) for k, v in value._asdict().items()}
    raise TypeError(f"unexpected LSP payload {value!r}")


def _plain(value: Any) -> Any:
    if isinstance(value, dict) or hasattr(value, "_asdict"):
        return _as_dict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _brief(arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if k in ("path", "command", "pattern"))
    return shown if len(shown) < 70 else shown[:67] + "..."


def _git(workspace: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=True).stdout
