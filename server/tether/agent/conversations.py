"""Conversations on disk: `.tether/conversations/<id>/` and the counters in `.tether/config.json`.

Layout of one conversation:
    meta.json                  id, created, model, stats, proposals awaiting review, turn history
    messages.json              the full message list, so `--conversation ID` can continue it
    <stamp>-request.json       each request exactly as sent (model, system, tools, messages)
    <stamp>-response.json      its response (content blocks, stop_reason, usage, cost)
    events.jsonl               cancellations, stops and errors, one JSON object per line

`<stamp>` is a sortable UTC timestamp (`20261122T101500123456Z`): it is what `replay` takes.
The seed's `config.json` keeps totals across conversations (tokens in/out, cost, tool calls,
first_run, last_run). Every write is atomic (temp file + rename) and every text passes through the
redactor first, so a secret that slipped into a tool output never lands on disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.errors import AgentError

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_STAMP = re.compile(r"^\d{8}T\d{12}Z$")
Redact = Callable[[str], str]


def _now() -> datetime:
    return datetime.now(UTC)


def iso_now() -> str:
    return _now().isoformat(timespec="seconds").replace("+00:00", "Z")


def _stamp() -> str:
    return _now().strftime("%Y%m%dT%H%M%S%fZ")


def _atomic_write(path: Path, text: str, *, durable: bool = False) -> None:
    """Temp file + rename: never a half-written file. `durable` adds an fsync (≈3 ms) — used where a
    power loss must not lose the data (the end of a turn, the counters), not on every step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _no_redaction(text: str) -> str:
    return text


@dataclass
class Stats:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    requests: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": round(self.cost, 6),
            "tool_calls": self.tool_calls,
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, data: Any) -> Stats:
        if not isinstance(data, dict):
            return cls()
        return cls(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost=float(data.get("cost", 0.0)),
            tool_calls=int(data.get("tool_calls", 0)),
            requests=int(data.get("requests", 0)),
        )


