"""`actors.mcp.stdio_stream` (and `actors.mcp.stdio_process` under it) against real SDK servers.

The stream stands in for the SDK's ``stdio_client`` under ``mcp.Client``: round trips, a 20 MB
result, the ``maxMessageBytes`` limit, unparsable lines, a start off the event loop on a keeper
thread, servers that exit at once or are killed, and shutdown that leaves no process behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import _parse_line as sdk_parse_line
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from actors import Runtime
from actors.mcp.config import ServerConfig
from actors.mcp.frames import BIG_FRAME_BYTES
from actors.mcp.loop import THREAD_NAME, EventLoop
from actors.mcp.sdk_transport import SDKOptions, SDKTransport
from actors.mcp.stdio_process import StdioProcess
from actors.mcp.stdio_stream import DEFAULT_MAX_MESSAGE_BYTES, _LineCutter, parse_line, stdio_stream
from tests.conftest import child_pids, wait_until
from tests.mcp.conftest import Recorder, stdio_transport
from tests.runtime.conftest import config, stdio_server
from tests.servers.http_server import REPO_ROOT

FIXTURE = [sys.executable, "-m", "tests.servers.fixture_server"]
BIG = [sys.executable, "-m", "tests.servers.big_server"]
TEN_MB = 10 * 1024 * 1024
MIB = 1024 * 1024

_T = TypeVar("_T")

# The stream and the process under it are what these tests are about: every server is its own
# process, never a fork (tests/harness/forkserver.py).
pytestmark = pytest.mark.real_process


def server(argv: list[str], **options: Any) -> StdioProcess:
    """A stdio server process (not yet started) run from the repository root."""
    options.setdefault("label", os.path.basename(argv[-1]))
    return StdioProcess(argv, cwd=str(REPO_ROOT), **options)


def script(code: str) -> list[str]:
    """A server made of a few lines of Python."""
    return [sys.executable, "-c", code]


def with_client(
    loop: EventLoop,
    process: StdioProcess,
    body: Callable[[Client], Awaitable[_T]],
    *,
    timeout: float = 60,
    **stream_options: Any,
) -> _T:
    """Run ``body`` with an ``mcp.Client`` (legacy handshake) over our stream, on the loop."""

    async def run() -> _T:
        async with Client(stdio_stream(process, **stream_options), mode="legacy", cache=None) as client:
            return await body(client)

    return loop.run(run, timeout=timeout)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def notification_line(length: int) -> bytes:
    """A JSON-RPC notification of exactly ``length`` bytes (without its newline)."""
    empty = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"pad": ""}})
    return empty.replace('"pad": ""', '"pad": "' + "p" * (length - len(empty)) + '"').encode()


# -- round trips ----------------------------------------------------------------------------------


def test_echo_round_trips_through_the_sdk_client(loop: EventLoop) -> None:
    process = server(FIXTURE)
    texts = ["hi", "", "ünïcødé ✓ 𝄞", 'line\nbreaks\r\nand "quotes"', "z" * MIB]

    async def body(client: Client) -> list[str]:
        answers = []
        for text in texts:
            result = await client.call_tool("echo", {"text": text})
            assert result.structured_content is not None
            answers.append(result.structured_content["result"])
        # Concurrent calls share the one stdin and stdout.
        async with anyio.create_task_group() as tasks:
            sums: list[int] = []

            async def add(a: int) -> None:
                result = await client.call_tool("add", {"a": a, "b": 1})
                assert result.structured_content is not None
                sums.append(result.structured_content["result"])

            for a in range(20):
                tasks.start_soon(add, a)
        assert sorted(sums) == list(range(1, 21))
        return answers

    assert with_client(loop, process, body) == texts
    assert process.returncode is not None, "the server was not reaped when the stream closed"


def test_a_20_mb_message_arrives_intact_and_a_ping_behind_it_is_answered(loop: EventLoop) -> None:
    # blob's text travels twice (content and structured content): one 20 MB line on the wire.
    process = server(BIG)

    async def body(client: Client) -> tuple[str, bool]:
        pinged = anyio.Event()

        async def ping() -> None:
            await client.session.send_ping()
            pinged.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ping)  # sent while the big answer is on its way
            result = await client.call_tool("blob", {"size": TEN_MB})
            with anyio.fail_after(30):
                await pinged.wait()
        block = result.content[0]
        assert block.type == "text"
        assert result.structured_content == {"result": block.text}
        return block.text, pinged.is_set()

    text, pinged = with_client(loop, process, body, timeout=120)
    assert len(text) == TEN_MB
    assert text.count("x") == TEN_MB
    assert pinged


def test_a_message_of_exactly_the_limit_passes_and_one_byte_more_ends_the_stream(loop: EventLoop) -> None:
    limit = 4096
    lines = [notification_line(limit), notification_line(limit + 1), notification_line(10)]
    payload = b"".join(line + b"\n" for line in lines)
    code = f"import sys\nsys.stdout.buffer.write({payload!r})\nsys.stdout.flush()\nsys.stdin.read()"
    process = server(script(code), label="limit")

    async def read_all() -> list[SessionMessage | Exception]:
        items: list[SessionMessage | Exception] = []
        async with stdio_stream(process, max_message_bytes=limit) as (read_stream, _):
            with anyio.fail_after(30):
                async for item in read_stream:
                    items.append(item)
        return items

    items = loop.run(read_all, timeout=60)
    assert len(items) == 2, items
    assert isinstance(items[0], SessionMessage)
    assert isinstance(items[1], ConnectionError)
    assert str(items[1]) == f"the server sent a message larger than maxMessageBytes ({limit} bytes)"
    assert process.returncode is not None


def test_a_message_past_max_message_bytes_fails_the_session_and_the_server_is_reaped(
    loop: EventLoop, recorder: Recorder
) -> None:
    transport = stdio_transport(module="tests.servers.big_server", protocol="legacy", max_message_bytes=MIB)
    loop.run(transport.connect, recorder, timeout=30)
    pid = transport.pid
    assert pid is not None
    try:
        echo = loop.run(transport.call_tool, "echo", {"text": "y" * (MIB // 4)}, 30, timeout=40)
        assert not echo.is_error
        with pytest.raises(ConnectionError) as caught:
            loop.run(transport.call_tool, "blob", {"size": 2 * MIB}, 30, timeout=40)
    finally:
        loop.run(transport.close, timeout=15)
    message = str(caught.value)
    assert "the server sent a message larger than maxMessageBytes (1048576 bytes)" in message, message
    assert message.startswith("big_server: "), message
    assert recorder.closed.wait(10)
    assert "maxMessageBytes (1048576 bytes)" in recorder.reasons[0]
    assert not alive(pid)
    assert pid not in child_pids()


def test_without_a_failure_callback_the_limit_error_reaches_the_message_handler(loop: EventLoop) -> None:
    process = server(BIG)
    seen: list[Exception] = []

    async def run() -> None:
        async def handler(message: Any) -> None:
            if isinstance(message, Exception):
                seen.append(message)

        async with Client(
            stdio_stream(process, max_message_bytes=MIB), mode="legacy", cache=None, message_handler=handler
        ) as client:
            with pytest.raises(MCPError, match="Connection closed"):
                await client.call_tool("blob", {"size": 2 * MIB})

    loop.run(run, timeout=60)
    assert [str(e) for e in seen] == ["the server sent a message larger than maxMessageBytes (1048576 bytes)"]
    assert process.returncode is not None


# -- parsing --------------------------------------------------------------------------------------

LINES = [
    b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
    b'{"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}}',
    b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}',
    b'{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\r',
    b'{"jsonrpc": "2.0", "id": 3, "result": {"text": "\xc3\xbc"}}',
    b"this is not JSON-RPC",
    b'{"noise": 1}',
    b"",
    b'{"jsonrpc": "2.0", "id": 4, "result": ',
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_lines_parse_as_the_sdk_parses_them(line: bytes, caplog: pytest.LogCaptureFixture) -> None:
    ours = parse_line(line)
    theirs = sdk_parse_line(line.decode())
    assert type(ours) is type(theirs)
    if isinstance(ours, SessionMessage):
        assert isinstance(theirs, SessionMessage)
        assert ours.message == theirs.message
    else:
        assert str(ours) == str(theirs)


def test_a_line_that_is_not_utf_8_is_an_error_item_not_a_crash() -> None:
    assert isinstance(parse_line(b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "\xff"}}'), UnicodeDecodeError)


def test_an_unparsable_line_is_reported_and_the_stream_goes_on(loop: EventLoop) -> None:
    payload = b'this is not JSON-RPC\n{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n'
    code = f"import sys\nsys.stdout.buffer.write({payload!r})\nsys.stdout.flush()"
    process = server(script(code), label="garbage")

    async def read_all() -> list[SessionMessage | Exception]:
        async with stdio_stream(process) as (read_stream, _):
            with anyio.fail_after(30):
                return [item async for item in read_stream]

    items = loop.run(read_all, timeout=60)
    assert len(items) == 2, items
    assert isinstance(items[0], ValueError) and "this is not JSON-RPC" in str(items[0])
    assert isinstance(items[1], SessionMessage)


def test_the_transport_logs_unparsable_output_and_serves_on(
    loop: EventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="actors.mcp.sdk_transport")
    transport = stdio_transport(module="tests.servers.noisy_server", protocol="legacy")
    loop.run(transport.connect, None, timeout=30)
    try:
        outcome = loop.run(transport.call_tool, "echo", {"text": "through the noise"}, 10, timeout=15)
        assert outcome.content == [{"type": "text", "text": "through the noise"}]
    finally:
        loop.run(transport.close, timeout=15)
    unreadable = [r.getMessage() for r in caplog.records if "unreadable message" in r.getMessage()]
    assert any("this line is not JSON-RPC" in text for text in unreadable), unreadable


# -- the process ----------------------------------------------------------------------------------


def test_the_server_is_started_off_the_loop_by_a_thread_that_lives_as_long_as_it(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    starters: list[str] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> Any:
        starters.append(threading.current_thread().name)
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    process = server(FIXTURE, label="kept")

    async def body(client: Client) -> list[str]:
        await client.call_tool("echo", {"text": "hi"})
        return [t.name for t in threading.enumerate()]

    threads = with_client(loop, process, body)
    assert starters == ["mcp-stdio kept"], starters
    assert THREAD_NAME not in starters
    # The parent-death signal fires when the thread that forked the server ends: that thread
    # must still be there while the server runs, and gone once it is reaped.
    assert "mcp-stdio kept" in threads
    assert wait_until(lambda: "mcp-stdio kept" not in [t.name for t in threading.enumerate()], 10)


def test_a_command_that_exits_at_once_ends_the_stream_and_is_reported(loop: EventLoop) -> None:
    exited = threading.Event()
    process = server(
        script("import sys; sys.stderr.write('refusing to start\\n'); sys.exit(3)"),
        label="quitter",
        on_exit=exited.set,
    )

    async def run() -> list[SessionMessage | Exception]:
        async with AsyncExitStack() as stack:
            await process.open_stderr(stack)
            async with stdio_stream(process) as (read_stream, _):
                with anyio.fail_after(30):
                    items = [item async for item in read_stream]
            await process.stderr_closed(5)
        return items

    assert loop.run(run, timeout=60) == []
    assert exited.wait(10)
    assert process.returncode == 3
    assert process.stderr_lines(5) == ["refusing to start"]


def test_a_command_that_cannot_start_raises_and_leaves_nothing(loop: EventLoop) -> None:
    process = StdioProcess([sys.executable, "-c", "pass"], cwd=str(REPO_ROOT / "no-such-directory"))

    async def run() -> None:
        async with stdio_stream(process):
            raise AssertionError("started in a directory that does not exist")

    with pytest.raises(FileNotFoundError):
        loop.run(run, timeout=30)
    assert process.process is None


def test_sigkill_of_the_server_is_seen_at_once_while_a_child_holds_its_stdout(loop: EventLoop) -> None:
    exited = threading.Event()
    # The grandchild keeps stdout open: the end of the stream never comes, only the exit.
    process = server(["sh", "-c", "sleep 60 & exec sleep 60"], label="killed", on_exit=exited.set)

    async def run() -> bool:
        async with stdio_stream(process):
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            with anyio.move_on_after(10):
                while not exited.is_set():
                    await anyio.sleep(0.01)
            return exited.is_set()

    assert loop.run(run, timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert process.process is not None
    pgid = process.process.pid
    assert wait_until(lambda: not group_alive(pgid), 10), "the grandchild was left running"


READY = "print('ready', flush=True); "
SHUTDOWNS = {
    "polite": READY + "import sys; sys.stdin.read()",
    "deaf": READY + "import time; time.sleep(60)",
    "stubborn": "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + READY + "signal.pause()",
}


@pytest.mark.parametrize(
    ("name", "returncode"), [("polite", 0), ("deaf", -signal.SIGTERM), ("stubborn", -signal.SIGKILL)]
)
def test_shutdown_closes_stdin_then_terminates_then_kills(
    loop: EventLoop, name: str, returncode: int
) -> None:
    process = server(script(SHUTDOWNS[name]), label=name, close_grace=2.0, kill_grace=2.0)

    async def run() -> None:
        async with stdio_stream(process) as (read_stream, _):
            with anyio.fail_after(30):
                await read_stream.receive()  # "ready": it reads its stdin or ignores SIGTERM now

    loop.run(run, timeout=60)
    assert process.returncode == returncode


def test_a_cancelled_stream_still_reaps_its_server(loop: EventLoop) -> None:
    process = server(FIXTURE, label="cancelled")

    async def run() -> None:
        with anyio.move_on_after(0.5):
            async with stdio_stream(process):
                await anyio.sleep(30)

    loop.run(run, timeout=30)
    assert process.process is not None and process.returncode is not None
    assert process.process.pid not in child_pids()


def test_max_message_bytes_goes_from_the_config_to_the_stream() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == 64 * MIB
    assert SDKOptions().max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES
    config = ServerConfig(name="big", command="big-server", max_message_bytes=4096)
    assert SDKTransport.for_server(config).options.max_message_bytes == 4096
    with pytest.raises(ValueError, match="max_message_bytes must be positive"):
        SDKOptions(max_message_bytes=0)
    with pytest.raises(ValueError, match="max_message_bytes must be positive"):
        anyio.run(_enter_with_limit, 0)


async def _enter_with_limit(limit: int) -> None:
    async with stdio_stream(server(FIXTURE), max_message_bytes=limit):
        pass


def test_through_the_runtime_a_message_past_the_limit_fails_the_call_and_the_server_restarts() -> None:
    entry = stdio_server("big_server", maxMessageBytes=MIB, healthCheckInterval=0, idleTimeout=0)
    with Runtime.start(config({"big": entry})) as rt:
        too_big = rt.call_tool("big/blob", {"size": 2 * MIB}, timeout=30)
        assert too_big.error_type == "connection", too_big
        assert "maxMessageBytes (1048576 bytes)" in (too_big.error or ""), too_big
        # The next call restarts the server, as after a crash.
        assert wait_until(lambda: rt.call_tool("big/echo", {"text": "again"}, timeout=30).success, 30)
        assert rt.status("big")[0].restarts >= 1


class _FakePipe(asyncio.ReadTransport):
    """Counts the pauses the line cutter asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def _cut(chunks: list[bytes], limit: int) -> tuple[list[bytes], ConnectionError | None]:
    """Feed ``chunks`` to the line cutter; the lines it hands on, and why it ended."""
    lines: list[bytes] = []
    ends: list[ConnectionError | None] = []

    def on_line(line: bytes | list[bytes]) -> bool:
        lines.append(line if isinstance(line, bytes) else b"".join(line))
        return True

    cutter = _LineCutter(limit, on_line, ends.append)
    cutter.connection_made(_FakePipe())
    for chunk in chunks:
        cutter.data_received(chunk)
    cutter.connection_lost(None)
    [ended] = ends  # once, whatever happened
    return lines, ended


