"""Big JSON-RPC frames are parsed and encoded off the loop, in pieces, to the same result.

`actors.mcp.frames.parse_frame` must give what `parse_line` gives (the message, or the same
error) however the literals are cut; `encode_frame` the same JSON as pydantic. Through a real
stdio pipe a big frame is parsed and encoded on the loop's worker thread and a small one on
the loop itself, and the loop keeps ticking while a big one is parsed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from actors.mcp import frames, stdio_stream
from actors.mcp.frames import (
    BIG_FRAME_BYTES,
    encode_frame,
    join_parts,
    parse_frame,
    parse_line,
    parse_off_loop,
)
from actors.mcp.loop import OFFLOAD_THREAD_NAME, EventLoop
from actors.mcp.stdio_process import StdioProcess

BIG_TEXT = "x" * (2 * BIG_FRAME_BYTES)


def _response(result: Any, *, ensure_ascii: bool = False) -> bytes:
    message = {"jsonrpc": "2.0", "id": 7, "result": result}
    return json.dumps(message, ensure_ascii=ensure_ascii).encode()


def _same(line: bytes, **cutting: int) -> None:
    ours, exact = parse_frame(line, **cutting), parse_line(line)
    assert type(ours) is type(exact), (ours, exact)
    if isinstance(ours, SessionMessage):
        assert isinstance(exact, SessionMessage)
        assert ours.message == exact.message
    else:
        assert str(ours) == str(exact)


TRICKY_TEXTS = [
    'quotes " and \\ backslashes \\\\" ending in a backslash \\',
    "control \n\t\r\b\f \x01 \x1f and DEL \x7f",
    "accents é ü and an emoji 😀 and a CJK 漢字 " * 5,
    "😀" * 40,
    "\\u00e9 written out, not an escape",
    "",
]

LINES = [
    *(_response({"text": text * 30}, ensure_ascii=ascii) for text in TRICKY_TEXTS for ascii in (False, True)),
    _response({"key " * 40: "a long key", "k": ["a long item " * 20, 1, 2.5, None, True]}),
    b'{"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"t": "'
    + b"y" * 300
    + b'"}}',
    b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "' + b"m" * 300 + b'", "data": "d"}}',
    b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "' + b"n" * 300 + b'"}}',
    # What parse_line refuses, the piecewise parse must refuse with the same error.
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"\\ud800" * 50 + b'"}}',  # lone surrogates
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"s" * 100 + b'\\ud800", "u": "\\ud800"}}',
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"\xed\xa0\x80" * 50 + b'"}}',  # a raw surrogate
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"\xff" * 300 + b'"}}',  # not UTF-8
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"a\x01" * 150 + b'"}}',  # a raw control character
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"u" * 300 + b'"',  # cut short
    b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "' + b"u" * 300,  # unterminated
    b'{"jsonrpc": "2.0", "result": {"t": "' + b"v" * 300 + b'"}}',  # no id: not a message
    b'{"noise": "' + b"w" * 300 + b'"}',
    b'["' + b"z" * 300 + b'"]',
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
@pytest.mark.parametrize(("long_literal", "piece"), [(1, 1), (4, 7), (64, 13), (10_000, 10_000)])
def test_a_frame_parses_in_pieces_as_in_one_call(line: bytes, long_literal: int, piece: int) -> None:
    _same(line, long_literal=long_literal, piece=piece)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    result=st.dictionaries(st.text(), JSON_VALUES, max_size=4),
    ensure_ascii=st.booleans(),
    long_literal=st.integers(1, 12),
    piece=st.integers(1, 12),
)
def test_any_response_parses_in_pieces_as_in_one_call(
    result: dict[str, Any], ensure_ascii: bool, long_literal: int, piece: int
) -> None:
    _same(_response(result, ensure_ascii=ensure_ascii), long_literal=long_literal, piece=piece)


@pytest.mark.parametrize("as_text", [False, True])
def test_a_whole_body_validates_off_the_loop_as_pydantic_validates_it(as_text: bool) -> None:
    good = _response({"content": [{"type": "text", "text": "é" + BIG_TEXT}]})
    bad = b'{"jsonrpc": "2.0", "result": {"t": "' + BIG_TEXT.encode() + b'"}}'  # no id

    async def validate(body: bytes) -> types.JSONRPCMessage:
        return await frames.validate_off_loop(body.decode() if as_text else body)

    expected = types.jsonrpc_message_adapter.validate_json(good, by_name=False)
    with EventLoop() as loop:
        assert loop.run(validate, good, timeout=60) == expected
        assert loop.run(validate, b'{"jsonrpc": "2.0", "id": 1, "result": {}}', timeout=60).id == 1
        with pytest.raises(ValueError) as ours:
            loop.run(validate, bad, timeout=60)
    with pytest.raises(ValueError) as exact:
        types.jsonrpc_message_adapter.validate_json(bad, by_name=False)
    assert type(ours.value) is type(exact.value)


def test_parts_join_into_the_line() -> None:
    line = _response({"text": BIG_TEXT})
    parts = [line[i : i + 1000] for i in range(0, len(line), 1000)]
    assert bytes(join_parts(parts)) == line
    assert join_parts([]) == bytearray()


def _request(arguments: dict[str, Any]) -> types.JSONRPCMessage:
    params = {"name": "echo", "arguments": arguments}
    return types.jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    )


@pytest.mark.parametrize("text", [BIG_TEXT, *TRICKY_TEXTS])
@pytest.mark.parametrize("piece", [1, 5, 1000, 10**7])
def test_a_frame_encodes_in_pieces_as_pydantic_encodes_it(text: str, piece: int) -> None:
    message = _request({"text": text * 3, "n": [1, 2.5, None, True, {"k": text}], "nested": {"e": {}}})
    encoded = b"".join(encode_frame(message, piece=piece))
    assert encoded.endswith(b"\n") and encoded.count(b"\n") == 1
    assert json.loads(encoded) == json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))
    assert parse_line(encoded[:-1]).message == message  # type: ignore[union-attr]


def test_a_frame_that_cannot_be_encoded_raises_value_error_as_pydantic_does() -> None:
    message = _request({"text": "lone \ud800 surrogate " * 10})
    with pytest.raises(ValueError):
        message.model_dump_json(by_alias=True, exclude_unset=True)
    with pytest.raises(ValueError):
        encode_frame(message, piece=4)


def test_only_big_messages_count_as_big() -> None:
    assert not frames.is_big_message(_request({"text": "small"}))
    assert frames.is_big_message(_request({"text": BIG_TEXT}))
    assert frames.is_big_message(_request({"items": ["y" * 1000] * (BIG_FRAME_BYTES // 1000)}))


# -- through a real pipe, on a real loop ---------------------------------------------------

_ECHO_LINES = (
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()\n"
)


def _recording(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    """Wrap ``module.name`` to record the name of each thread that calls it."""
    threads: list[str] = []
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return threads


def test_a_big_frame_goes_off_the_loop_thread_and_a_small_one_stays_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed_small = _recording(monkeypatch, stdio_stream, "parse_line")
    parsed_big = _recording(monkeypatch, frames, "parse_frame")
    encoded_big = _recording(monkeypatch, frames, "encode_frame")
    small, big = _request({"text": "small"}), _request({"text": BIG_TEXT})

    async def echo_both() -> list[types.JSONRPCMessage]:
        process = StdioProcess([sys.executable, "-c", _ECHO_LINES], label="echo lines")
        async with stdio_stream.stdio_stream(process) as (read_stream, write_stream):
            with anyio.fail_after(60):
                received = []
                for message in (small, big, small):
                    await write_stream.send(SessionMessage(message))
                    item = await read_stream.receive()
                    assert isinstance(item, SessionMessage), item
                    received.append(item.message)
                return received

    with EventLoop() as loop:
        assert loop.run(echo_both, timeout=90) == [small, big, small]
    assert parsed_small == ["mcp-actors-loop", "mcp-actors-loop"]
    assert parsed_big == [OFFLOAD_THREAD_NAME]
    assert encoded_big == [OFFLOAD_THREAD_NAME]


def test_the_loop_keeps_ticking_while_a_big_frame_is_parsed() -> None:
    line = _response({"content": [{"type": "text", "text": "t" * (16 * 1024 * 1024)}]})
    parts = [line[i : i + 256 * 1024] for i in range(0, len(line), 256 * 1024)]

    async def parse_while_ticking() -> tuple[SessionMessage | Exception, list[float], float, float, float]:
        ticks: list[float] = []
        done = anyio.Event()

        async def tick() -> None:
            while not done.is_set():
                await anyio.sleep(0.001)
                ticks.append(time.perf_counter())

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            await anyio.sleep(0.005)
            began, cpu = time.perf_counter(), time.process_time()
            item = await parse_off_loop(parts)
            ended, cpu = time.perf_counter(), time.process_time() - cpu
            done.set()
        return item, ticks, began, ended, cpu

    with EventLoop() as loop:
        item, ticks, began, ended, cpu = loop.run(parse_while_ticking, timeout=120)
    assert isinstance(item, SessionMessage) and item.message == parse_line(line).message  # type: ignore[union-attr]
    # The loop ran other tasks while the frame was parsed. Parsed on the loop, no tick could run
    # between the parse's start and its end; off it, the loop gets the GIL back between pieces,
    # at least once per switch interval (5 ms) of the parse's running. So the ticks are counted
    # against the CPU the process got meanwhile, not the wall time: a fast machine parses in a
    # few switch intervals, and under a CPU quota most of the wall time nobody runs. One tick per
    # 10 ms of CPU (a tick also waits out its 1 ms sleep), at least one, three at most.
    # (How long the loop may be held at worst is the loop-lag watchdog's to say, in test_oversized.py.)
    during = [t for t in ticks if began < t < ended]
    wanted = max(1, min(3, int(cpu * 1000 // 10)))
    assert len(during) >= wanted, (
        f"{len(during)} ticks in the {(ended - began) * 1000:.0f} ms of the parse "
        f"({cpu * 1000:.0f} ms of CPU: {wanted} wanted)"
    )
