"""Bounded capture of a command's output stream.

Why: a command may print gigabytes (`yes`, a runaway log); the server must not grow with it. The cap
is enforced while reading, keeping the first half and the last half of the budget, so both the start
(the command line, the first error) and the end (the summary, the final traceback) survive.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class Captured:
    """A decoded stream: `text` is always valid str; `binary` flags bytes that were not UTF-8."""

    text: str
    truncated: bool
    dropped_bytes: int
    binary: bool


class BoundedCapture:
    """Keeps at most `limit` bytes: a head of `limit // 2` and a rolling tail of the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._head_limit = self.limit // 2
        self._tail_limit = self.limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self._tail_limit == 0:
            return
        if len(chunk) >= self._tail_limit:
            self._tail = bytearray(chunk[-self._tail_limit :])
            return
        self._tail += chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def result(self) -> Captured:
        dropped = self.dropped
        if dropped == 0:
            data = bytes(self._head + self._tail)
            return Captured(text=_decode(data), truncated=False, dropped_bytes=0, binary=_is_binary(data))
        head, tail = bytes(self._head), bytes(self._tail)
        # The cut may split a multi-byte character at the head's end or the tail's start; that is not
        # binary output, so the split character is excluded from the check (and decoded as U+FFFD).
        binary = _is_binary(head, partial_end=True) or _is_binary(_skip_continuation(tail))
        text = f"{_decode(head)}\n[… {dropped} bytes truncated …]\n{_decode(tail)}"
        return Captured(text=text, truncated=True, dropped_bytes=dropped, binary=binary)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _skip_continuation(data: bytes) -> bytes:
    i = 0
    while i < min(3, len(data)) and 0x80 <= data[i] <= 0xBF:
        i += 1
    return data[i:]


def _is_binary(data: bytes, *, partial_end: bool = False) -> bool:
    """NUL bytes or invalid UTF-8 mean the output is not text."""
    if b"\x00" in data:
        return True
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(data, final=not partial_end)
    except UnicodeDecodeError:
        return True
    return False
