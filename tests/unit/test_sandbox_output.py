"""BoundedCapture: the cap holds whatever the input, head and tail survive, binary is flagged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.core.sandbox.output import BoundedCapture


def _feed(cap: int, *chunks: bytes) -> BoundedCapture:
    capture = BoundedCapture(cap)
    for chunk in chunks:
        capture.feed(chunk)
    return capture


def test_small_output_is_kept_whole() -> None:
    result = _feed(100, b"hello ", b"world\n").result()
    assert (result.text, result.truncated, result.binary, result.dropped_bytes) == (
        "hello world\n",
        False,
        False,
        0,
    )


def test_large_output_keeps_head_and_tail_with_marker() -> None:
    data = b"".join(f"line {i}\n".encode() for i in range(10_000))
    capture = _feed(1000, *(data[i : i + 777] for i in range(0, len(data), 777)))
    result = capture.result()
    assert result.truncated
    assert result.text.startswith("line 0\nline 1\n")
    assert result.text.endswith("line 9998\nline 9999\n")
    assert f"[… {len(data) - 1000} bytes truncated …]" in result.text
    assert capture.total == len(data)
    assert result.dropped_bytes == len(data) - 1000


def test_invalid_utf8_and_nul_are_flagged_and_replaced() -> None:
    result = _feed(100, b"ok\xff\xfe").result()
    assert result.binary
    assert result.text == "ok\ufffd\ufffd"
    assert _feed(100, b"a\x00b").result().binary


def test_multibyte_character_cut_by_the_cap_is_not_binary() -> None:
    text = ("✓" * 1000).encode()  # 3 bytes each: the head/tail cut lands inside a character
    result = _feed(101, text).result()
    assert result.truncated
    assert not result.binary


@given(st.lists(st.binary(max_size=5000), max_size=30), st.integers(min_value=0, max_value=4096))
def test_memory_never_exceeds_the_cap(chunks: list[bytes], cap: int) -> None:
    capture = _feed(cap, *chunks)
    kept = len(capture._head) + len(capture._tail)
    assert kept <= cap
    assert capture.total == sum(map(len, chunks))
    if capture.total <= cap:
        assert capture.result().text == b"".join(chunks).decode("utf-8", errors="replace")