def test_lines_are_cut_the_same_however_the_output_is_chunked() -> None:
    data = b'{"a": 1}\n\nxyz\n' + b"w" * 40 + b"\nunfinished"
    expected = [b'{"a": 1}', b"", b"xyz", b"w" * 40]
    for first in range(len(data) + 1):
        for second in range(first, len(data) + 1, 7):
            chunks = [data[:first], data[first:second], data[second:]]
            assert _cut(chunks, 40) == (expected, None), chunks


def test_the_limit_counts_across_chunks_and_what_came_before_is_delivered() -> None:
    limit = 10
    assert _cut([b"x" * limit + b"\n"], limit) == ([b"x" * limit], None)
    for cut in range(1, limit + 2):
        line = b"y" * (limit + 1)
        lines, failure = _cut([b"ok\n" + line[:cut], line[cut:] + b"\nlater\n"], limit)
        assert lines == [b"ok"], cut
        assert str(failure) == f"the server sent a message larger than maxMessageBytes ({limit} bytes)"


# ---- the write stream: each send writes to stdin itself ---------------------------------------

# A server that writes back each line it reads, as it came.
ECHO_LINES = script(
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line); sys.stdout.flush()"
)


def _note(number: int, padding: str = "") -> SessionMessage:
    note = types.JSONRPCNotification(jsonrpc="2.0", method="notes/n", params={"n": number, "pad": padding})
    return SessionMessage(message=note)


