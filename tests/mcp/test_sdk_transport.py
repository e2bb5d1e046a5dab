"""`SDKTransport` and `EventLoop` against real MCP servers: stdio, streamable HTTP and SSE.

The servers are the SDK-built fixture server (``tests.servers.fixture_server``), a few broken
ones, and the reference ``mcp-server-time``. Every test leaves no thread and no child process
behind (checked by the autouse fixture in ``tests/conftest.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.client.session
import pytest
from mcp.client.session import ClientSession
from mcp_types import INVALID_PARAMS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from actors.mcp.loop import THREAD_NAME, EventLoop
from actors.mcp.sdk_transport import MODERN_PROTOCOL, SDKOptions, SDKTransport, StdioCommand
from actors.mcp.transport import CallOutcome, ServerReplyError, Transport
from tests.conftest import child_pids, wait_until
from tests.mcp.conftest import Recorder, http_transport, stdio_transport
from tests.servers.http_server import REPO_ROOT, HTTPServer

ERAS = ["legacy", MODERN_PROTOCOL]
BASE_TOOLS = {"echo", "add", "sleep", "fail", "crash", "stderr", "header", "add_tool", "ask_client"}
EXTRA_TOOLS = 25
PAGE_SIZE = 7


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def marker_name() -> str:
    return f"m-{uuid.uuid4().hex[:8]}"


def connect(loop: EventLoop, transport: SDKTransport, events: Recorder | None = None) -> None:
    loop.run(transport.connect, events, timeout=30)


def call(
    loop: EventLoop, transport: SDKTransport, tool: str, arguments: dict[str, Any], timeout: float = 10
) -> Any:
    return loop.run(transport.call_tool, tool, arguments, timeout, timeout=timeout + 5)


def echo(loop: EventLoop, transport: SDKTransport, text: str) -> str:
    return str(call(loop, transport, "echo", {"text": text}).content[0]["text"])


def saw_cancellation(marker_dir: Path, marker: str) -> bool:
    return wait_until((marker_dir / f"{marker}.cancelled").exists, 10)


def close(loop: EventLoop, transport: SDKTransport) -> None:
    loop.run(transport.close, timeout=15)


@pytest.fixture(scope="module", params=ERAS)
def session(request: pytest.FixtureRequest, loop: EventLoop, marker_dir: Path) -> Iterator[SDKTransport]:
    """A stdio session to the fixture server (paged tool list), in each protocol era."""
    transport = stdio_transport(
        "--extra-tools",
        str(EXTRA_TOOLS),
        "--page-size",
        str(PAGE_SIZE),
        protocol=request.param,
        env={"FIXTURE_MARKER_DIR": str(marker_dir)},
    )
    connect(loop, transport)
    yield transport
    close(loop, transport)


# -- EventLoop ------------------------------------------------------------------------------------


class Boom(BaseException):
    """A BaseException that is not a cancellation."""


def test_loop_runs_coroutines_on_its_thread() -> None:
    with EventLoop.start() as loop:
        assert loop.running
        assert loop.thread is not None and loop.thread.name == THREAD_NAME

        async def where(x: int) -> tuple[str, int]:
            await anyio.sleep(0)
            return threading.current_thread().name, x * 2

        assert loop.run(where, 21, timeout=5) == (THREAD_NAME, 42)
        assert loop.submit(where, 1).result(5) == (THREAD_NAME, 2)
    assert not loop.running
    loop.stop()  # idempotent


def test_loop_run_timeout_cancels_the_task() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    with EventLoop.start() as loop:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="did not finish"):
            loop.run(forever, timeout=0.2)
        assert time.monotonic() - started < 5
        assert cancelled.wait(5)

        # The coroutine's own TimeoutError is not mistaken for the wait's.
        async def times_out() -> None:
            raise TimeoutError("mine")

        with pytest.raises(TimeoutError, match="mine"):
            loop.run(times_out, timeout=5)


def test_loop_keeps_base_exceptions_out_of_callers() -> None:
    async def boom() -> None:
        raise Boom

    async def ok() -> str:
        return "still running"

    with EventLoop.start() as loop:
        with pytest.raises(RuntimeError, match="Boom"):
            loop.run(boom, timeout=5)
        assert loop.run(ok, timeout=5) == "still running"


def test_loop_stop_fails_pending_work_with_connection_error() -> None:
    loop = EventLoop.start()
    future = loop.submit(anyio.sleep_forever)
    loop.stop()
    with pytest.raises(ConnectionError, match="event loop stopped"):
        future.result(5)
    with pytest.raises(RuntimeError, match="not running"):
        loop.submit(anyio.sleep, 0)


def test_shared_loop_is_reference_counted() -> None:
    first = EventLoop.acquire_shared()
    second = EventLoop.acquire_shared()
    assert first is second
    EventLoop.release_shared()
    assert first.running
    EventLoop.release_shared()
    assert not first.running
    assert first.thread is not None and not first.thread.is_alive()
    EventLoop.release_shared()  # one too many: ignored


# -- one session per era (stdio) ------------------------------------------------------------------


def test_transport_satisfies_the_protocol(session: SDKTransport) -> None:
    assert isinstance(session, Transport)
    assert session.pid is not None and session.pid in child_pids()


def test_handshake_and_paged_listing(loop: EventLoop, session: SDKTransport) -> None:
    info = session.server_info
    assert info is not None
    assert info.name == "fixture"
    assert info.instructions == "A fixture server for tests."
    assert "tools" in info.capabilities
    if session.connect_mode == MODERN_PROTOCOL:
        assert session.negotiated_protocol == MODERN_PROTOCOL
    else:
        assert session.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS

    tools = loop.run(session.list_tools, timeout=10)
    names = [tool.name for tool in tools]
    assert len(names) == len(set(names)), "a page was listed twice"
    assert set(names) >= BASE_TOOLS
    assert {f"tool_{i:03d}" for i in range(EXTRA_TOOLS)} <= set(names)
    add = next(tool for tool in tools if tool.name == "add")
    assert set(add.input_schema["properties"]) == {"a", "b"}
    assert add.output_schema is not None


def test_call_tool_returns_json(loop: EventLoop, session: SDKTransport) -> None:
    outcome = loop.run(session.call_tool, "add", {"a": 2, "b": 3}, 10, timeout=15)
    assert not outcome.is_error
    assert outcome.structured_content == {"result": 5}
    assert outcome.content == [{"type": "text", "text": "5"}]
    echoed = loop.run(session.call_tool, "echo", {"text": "héllo"}, 10, timeout=15)
    assert echoed.content[0]["text"] == "héllo"


def test_probe_works_in_either_era(
    loop: EventLoop, session: SDKTransport, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    era = request.node.callspec.params["session"]
    assert session.connect_mode == era
    if era == MODERN_PROTOCOL:
        assert session.negotiated_protocol == MODERN_PROTOCOL
    else:
        assert session.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS
    sent: list[str] = []
    for method in ("send_ping", "send_discover"):
        real = getattr(ClientSession, method)

        async def recording(self: ClientSession, *args: Any, _real: Any = real, _name: str = method) -> Any:
            sent.append(_name)
            return await _real(self, *args)

        monkeypatch.setattr(ClientSession, method, recording)
    loop.run(session.probe, timeout=15)
    # ping does not exist on 2026-07-28 sessions; server/discover is what proves the server there.
    assert sent == (["send_discover"] if era == MODERN_PROTOCOL else ["send_ping"])


def test_tool_error_is_an_error_result(loop: EventLoop, session: SDKTransport) -> None:
    outcome = loop.run(session.call_tool, "fail", {"message": "it broke"}, 10, timeout=15)
    assert outcome.is_error
    assert "it broke" in outcome.content[0]["text"]


def test_unknown_tool_is_refused(loop: EventLoop, session: SDKTransport) -> None:
    # A server may refuse an unknown tool with an isError result (the SDK's MCPServer does) or
    # with a JSON-RPC error (-32602, as mcp-server-time does: see test_mcp_server_time).
    refused: ServerReplyError | None = None
    outcome: CallOutcome | None = None
    try:
        outcome = loop.run(session.call_tool, "no_such_tool", {}, 10, timeout=15)
    except ServerReplyError as exc:
        refused = exc
    if refused is not None:
        assert refused.code == INVALID_PARAMS, refused
        assert "no_such_tool" in refused.message
    else:
        assert outcome is not None and outcome.is_error, outcome
        assert outcome.content[0]["text"] == "Unknown tool: no_such_tool"
    assert echo(loop, session, "still usable") == "still usable"


def test_concurrent_calls_share_the_session(loop: EventLoop, session: SDKTransport) -> None:
    naps = [{"seconds": 0.3, "marker": marker_name()} for _ in range(8)]
    futures = [loop.submit(session.call_tool, "sleep", nap, 10) for nap in naps]
    futures += [loop.submit(session.call_tool, "echo", {"text": str(i)}, 10) for i in range(8)]
    results = [future.result(20) for future in futures]
    assert [r.content[0]["text"] for r in results[:8]] == ["slept 0.3"] * 8
    assert [r.content[0]["text"] for r in results[8:]] == [str(i) for i in range(8)]


def test_timeout_cancels_on_the_server_and_the_session_goes_on(
    loop: EventLoop, session: SDKTransport, marker_dir: Path
) -> None:
    marker = marker_name()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"no answer within 0\.5s"):
        loop.run(session.call_tool, "sleep", {"seconds": 30, "marker": marker}, 0.5, timeout=15)
    assert time.monotonic() - started < 10
    assert saw_cancellation(marker_dir, marker), "the server never saw the cancellation"
    assert echo(loop, session, "after") == "after"


def test_cancelled_caller_cancels_on_the_server(
    loop: EventLoop, session: SDKTransport, marker_dir: Path
) -> None:
    marker = marker_name()
    future = loop.submit(session.call_tool, "sleep", {"seconds": 30, "marker": marker}, None)
    assert wait_until((marker_dir / f"{marker}.started").exists, 10)
    assert future.cancel()
    assert saw_cancellation(marker_dir, marker), "the server never saw the cancellation"
    assert echo(loop, session, "after") == "after"


def test_server_to_client_request_gets_an_answer(loop: EventLoop, session: SDKTransport) -> None:
    # Legacy: the SDK answers the elicitation with an error; 2026-07-28 over stdio: the server
    # has no back-channel and says so. Either way the call ends.
    outcome = loop.run(session.call_tool, "ask_client", {}, 10, timeout=15)
    assert outcome.content[0]["text"].startswith("client refused")


# -- fresh stdio sessions -------------------------------------------------------------------------


def test_auto_mode_remembers_the_era(loop: EventLoop) -> None:
    memo: dict[str, str] = {}
    first = stdio_transport(memo=memo)
    connect(loop, first)
    pid = first.pid
    try:
        assert first.connect_mode == "auto"
        assert first.negotiated_protocol == MODERN_PROTOCOL
        assert memo == {first.memo_key: MODERN_PROTOCOL}
    finally:
        close(loop, first)
    assert pid is not None and not alive(pid)

    again = stdio_transport(memo=memo)
    connect(loop, again)
    try:
        assert again.connect_mode == MODERN_PROTOCOL, "the known era was not pinned"
        assert again.negotiated_protocol == MODERN_PROTOCOL
        assert echo(loop, again, "pinned") == "pinned"
    finally:
        close(loop, again)

    legacy_memo = {again.memo_key: "legacy"}
    legacy = stdio_transport(memo=legacy_memo)
    connect(loop, legacy)
    try:
        assert legacy.connect_mode == "legacy"
        assert legacy.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS
        in_flight = loop.submit(legacy.call_tool, "sleep", {"seconds": 30, "marker": marker_name()}, 60)
    finally:
        close(loop, legacy)
    with pytest.raises(ConnectionError, match="closed"):
        in_flight.result(5)


def test_auto_mode_stall_is_paid_once(loop: EventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    # The legacy server ignores server/discover: auto mode waits the SDK's discovery timeout
    # (10 s, shortened here) before it falls back to initialize. The memo skips it next time.
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 1.0)
    memo: dict[str, str] = {}
    timings = []
    for expected_mode in ("auto", "legacy"):
        transport = stdio_transport(module="tests.servers.legacy_server", memo=memo)
        started = time.monotonic()
        connect(loop, transport)
        timings.append(time.monotonic() - started)
        try:
            assert transport.connect_mode == expected_mode
            assert transport.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS
            assert memo[transport.memo_key] == "legacy"
            loop.run(transport.probe, timeout=15)
            assert echo(loop, transport, "x") == "x"
        finally:
            close(loop, transport)
    print(f"\nconnect in auto mode: {timings[0]:.2f}s, pinned to legacy: {timings[1]:.2f}s")
    assert timings[0] >= 1.0


def test_server_death_is_seen_while_a_child_holds_its_stdout(
    loop: EventLoop, recorder: Recorder, marker_dir: Path
) -> None:
    holder_file = marker_dir / "holder.pid"
    holder_file.unlink(missing_ok=True)
    # Its own process (not a fork, tests/harness/forkserver.py): its child holds the server's stdout.
    env = {"FIXTURE_MARKER_DIR": str(marker_dir)}
    transport = stdio_transport("--hold-stdout", env=env, real_process=True)
    connect(loop, transport, recorder)
    try:
        assert wait_until(holder_file.exists, 10)
        holder = int(holder_file.read_text())
        assert alive(holder)
        started = time.monotonic()
        with pytest.raises(ConnectionError, match="exit status 3"):
            loop.run(transport.call_tool, "crash", {}, 60, timeout=15)
        assert time.monotonic() - started < 5
        assert recorder.closed.wait(5)
        assert "process exited" in recorder.reasons[0]
    finally:
        close(loop, transport)
    assert wait_until(lambda: not alive(holder), 5), "the server's child outlived the session"


def test_works_without_an_event_loop_thread() -> None:
    async def scenario() -> str:
        transport = stdio_transport(protocol="legacy")
        await transport.connect()
        try:
            outcome = await transport.call_tool("echo", {"text": "plain anyio"}, 10)
        finally:
            await transport.close()
        return str(outcome.content[0]["text"])

    assert anyio.run(scenario) == "plain anyio"


@pytest.mark.parametrize("protocol", ERAS)
def test_tools_list_changed_is_pushed(loop: EventLoop, recorder: Recorder, protocol: str) -> None:
    transport = stdio_transport(protocol=protocol)
    connect(loop, transport, recorder)
    try:
        loop.run(transport.call_tool, "add_tool", {"name": "late_tool"}, 10, timeout=15)
        assert recorder.tools_changed.wait(10), "no tools/list_changed"
        assert recorder.threads == {THREAD_NAME}
        names = {tool.name for tool in loop.run(transport.list_tools, timeout=10)}
        assert "late_tool" in names
    finally:
        close(loop, transport)
    assert recorder.tools_changed_count == 1
    assert not recorder.closed.is_set(), "a requested close is not a peer death"


@pytest.mark.parametrize("protocol", ERAS)
def test_server_exit_mid_call_fails_in_flight_calls_fast(
    loop: EventLoop, recorder: Recorder, marker_dir: Path, protocol: str
) -> None:
    # Its own process (not a fork, tests/harness/forkserver.py): the exit of the process it started.
    env = {"FIXTURE_MARKER_DIR": str(marker_dir)}
    transport = stdio_transport(protocol=protocol, env=env, real_process=True)
    connect(loop, transport, recorder)
    pid = transport.pid
    assert pid is not None
    try:
        marker = marker_name()
        slow = loop.submit(transport.call_tool, "sleep", {"seconds": 60, "marker": marker}, 60)
        assert wait_until((marker_dir / f"{marker}.started").exists, 10)
        started = time.monotonic()
        with pytest.raises(ConnectionError, match="exit status 3"):
            loop.run(transport.call_tool, "crash", {}, 60, timeout=15)
        with pytest.raises(ConnectionError, match="exit status 3"):
            slow.result(10)
        elapsed = time.monotonic() - started
        assert elapsed < 5, f"in-flight calls took {elapsed:.1f}s to fail"
        assert recorder.closed.wait(5)
        assert "exit status 3" in recorder.reasons[0]
        assert "crashing on request" in recorder.reasons[0], "the stderr tail is missing"
        assert wait_until(lambda: pid not in child_pids(), 5), "the crashed server was not reaped"
        assert transport.pid is None
        with pytest.raises(ConnectionError):
            loop.run(transport.call_tool, "echo", {"text": "dead"}, 10, timeout=15)
    finally:
        close(loop, transport)
    assert len(recorder.reasons) == 1


def test_command_not_found(loop: EventLoop) -> None:
    transport = SDKTransport(StdioCommand("no-such-mcp-server-command"), SDKOptions(server_name="ghost"))
    with pytest.raises(ConnectionError, match="command not found"):
        connect(loop, transport)
    close(loop, transport)


def test_server_exiting_at_once_reports_status_and_stderr(loop: EventLoop) -> None:
    # Its own process (not a fork, tests/harness/forkserver.py): its exit status and last words.
    transport = stdio_transport(module="tests.servers.exit_server", real_process=True)
    with pytest.raises(ConnectionError) as caught:
        connect(loop, transport)
    message = str(caught.value)
    assert "exit status 3" in message
    assert "refuses to start" in message
    close(loop, transport)


def test_garbage_on_stdout(loop: EventLoop) -> None:
    # Its own process (not a fork, tests/harness/forkserver.py): what it writes, and that it is reaped.
    transport = stdio_transport(
        module="tests.servers.garbage_server", protocol="legacy", connect_timeout=1.5, real_process=True
    )
    with pytest.raises(ConnectionError) as caught:
        connect(loop, transport)
    assert "not JSON-RPC" in str(caught.value)
    assert "this is not JSON-RPC" in str(caught.value)
    assert transport.spawned_pid is not None and not alive(transport.spawned_pid)


def test_never_answered_handshake_is_cancellable(loop: EventLoop) -> None:
    # Its own process (not a fork, tests/harness/forkserver.py): that the very process started is gone.
    transport = stdio_transport(module="tests.servers.silent_server", protocol="legacy", real_process=True)

    async def connect_within(seconds: float) -> None:
        with anyio.fail_after(seconds):
            await transport.connect()

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        loop.run(connect_within, 1.0, timeout=15)
    assert time.monotonic() - started < 5
    pid = transport.spawned_pid
    assert pid is not None
    assert not alive(pid), "the silent server survived the cancelled handshake"
    close(loop, transport)


def test_close_during_the_handshake(loop: EventLoop) -> None:
    # Its own process (not a fork, tests/harness/forkserver.py): that the very process started is gone.
    transport = stdio_transport(module="tests.servers.silent_server", protocol="legacy", real_process=True)
    pending = loop.submit(transport.connect, None)
    assert wait_until(lambda: transport.spawned_pid is not None, 10)
    close(loop, transport)
    with pytest.raises(ConnectionError, match="closed"):
        pending.result(10)
    assert transport.spawned_pid is not None and not alive(transport.spawned_pid)


def test_stopping_the_loop_reaps_open_sessions() -> None:
    loop = EventLoop.start()
    transport = stdio_transport(protocol="legacy")
    try:
        connect(loop, transport)
        pid = transport.pid
        pending = loop.submit(transport.call_tool, "sleep", {"seconds": 30, "marker": marker_name()}, 60)
    finally:
        loop.stop()
    assert pid is not None and not alive(pid)
    with pytest.raises(ConnectionError):
        pending.result(5)


def test_twenty_stdio_sessions_close_in_parallel(loop: EventLoop) -> None:
    transports = [stdio_transport(protocol="legacy") for _ in range(20)]

    async def connect_all() -> None:
        async with anyio.create_task_group() as group:
            for transport in transports:
                group.start_soon(transport.connect, None)

    async def close_all() -> None:
        async with anyio.create_task_group() as group:
            for transport in transports:
                group.start_soon(transport.close)

    try:
        loop.run(connect_all, timeout=120)
        pids = [t.pid for t in transports]
        assert all(pid is not None for pid in pids)
    finally:
        started = time.monotonic()
        loop.run(close_all, timeout=60)
        elapsed = time.monotonic() - started
    print(f"\n20 stdio sessions closed in {elapsed:.3f}s")
    assert not any(alive(pid) for pid in pids if pid is not None)


def test_mcp_server_time(loop: EventLoop) -> None:
    command = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    transport = (
        SDKTransport(StdioCommand(command), SDKOptions(server_name="time"))
        if command is not None
        else SDKTransport(
            StdioCommand(sys.executable, ("-m", "mcp_server_time")), SDKOptions(server_name="time")
        )
    )
    connect(loop, transport)
    try:
        names = {tool.name for tool in loop.run(transport.list_tools, timeout=15)}
        assert "get_current_time" in names
        outcome = loop.run(transport.call_tool, "get_current_time", {"timezone": "UTC"}, 15, timeout=20)
        assert not outcome.is_error
        assert outcome.structured_content is not None
        assert outcome.structured_content["timezone"] == "UTC"
        with pytest.raises(ServerReplyError) as refused:
            loop.run(transport.call_tool, "no_such_tool", {}, 15, timeout=20)
        assert refused.value.code == INVALID_PARAMS
    finally:
        close(loop, transport)


HOST_SCRIPT = """
import sys, time
from actors.mcp.loop import EventLoop
from actors.mcp.sdk_transport import SDKOptions, SDKTransport, StdioCommand
loop = EventLoop.start()
transport = SDKTransport(StdioCommand(sys.executable, ("-m", "tests.servers.silent_server"), cwd=sys.argv[1]),
                         SDKOptions(protocol="legacy", connect_timeout=30))
