"""No session outlives a `connect` that was cancelled or failed, nor a `close` that was cancelled.

The process must be gone, and `closed_reason` must say why, by the time the call returns (or,
for a caller that only cancels a future, soon after, without anyone calling `close`).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from actors.mcp.loop import EventLoop
from actors.mcp.sdk_transport import SDKTransport
from actors.mcp.sdk_transport.owner import SessionOwner
from actors.mcp.stdio_process import resolve_command
from actors.testing import procfs
from tests.conftest import wait_until
from tests.mcp.conftest import stdio_transport

SLOW_START = "tests.servers.slow_start_server"


def slow_server() -> SDKTransport:
    """A server that answers nothing for a minute: any connect to it is mid-handshake."""
    return stdio_transport("60", module=SLOW_START, protocol="legacy")


def test_a_connect_cancelled_mid_handshake_reaps_the_server_before_it_returns(loop: EventLoop) -> None:
    transport = slow_server()

    async def cancel_mid_handshake() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(transport.connect, None)
                while transport.spawned_pid is None:
                    await anyio.sleep(0.01)
                tasks.cancel_scope.cancel()

    loop.run(cancel_mid_handshake, timeout=60)
    pid = transport.spawned_pid
    assert pid is not None
    assert not procfs.is_alive(pid), "connect returned while the server it started was still running"
    assert transport.closed_reason == "slow_start_server: the connect was cancelled"
    with pytest.raises(ConnectionError, match="the connect was cancelled"):
        loop.run(transport.call_tool, "echo", {"text": "x"}, 10, timeout=15)
    loop.run(transport.close, timeout=15)
    assert transport.closed_reason == "slow_start_server: the connect was cancelled"


def test_a_connect_whose_future_is_cancelled_reaps_the_server(loop: EventLoop) -> None:
    # How an actor gives up on a start: it cancels the future that `EventLoop.submit` gave it.
    transport = slow_server()
    pending = loop.submit(transport.connect, None)
    assert wait_until(lambda: transport.spawned_pid is not None, 20)
    pid = transport.spawned_pid
    assert pid is not None and procfs.is_alive(pid)
    assert pending.cancel()
    assert wait_until(lambda: transport.closed_reason is not None, 15), "the session was not closed"
    assert transport.closed_reason == "slow_start_server: the connect was cancelled"
    assert wait_until(lambda: not procfs.is_alive(pid), 15), "the server outlived the cancelled connect"


def test_a_failure_right_after_the_handshake_closes_the_session(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = SessionOwner._record

    def record_then_fail(self: SessionOwner, client: Any) -> None:
        real(self, client)
        raise RuntimeError("broken right after the handshake")

    monkeypatch.setattr(SessionOwner, "_record", record_then_fail)
    transport = stdio_transport(protocol="legacy")
    with pytest.raises(ConnectionError, match="broken right after the handshake"):
        loop.run(transport.connect, None, timeout=30)
    pid = transport.spawned_pid
    assert pid is not None and not procfs.is_alive(pid), "connect failed but left its server running"
    reason = transport.closed_reason
    assert reason is not None and "broken right after the handshake" in reason
    loop.run(transport.close, timeout=15)


def test_a_cancelled_close_still_reaps_the_server(loop: EventLoop) -> None:
    transport = stdio_transport(protocol="legacy")
    loop.run(transport.connect, None, timeout=30)
    pid = transport.pid
    assert pid is not None

    async def close_cancelled() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await transport.close()

    loop.run(close_cancelled, timeout=30)
    assert not procfs.is_alive(pid), "close returned while the server was still running"
    assert transport.closed_reason == "fixture_server: the transport was closed"


def test_a_close_during_the_command_lookup_starts_nothing(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    looking, release = threading.Event(), threading.Event()

    def slow_lookup(*args: Any) -> str:
        looking.set()
        release.wait(30)
        return resolve_command(*args)

    monkeypatch.setattr("actors.mcp.sdk_transport.channel.resolve_command", slow_lookup)
    transport = stdio_transport(protocol="legacy")
    pending = loop.submit(transport.connect, None)
    try:
        assert looking.wait(20)
        loop.run(transport.close, timeout=15)
    finally:
        release.set()
    with pytest.raises(ConnectionError, match="the transport was closed"):
        pending.result(20)
    assert transport.spawned_pid is None, "a server was started after close"