def test_a_send_behind_a_big_message_keeps_its_place(loop: EventLoop) -> None:
    """A big message is encoded off the loop; a small one sent meanwhile is written after it,
    never into the middle of it, and arrives second."""
    big = "x" * (BIG_FRAME_BYTES * 2)

    async def run() -> list[tuple[int, int]]:
        async with stdio_stream(server(ECHO_LINES)) as (read, write):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(write.send, _note(1, big))
                await anyio.sleep(0)  # the big send has begun encoding
                tasks.start_soon(write.send, _note(2))
            seen = []
            for _ in range(2):
                item = await read.receive()
                assert isinstance(item, SessionMessage)
                params = item.message.params or {}
                seen.append((params["n"], len(params["pad"])))
            return seen

    assert loop.run(run, timeout=60) == [(1, len(big)), (2, 0)]


def test_a_send_to_a_server_that_closed_its_stdin_fails_and_ends_the_reading(loop: EventLoop) -> None:
    """A server that no longer reads: the send fails as a broken stream (not a hang), and the
    read stream ends, so that no request waits for an answer that cannot come."""
    closes_stdin = script(
        "import os, sys, time\nos.close(0)\nsys.stdout.write('ready\\n'); sys.stdout.flush()\ntime.sleep(30)"
    )

    async def run() -> bool:
        async with stdio_stream(server(closes_stdin)) as (read, write):
            assert isinstance(await read.receive(), Exception)  # "ready" is no JSON-RPC message
            with anyio.fail_after(20):
                while True:
                    try:
                        await write.send(_note(1))
                    except anyio.BrokenResourceError:
                        break
                    await anyio.sleep(0.01)
            with pytest.raises((anyio.EndOfStream, anyio.ClosedResourceError)):
                await read.receive()
            return True

    assert loop.run(run, timeout=60)