loop.submit(transport.connect, None)
while transport.spawned_pid is None:
    time.sleep(0.01)
print(transport.spawned_pid, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_servers_die_with_a_killed_host() -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, str(REPO_ROOT)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert host.stdout is not None
        server_pid = int(host.stdout.readline())
        assert alive(server_pid)
        host.kill()
        host.wait(10)
        assert wait_until(lambda: not alive(server_pid), 10), "the server outlived its SIGKILLed host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(10)
        if host.stdout is not None:
            host.stdout.close()


# -- HTTP -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ERAS)
def test_streamable_http(
    loop: EventLoop, http_server: HTTPServer, marker_dir: Path, recorder: Recorder, protocol: str
) -> None:
    transport = http_transport(
        http_server.url, headers={"X-Test": "hello-header"}, protocol=protocol, server_name="http"
    )
    connect(loop, transport, recorder)
    try:
        assert transport.pid is None
        if protocol == MODERN_PROTOCOL:
            assert transport.negotiated_protocol == MODERN_PROTOCOL
        else:
            assert transport.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS
        header = loop.run(transport.call_tool, "header", {"name": "X-Test"}, 10, timeout=15)
        assert header.content[0]["text"] == "hello-header"
        assert {tool.name for tool in loop.run(transport.list_tools, timeout=10)} >= BASE_TOOLS
        loop.run(transport.probe, timeout=15)

        marker = marker_name()
        with pytest.raises(TimeoutError):
            loop.run(transport.call_tool, "sleep", {"seconds": 30, "marker": marker}, 0.5, timeout=15)
        assert saw_cancellation(marker_dir, marker), "the server never saw the cancellation"

        loop.run(transport.call_tool, "add_tool", {"name": f"http_{uuid.uuid4().hex[:6]}"}, 10, timeout=15)
        assert recorder.tools_changed.wait(10), "no tools/list_changed"
        assert echo(loop, transport, "x") == "x"
    finally:
        close(loop, transport)
    assert not recorder.closed.is_set()


def test_sse(loop: EventLoop, sse_server: HTTPServer, marker_dir: Path, recorder: Recorder) -> None:
    transport = http_transport(sse_server.url, "sse", headers={"X-Test": "sse-header"})
    connect(loop, transport, recorder)
    try:
        assert transport.connect_mode == "legacy"
        assert transport.negotiated_protocol in HANDSHAKE_PROTOCOL_VERSIONS
        assert loop.run(transport.call_tool, "add", {"a": 1, "b": 1}, 10, timeout=15).structured_content == {
            "result": 2
        }
        assert {tool.name for tool in loop.run(transport.list_tools, timeout=10)} >= BASE_TOOLS
        loop.run(transport.probe, timeout=15)
        marker = marker_name()
        with pytest.raises(TimeoutError):
            loop.run(transport.call_tool, "sleep", {"seconds": 30, "marker": marker}, 0.5, timeout=15)
        assert saw_cancellation(marker_dir, marker), "the server never saw the cancellation"
        loop.run(transport.call_tool, "add_tool", {"name": f"sse_{uuid.uuid4().hex[:6]}"}, 10, timeout=15)
        assert recorder.tools_changed.wait(10), "no tools/list_changed"
    finally:
        close(loop, transport)


@pytest.mark.parametrize(
    ("kind", "protocol"),
    [("streamable-http", "legacy"), ("streamable-http", MODERN_PROTOCOL), ("sse", "legacy")],
)
def test_http_server_death_fails_in_flight_calls(
    loop: EventLoop,
    recorder: Recorder,
    tmp_path: Path,
    kind: Literal["streamable-http", "sse"],
    protocol: str,
) -> None:
    server = HTTPServer(kind, env={"FIXTURE_MARKER_DIR": str(tmp_path)}).start()
    try:
        transport = http_transport(server.url, kind, protocol=protocol)
        connect(loop, transport, recorder)
        try:
            marker = marker_name()
            slow = loop.submit(transport.call_tool, "sleep", {"seconds": 60, "marker": marker}, 60)
            assert wait_until((tmp_path / f"{marker}.started").exists, 10)
            started = time.monotonic()
            server.kill()
            with pytest.raises(ConnectionError):
                slow.result(15)
            elapsed = time.monotonic() - started
            assert elapsed < 5, f"the in-flight call took {elapsed:.1f}s to fail"
            assert recorder.closed.wait(10), "the death was not pushed"
            with pytest.raises(ConnectionError):
                loop.run(transport.call_tool, "echo", {"text": "dead"}, 10, timeout=15)
        finally:
            close(loop, transport)
    finally:
        server.stop()


def test_unreachable_http_server(loop: EventLoop) -> None:
    with HTTPServer("streamable-http") as server:
        url = server.url
    transport = http_transport(url, protocol="legacy", server_name="gone")
    with pytest.raises(ConnectionError, match="gone"):
        connect(loop, transport)
    close(loop, transport)


def test_blocking_work_runs_on_a_thread_of_its_own_not_the_offload_worker() -> None:
    # A lock held by another process may hold `fn` for seconds: not on the loop, and not on
    # the one offload worker every big frame waits for.
    from actors.mcp.own_thread import in_own_thread, offload

    def where() -> str:
        return threading.current_thread().name

    def fails() -> None:
        raise OSError("the disk is gone")

    async def scenario() -> tuple[str, str]:
        with pytest.raises(OSError, match="the disk is gone"):
            await in_own_thread(fails)
        return await in_own_thread(where), await offload(where)

    with EventLoop() as loop:
        own, worker = loop.run(scenario, timeout=30)
    assert own.startswith("mcp-actors-blocking") and own != worker
    assert THREAD_NAME not in (worker, own)