@dataclass
class Conversation:
    id: str
    path: Path
    messages: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    redact: Redact = _no_redaction

    @property
    def stats(self) -> Stats:
        return Stats.from_json(self.meta.get("stats"))

    @stats.setter
    def stats(self, value: Stats) -> None:
        self.meta["stats"] = value.to_json()

    @property
    def pending_proposals(self) -> list[str]:
        return [str(p) for p in self.meta.get("pending_proposals", [])]

    @pending_proposals.setter
    def pending_proposals(self, ids: list[str]) -> None:
        self.meta["pending_proposals"] = list(dict.fromkeys(ids))

    def _dump(self, value: Any) -> str:
        return self.redact(json.dumps(value, indent=1, ensure_ascii=False, default=str)) + "\n"

    def save(self, *, durable: bool = False) -> None:
        _atomic_write(self.path / "messages.json", self._dump(self.messages), durable=durable)
        _atomic_write(self.path / "meta.json", self._dump(self.meta), durable=durable)

    def save_exchange(self, request: dict[str, Any], response: dict[str, Any] | None) -> str:
        """Write one request (and its response, when there is one); returns the stamp."""
        stamp = _stamp()
        while (self.path / f"{stamp}-request.json").exists():
            stamp = _stamp()
        _atomic_write(self.path / f"{stamp}-request.json", self._dump({"time": iso_now(), **request}))
        if response is not None:
            self.save_response(stamp, response)
        return stamp

    def save_response(self, stamp: str, response: dict[str, Any]) -> None:
        _atomic_write(self.path / f"{stamp}-response.json", self._dump({"time": iso_now(), **response}))

    def record(self, kind: str, **detail: Any) -> None:
        """Append an event line (cancelled, stopped, error…); a torn write loses only that line."""
        line = self.redact(json.dumps({"time": iso_now(), "event": kind, **detail}, default=str))
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def events(self) -> list[dict[str, Any]]:
        path = self.path / "events.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

    def summary(self) -> dict[str, Any]:
        """One line of a conversation list: what a chat view shows to pick one to resume."""
        turns = self.meta.get("turns") or []
        last = turns[-1] if turns and isinstance(turns[-1], dict) else {}
        return {
            "id": self.id,
            "title": _title(self.messages),
            "created": self.meta.get("created"),
            "updated": last.get("ended") or last.get("started") or self.meta.get("created"),
            "model": self.meta.get("model"),
            "turns": len(turns),
            "cost": self.stats.cost,
        }

    def transcript(self) -> list[dict[str, Any]]:
        """The conversation as a chat shows it: the person's prompts, the answers, the tool calls.

        Tool results are matched to their calls; the texts Tether itself added to a prompt (the
        outcome of earlier proposals) stay with the prompt they were sent with.
        """
        entries: list[dict[str, Any]] = []
        calls: dict[str, dict[str, Any]] = {}
        for message in self.messages:
            blocks = _blocks(message)
            text = "\n\n".join(t.strip() for t in _texts(blocks) if t.strip())
            if message.get("role") == "assistant":
                if text:
                    entries.append({"role": "assistant", "text": text})
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        call_id = str(block.get("id"))
                        call: dict[str, Any] = {
                            "role": "tool",
                            "id": call_id,
                            "name": str(block.get("name")),
                            "input": block.get("input"),
                        }
                        calls[call_id] = call
                        entries.append(call)
                continue
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    answered = calls.get(str(block.get("tool_use_id")))
                    if answered is not None:
                        answered["output"] = _result_text(block.get("content"))
                        answered["isError"] = bool(block.get("is_error"))
            if text:
                entries.append({"role": "user", "text": text})
        return entries

    def stamps(self) -> list[str]:
        """Stamps of the saved responses, oldest first."""
        return sorted(p.name[: -len("-response.json")] for p in self.path.glob("*-response.json"))

    def _has_tool_use(self, stamp: str) -> bool:
        try:
            data = json.loads((self.path / f"{stamp}-response.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return False
        return any(isinstance(b, dict) and b.get("type") == "tool_use" for b in data.get("content") or [])

    def load_response(self, stamp: str | None = None) -> tuple[str, dict[str, Any]]:
        stamps = self.stamps()
        if not stamps:
            raise AgentError(f"conversation {self.id} has no saved response to replay")
        if stamp is None:
            # the newest response that asked for tools: replaying a plain answer would do nothing
            stamp = next((s for s in reversed(stamps) if self._has_tool_use(s)), stamps[-1])
        elif stamp not in stamps:
            matches = [s for s in stamps if s.startswith(stamp)]
            if len(matches) != 1:
                shown = ", ".join(stamps[-5:])
                raise AgentError(
                    f"no single saved response matches {stamp!r} in conversation {self.id} (latest: {shown})"
                )
            stamp = matches[0]
        data = json.loads((self.path / f"{stamp}-response.json").read_text(encoding="utf-8"))
        return stamp, data


def _title(messages: list[dict[str, Any]], limit: int = 80) -> str:
    """The first prompt's first line, shortened: how people recognise a conversation."""
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in reversed(_texts(_blocks(message))):  # the prompt is the message's last text
            if text.strip():
                line = text.strip().splitlines()[0]
                return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def _blocks(message: dict[str, Any]) -> list[Any]:
    """A message's content as blocks (the API also accepts a plain string)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _texts(blocks: list[Any]) -> list[str]:
    return [str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


class ConversationStore:
    def __init__(self, workspace: Path, *, redact: Redact = _no_redaction) -> None:
        self.workspace = workspace
        self.root = workspace / ".tether" / "conversations"
        self.counters_path = workspace / ".tether" / "config.json"
        self.redact = redact

    def _dir(self, conversation_id: str) -> Path:
        if not _ID.match(conversation_id):
            raise AgentError(
                f"invalid conversation id {conversation_id!r}: use letters, digits, '.', '_' or '-' (max 64)"
            )
        return self.root / conversation_id

    def create(self, model: str, conversation_id: str | None = None) -> Conversation:
        if conversation_id is None:
            conversation_id = f"c-{_now().strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
        path = self._dir(conversation_id)
        if (path / "meta.json").exists():
            return self.open(conversation_id)
        meta = {
            "id": conversation_id,
            "created": iso_now(),
            "model": model,
            "stats": Stats().to_json(),
            "turns": [],
        }
        conversation = Conversation(conversation_id, path, [], meta, self.redact)
        conversation.save()
        return conversation

    def open(self, conversation_id: str) -> Conversation:
        path = self._dir(conversation_id)
        try:
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
            messages = json.loads((path / "messages.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise AgentError(
                f"no conversation {conversation_id!r} in {self.root}; omit --conversation to start one"
            ) from None
        except (json.JSONDecodeError, OSError) as exc:
            raise AgentError(f"conversation {conversation_id!r} is unreadable: {exc}") from exc
        if not isinstance(messages, list) or not isinstance(meta, dict):
            raise AgentError(f"conversation {conversation_id!r} is corrupt (unexpected JSON shapes)")
        return Conversation(conversation_id, path, messages, meta, self.redact)

    def open_or_create(self, conversation_id: str | None, model: str) -> Conversation:
        if conversation_id is not None and (self._dir(conversation_id) / "meta.json").exists():
            return self.open(conversation_id)
        return self.create(model, conversation_id)

    @contextlib.contextmanager
    def busy(self, conversation: Conversation) -> Iterator[None]:
        """Hold the conversation for one turn; a second turn on it (another editor, a terminal) is
        refused at once rather than interleaving two histories into one file."""
        conversation.path.mkdir(parents=True, exist_ok=True)
        with open(conversation.path / ".lock", "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise AgentError(
                    f"conversation {conversation.id} is busy with another turn; wait for it or cancel it"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def list(self) -> list[Conversation]:
        if not self.root.is_dir():
            return []
        found = []
        for path in sorted(self.root.iterdir()):
            if (path / "meta.json").exists() and _ID.match(path.name):
                with contextlib.suppress(AgentError):
                    found.append(self.open(path.name))
        return found

    def latest_id(self) -> str | None:
        conversations = self.list()
        if not conversations:
            return None

        def newest_first(c: Conversation) -> tuple[str, str]:
            return (c.stamps()[-1] if c.stamps() else "", str(c.meta.get("created")))

        return max(conversations, key=newest_first).id

    def prune_old(self, keep: int) -> int:
        """Keep the newest `keep` request/response pairs across all conversations; returns files removed."""
        if keep < 0:
            raise AgentError("prune_old needs a number >= 0")
        pairs: list[tuple[str, Path]] = []
        if self.root.is_dir():
            for path in self.root.iterdir():
                for request in path.glob("*-request.json"):
                    stamp = request.name[: -len("-request.json")]
                    if _STAMP.match(stamp):
                        pairs.append((stamp, path))
        pairs.sort(reverse=True)
        removed = 0
        for stamp, path in pairs[keep:]:
            for suffix in ("-request.json", "-response.json"):
                with contextlib.suppress(FileNotFoundError):
                    (path / f"{stamp}{suffix}").unlink()
                    removed += 1
        return removed

    # --- the seed's counters -------------------------------------------------------------------

    @contextlib.contextmanager
    def _counters_lock(self) -> Iterator[None]:
        self.counters_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.counters_path.with_suffix(".json.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def counters(self) -> dict[str, Any]:
        try:
            data = json.loads(self.counters_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def add_to_counters(
        self, *, input_tokens: int, output_tokens: int, cost: float, tool_calls: int
    ) -> dict[str, Any]:
        """Add one run's usage to the totals (under a file lock: the editor and the CLI may both run)."""
        with self._counters_lock():
            data = self.counters()
            now = iso_now()
            data["total_input_tokens"] = int(data.get("total_input_tokens", 0)) + input_tokens
            data["total_output_tokens"] = int(data.get("total_output_tokens", 0)) + output_tokens
            data["total_cost"] = round(float(data.get("total_cost", 0.0)) + cost, 6)
            data["total_tool_calls"] = int(data.get("total_tool_calls", 0)) + tool_calls
            data.setdefault("first_run", now)
            data["last_run"] = now
            _atomic_write(self.counters_path, json.dumps(data, indent=1) + "\n", durable=True)
            return data
