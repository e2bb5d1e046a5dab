"""Supervision and the message API, driven through `Runtime` with `MockTransport` servers."""

from __future__ import annotations

import concurrent.futures
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pykka
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors import Runtime
from actors.mcp.config import ServerConfig
from actors.mcp.transport import CallOutcome
from actors.runtime.clock import Clock, ManualClock
from actors.runtime.messages import (
    CallTool,
    GetStatus,
    ListTools,
    RegisterServer,
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    UnregisterServer,
)
from actors.runtime.registry import ServerRefs
from actors.runtime.server import ServerActor
from actors.runtime.supervisor import restart_delay
from actors.testing import MockTransport
from actors.tools import ToolError, ToolResult
from tests.conftest import wait_until
from tests.harness.handles import MCPClient
from tests.runtime.conftest import advance_to
from tests.runtime.conftest import armed as runtime_armed

WAIT = 10.0
NS = "ns"


def entry(**lifecycle: Any) -> dict[str, Any]:
    """An mcpServers entry with fast restarts and no ticks unless asked for."""
    return {
        "command": "mock-server",
        "restartBackoff": 0.01,
        "restartBackoffMax": 0.05,
        "healthCheckInterval": 0,
        "idleTimeout": 0,
        **lifecycle,
    }


@contextmanager
def runtime(mock: MockTransport, clock: Clock | None = None, **lifecycle: Any) -> Iterator[Runtime]:
    config = {"mcpServers": {NS: entry(**lifecycle)}, "builtin": {"enabled": False}}
    with Runtime.start(config, transports={NS: mock}, clock=clock) as rt:
        yield rt


# ---- on a ManualClock: the timing in clock seconds, moved by the test ----------------------------

PACED = {"restartBackoff": 1, "restartBackoffMax": 30, "restartWindow": 600}
"""Backoff and window as a real configuration would have them: on a ManualClock they cost nothing."""


def armed(rt: Runtime, kind: str) -> float:
    return runtime_armed(rt, kind, NS)


def supervisor_settled(rt: Runtime) -> None:
    """Return once the supervisor has handled every message told to it before."""
    rt._supervisor.ask(object(), timeout=WAIT)


class Gated(MockTransport):
    """A `MockTransport` whose tool calls wait (on the loop, without holding it) for `release`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        with anyio.fail_after(WAIT * 3):
            while not self.release.is_set():
                await anyio.sleep(0.005)
        return await super().call_tool(name, arguments, timeout)


def gated_repos() -> Gated:
    return Gated(["list_repos", "create_issue"], {"list_repos": lambda args: {"repos": ["a"]}})


def status(rt: Runtime, namespace: str = NS) -> ServerStatus:
    return rt.status(namespace)[0]


def becomes(rt: Runtime, state: str, restarts: int | None = None) -> Callable[[], bool]:
    def check() -> bool:
        now = status(rt)
        return now.state == state and (restarts is None or now.restarts == restarts)

    return check


def call(rt: Runtime, tool: str = "list_repos", timeout: float = 5.0) -> ToolResult:
    return rt.call_tool(f"{NS}/{tool}", {}, timeout=timeout)


def repos() -> MockTransport:
    return MockTransport(["list_repos", "create_issue"], {"list_repos": lambda args: {"repos": ["a"]}})


# ---- restart_delay -------------------------------------------------------------------------


class _Low(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return a


class _High(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return b


def backoff(base: float, ceiling: float) -> ServerConfig:
    return ServerConfig(name="s", command="x", restart_backoff=base, restart_backoff_max=ceiling)


def test_restart_delay_doubles_up_to_the_maximum() -> None:
    config = backoff(0.1, 1.0)
    high = [restart_delay(config, n, _High()) for n in range(1, 8)]
    low = [restart_delay(config, n, _Low()) for n in range(1, 8)]
    assert high == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0])
    assert low == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5])


def test_restart_delay_attempt_counts_from_one() -> None:
    config = backoff(0.1, 1.0)
    for attempt in (-3, 0, 1):
        assert restart_delay(config, attempt, _High()) == pytest.approx(0.1)


def test_restart_delay_is_reproducible_with_a_seeded_rng() -> None:
    config = backoff(0.2, 10.0)
    first = [restart_delay(config, n, random.Random(7)) for n in range(1, 6)]
    assert first == [restart_delay(config, n, random.Random(7)) for n in range(1, 6)]


def test_restart_delay_jitters() -> None:
    config = backoff(1.0, 1.0)
    rng = random.Random(1)
    delays = {restart_delay(config, 1, rng) for _ in range(50)}
    assert len(delays) > 40
    assert all(0.5 <= d <= 1.0 for d in delays)


def test_restart_delay_without_backoff_is_zero() -> None:
    assert restart_delay(backoff(0.0, 0.0), 5) == 0.0
    assert restart_delay(backoff(0.0, 10.0), 5) == 0.0


@given(
    base=st.floats(min_value=0.0, max_value=5.0),
    extra=st.floats(min_value=0.0, max_value=60.0),
    attempt=st.integers(min_value=1, max_value=200),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_restart_delay_bounds(base: float, extra: float, attempt: int, seed: int) -> None:
    config = backoff(base, base + extra)
    ceiling = min(config.restart_backoff_max, base * 2.0 ** (attempt - 1))
    delay = restart_delay(config, attempt, random.Random(seed))
    assert ceiling / 2 - 1e-9 <= delay <= ceiling + 1e-9
    assert delay <= config.restart_backoff_max + 1e-9


@given(
    base=st.floats(min_value=0.001, max_value=5.0),
    attempt=st.integers(min_value=1, max_value=30),
)
def test_restart_delay_never_shrinks_from_one_attempt_to_the_next(base: float, attempt: int) -> None:
    config = backoff(base, base * 1000)
    # The next attempt's shortest delay is at least this attempt's longest over two.
    assert restart_delay(config, attempt + 1, _Low()) >= restart_delay(config, attempt, _High()) / 2 - 1e-9
    assert restart_delay(config, attempt + 1, _High()) >= restart_delay(config, attempt, _High()) - 1e-9


def test_restart_delay_for_a_huge_attempt_is_capped() -> None:
    assert restart_delay(backoff(0.2, 10.0), 2000, _High()) == pytest.approx(10.0)


# ---- crashes and restarts --------------------------------------------------------------------


def test_crash_found_by_a_health_check_is_restarted_and_counted() -> None:
    clock = ManualClock()
    mock = MockTransport(["list_repos"], crash_after=1)
    with runtime(mock, clock, healthCheckInterval=30, **PACED) as rt:
        assert call(rt).success
        # The server answered, then went silent: only the health probe can notice, at its interval.
        assert armed(rt, "health") == clock.monotonic() + 30
        clock.advance(29.9)
        assert (status(rt).state, status(rt).health_check_failures) == ("running", 0)
        clock.advance(0.1)
        assert wait_until(becomes(rt, "restarting"), WAIT), status(rt)
        probed_at = clock.wall()
        # Then the first backoff: half to all of restartBackoff, and no restart before it.
        restart = armed(rt, "restart")
        assert 0.5 <= restart - clock.monotonic() <= 1.0
        assert (status(rt).restarts, mock.connects) == (0, 1)
        advance_to(clock, restart)
        assert wait_until(becomes(rt, "running", restarts=1), WAIT), status(rt)
        now = status(rt)
        assert now.health_check_failures == 1
        assert now.last_error_at == probed_at  # the server actor reads the runtime's clock too
        assert mock.connects == 2
        assert call(rt).success


@pytest.mark.parametrize("policy", ["permanent", "transient"])
def test_pushed_death_restarts(policy: str) -> None:
    clock = ManualClock()
    mock = repos()
    with runtime(mock, clock, restart=policy, **PACED) as rt:
        assert call(rt).success
        mock.die("process exited with 1")
        assert wait_until(becomes(rt, "restarting"), WAIT), status(rt)
        restart = armed(rt, "restart")
        assert (status(rt).restarts, mock.connects) == (0, 1)
        advance_to(clock, restart)
        assert wait_until(becomes(rt, "running", restarts=1), WAIT), status(rt)
        assert mock.connects == 2
        assert status(rt).health_check_failures == 0
        result = call(rt)
        assert result.success, result
        assert result.output is not None


def test_a_call_during_the_restart_backoff_waits_for_the_restart() -> None:
    clock = ManualClock()
    mock = repos()
    with runtime(mock, clock, **PACED) as rt:
        assert call(rt).success
        mock.die()
        assert wait_until(lambda: status(rt).state == "restarting", WAIT), status(rt)
        restart = armed(rt, "restart")
        message = CallTool(namespace=NS, tool="list_repos", timeout=60)
        rt.registry.tell(message)
        # The status request reaches the server after the call: the call is waiting, not refused.
        assert status(rt).state == "restarting"
        assert not message.reply.done()
        advance_to(clock, restart)
        result = message.reply.result(timeout=WAIT)
        assert result.success, result
        assert status(rt).restarts == 1


def test_temporary_server_stays_down_and_starts_lazily() -> None:
    mock = repos()
    with runtime(mock, restart="temporary") as rt:
        assert call(rt).success
        mock.die()
        assert wait_until(lambda: status(rt).state in ("stopped", "failed"), WAIT), status(rt)
        now = status(rt)
        assert (now.state, now.restarts) == ("stopped", 0), now
        assert mock.connects == 1
        # Not restarted: the next call starts it, lazily.
        assert call(rt).success
        now = status(rt)
        assert (now.state, now.restarts) == ("running", 0)
        assert mock.connects == 2


def test_temporary_server_with_no_restarts_allowed_stays_stopped_not_failed() -> None:
    mock = repos()
    with runtime(mock, restart="temporary", maxRestarts=0) as rt:
        assert call(rt).success
        mock.die()
        assert wait_until(lambda: status(rt).state in ("stopped", "failed"), WAIT)
        assert status(rt).state == "stopped"


@pytest.mark.parametrize("policy", ["permanent", "transient", "temporary"])
def test_a_requested_or_idle_stop_is_not_restarted(policy: str) -> None:
    clock = ManualClock()
    mock = repos()
    with runtime(mock, clock, restart=policy, idleTimeout=300, **PACED) as rt:
        assert call(rt).success
        advance_to(clock, armed(rt, "idle"))
        assert wait_until(becomes(rt, "stopped"), WAIT), status(rt)
        assert call(rt).success
        assert rt.stop_server(NS).state == "stopped"
        # Longer than every backoff: a restart scheduled for either stop would have been told.
        supervisor_settled(rt)
        clock.advance(3600)
        now = status(rt)
        assert (now.state, now.restarts) == ("stopped", 0)
        assert mock.connects == 2


def test_too_many_failed_starts_leave_the_server_failed_until_an_explicit_start() -> None:
    mock = repos()
    mock.connect_failures = 100
    clock = ManualClock()
    with runtime(mock, clock, **{**PACED, "maxRestarts": 2, "restartWindow": 60}) as rt:
        first = call(rt)
        assert first.error_type == "connection", first
        for _ in range(2):
            advance_to(clock, armed(rt, "restart"))
        assert wait_until(becomes(rt, "failed"), WAIT), status(rt)
        assert status(rt).restarts == 2
        assert mock.connect_failures == 97  # the first start and two restarts
        failed = call(rt)
        assert failed.error_type == "failed", failed
        assert "start it explicitly" in (failed.error or "")
        assert mock.connect_failures == 97  # a failed server is not started by calls
        # An explicit start clears it.
        mock.connect_failures = 0
        started = rt.start_server(NS, timeout=5)
        assert started.state == "running"
        assert call(rt).success
        # The restart window was cleared: the next crash is restarted, not fatal.
        mock.die()
        advance_to(clock, armed(rt, "restart"))
        assert wait_until(becomes(rt, "running", restarts=3), WAIT), status(rt)


def test_too_many_crashes_within_the_window_fail_the_server() -> None:
    mock = repos()
    clock = ManualClock()
    with runtime(mock, clock, **{**PACED, "maxRestarts": 1, "restartWindow": 60}) as rt:
        assert call(rt).success
        mock.die()
        advance_to(clock, armed(rt, "restart"))
        assert wait_until(becomes(rt, "running", restarts=1), WAIT), status(rt)
        clock.advance(50)  # still within the window of the first crash
        mock.die()
        assert wait_until(becomes(rt, "failed"), WAIT), status(rt)
        assert status(rt).restarts == 1
        assert call(rt).error_type == "failed"
        listed = ListTools(NS)
        rt.registry.tell(listed)
        assert [t.name for t in listed.reply.result(timeout=WAIT)] == ["ns/create_issue", "ns/list_repos"]
        assert rt.start_server(NS, timeout=5).state == "running"
        assert call(rt).success


def test_crashes_older_than_the_window_are_forgotten() -> None:
    mock = repos()
    clock = ManualClock()
    with runtime(mock, clock, **{**PACED, "maxRestarts": 1, "restartWindow": 60}) as rt:
        assert call(rt).success
        mock.die()
        crashed = clock.monotonic()
        advance_to(clock, armed(rt, "restart"))
        assert wait_until(becomes(rt, "running", restarts=1), WAIT), status(rt)
        advance_to(clock, crashed + 60.1)  # the first crash leaves the window
        mock.die()
        assert wait_until(becomes(rt, "restarting"), WAIT), status(rt)
        advance_to(clock, armed(rt, "restart"))
        assert wait_until(becomes(rt, "running", restarts=2), WAIT), status(rt)


def test_start_server_of_a_failed_server_that_still_cannot_start_raises() -> None:
    mock = repos()
    mock.connect_failures = 100
    with runtime(mock, maxRestarts=0) as rt:
        assert call(rt).error_type == "connection"
        assert wait_until(becomes(rt, "failed"), WAIT), status(rt)
        with pytest.raises(ToolError) as caught:
            rt.start_server(NS, timeout=5)
        assert caught.value.error_type == "connection"


# ---- idle stop and calls in flight ---------------------------------------------------------


def test_idle_stop_waits_for_calls_in_flight() -> None:
    clock = ManualClock()
    mock = gated_repos()
    with runtime(mock, clock, idleTimeout=300) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=3600)
        rt.registry.tell(message)
        assert wait_until(lambda: status(rt).in_flight == 1, WAIT), status(rt)
        # Three idle timeouts pass with the call in flight: each idle check finds it busy.
        for _ in range(3):
            advance_to(clock, armed(rt, "idle"))
            assert status(rt).state == "running"
        assert not message.reply.done()
        mock.release.set()
        result = message.reply.result(timeout=WAIT)
        assert result.success, result
        done_at = clock.monotonic()
        # Once the call is done the idle clock runs from its end, and the server stops then.
        due = armed(rt, "idle")
        assert due == done_at + 300
        clock.advance(299.9)
        assert status(rt).state == "running"
        advance_to(clock, due)
        assert wait_until(becomes(rt, "stopped"), WAIT), status(rt)
        assert mock.closes == 1


def test_the_idle_timeout_runs_from_the_last_call() -> None:
    clock = ManualClock()
    mock = repos()
    with runtime(mock, clock, idleTimeout=300) as rt:
        assert call(rt).success
        first = armed(rt, "idle")
        assert first == clock.monotonic() + 300
        clock.advance(200)
        assert call(rt).success
        last_call = clock.monotonic()
        # The check due 300 s after the start finds the server idle for only 100 s: not yet.
        advance_to(clock, first)
        assert status(rt).state == "running"
        rearmed = last_call + 300
        assert wait_until(lambda: rt._timers.due(("idle", NS)) == pytest.approx(rearmed), WAIT), status(rt)
        clock.advance(299.9 - (clock.monotonic() - last_call))
        assert status(rt).state == "running"
        advance_to(clock, last_call + 300)
        assert wait_until(becomes(rt, "stopped"), WAIT), status(rt)
        assert (mock.connects, mock.closes) == (1, 1)


def test_status_is_answered_while_a_call_runs() -> None:
    mock = gated_repos()
    with runtime(mock) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=5)
        rt.registry.tell(message)
        assert wait_until(lambda: status(rt).in_flight == 1, WAIT)
        began = time.monotonic()
        assert status(rt).state == "running"
        assert time.monotonic() - began < 0.5
        assert not message.reply.done()
        mock.release.set()
        assert message.reply.result(timeout=WAIT).success


# ---- the message API -----------------------------------------------------------------------


def test_tell_call_tool_then_wait_on_the_reply_slot() -> None:
    with runtime(repos()) as rt:
        message = CallTool(namespace=NS, tool="list_repos", arguments={})
        rt.registry.tell(message)
        result = message.reply.result(timeout=WAIT)
        assert isinstance(result, ToolResult)
        assert result.success, result
        assert result.output is not None
        assert result.output["structuredContent"] == {"repos": ["a"]}


def test_call_tool_named() -> None:
    with runtime(repos()) as rt:
        message = CallTool.named(f"{NS}/list_repos", {}, timeout=5)
        rt.registry.tell(message)
        assert message.reply.result(timeout=WAIT).success


def test_ask_returns_the_same_reply_future_at_once() -> None:
    mock = gated_repos()
    with runtime(mock) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=5)
        began = time.monotonic()
        future = rt.registry.ask(message, timeout=WAIT)
        assert future is message.reply
        assert isinstance(future, concurrent.futures.Future)
        assert time.monotonic() - began < 0.8
        assert not future.done()
        mock.release.set()
        assert future.result(timeout=WAIT).success


def test_unknown_namespace_answers_not_found() -> None:
    with runtime(repos()) as rt:
        message = CallTool(namespace="nope", tool="list_repos")
        assert rt.registry.ask(message, timeout=WAIT) is message.reply
        result = message.reply.result(timeout=WAIT)
        assert result.error_type == "not_found"
        assert "'nope'" in (result.error or "")


def test_unknown_tool_answers_not_found() -> None:
    with runtime(repos()) as rt:
        assert call(rt).success
        result = call(rt, tool="no_such_tool")
        assert result.error_type == "not_found", result


Send = Callable[[Runtime, Any], Any]


def by_tell(rt: Runtime, message: Any) -> Any:
    rt.registry.tell(message)
    return message.reply


def by_ask(rt: Runtime, message: Any) -> Any:
    future = rt.registry.ask(message, timeout=WAIT)
    assert future is message.reply
    return future


@pytest.mark.parametrize("send", [by_tell, by_ask], ids=["tell", "ask"])
def test_every_request_is_answered_through_its_reply_slot(send: Send) -> None:
    mock = repos()
    extra = MockTransport(["ping"])
    with runtime(mock) as rt:
        statuses = send(rt, GetStatus()).result(timeout=WAIT)
        assert [(s.namespace, s.state) for s in statuses] == [(NS, "idle")]
        assert send(rt, GetStatus("nope")).result(timeout=WAIT) == []

        tools = send(rt, ListTools()).result(timeout=WAIT)
        assert [t.name for t in tools] == ["ns/create_issue", "ns/list_repos"]
        assert [t.name for t in send(rt, ListTools(NS)).result(timeout=WAIT)] == [t.name for t in tools]

        started = send(rt, StartServer(NS)).result(timeout=WAIT)
        assert isinstance(started, ServerStatus)
        assert started.state == "running"
        assert started.connected

        stopped = send(rt, StopServer(NS)).result(timeout=WAIT)
        assert stopped.state == "stopped"
        assert not stopped.connected

        with pytest.raises(ToolError) as caught:
            send(rt, StartServer("nope")).result(timeout=WAIT)
        assert caught.value.error_type == "not_found"

        extra_config = ServerConfig(
            name="extra", command="mock-server", idle_timeout=0, health_check_interval=0
        )
        assert send(rt, RegisterServer(extra_config, extra)).result(timeout=WAIT) is None
        with pytest.raises(ToolError):
            send(rt, RegisterServer(extra_config, extra)).result(timeout=WAIT)
        # A server never started stops at once, and says it is idle.
        assert send(rt, StopServer("extra")).result(timeout=WAIT).state == "idle"
        ping = send(rt, CallTool(namespace="extra", tool="ping")).result(timeout=WAIT)
        assert ping.success, ping
        namespaces = [s.namespace for s in send(rt, GetStatus()).result(timeout=WAIT)]
        assert namespaces == ["extra", NS]

        assert send(rt, ShutdownAll()).result(timeout=WAIT) is None
        assert {s.state for s in rt.status()} == {"stopped"}
        assert extra.closes == 1

        assert send(rt, UnregisterServer("extra")).result(timeout=WAIT) is True
        assert send(rt, UnregisterServer("extra")).result(timeout=WAIT) is False
        gone = send(rt, CallTool(namespace="extra", tool="ping")).result(timeout=WAIT)
        assert gone.error_type == "not_found"
        assert [s.namespace for s in rt.status()] == [NS]

        # ShutdownAll keeps registrations: a call starts the server again.
        assert send(rt, CallTool(namespace=NS, tool="list_repos")).result(timeout=WAIT).success
        assert mock.connects == 2


def test_unregister_a_running_server_closes_it() -> None:
    mock = repos()
    with runtime(mock) as rt:
        assert call(rt).success
        message = UnregisterServer(NS)
        rt.registry.tell(message)
        assert message.reply.result(timeout=WAIT) is True
        assert mock.closes == 1
        assert rt.status() == []
        assert rt.list_tools() == []


# ---- never a hang --------------------------------------------------------------------------


def server_refs(rt: Runtime) -> list[Any]:
    refs = ServerRefs()
    rt.registry.tell(refs)
    result: list[Any] = refs.reply.result(timeout=WAIT)
    return result


def test_a_call_in_flight_when_the_server_actor_stops_gets_a_result() -> None:
    mock = repos()
    mock.call_delay = 5.0
    with runtime(mock) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=10)
        rt.registry.tell(message)
        assert wait_until(lambda: status(rt).in_flight == 1, WAIT)
        (ref,) = server_refs(rt)
        ref.stop(block=True, timeout=WAIT)
        result = message.reply.result(timeout=2.0)
        assert result.error_type == "cancelled", result
        # The next call goes to a new server actor.
        mock.call_delay = 0
        after = call(rt)
        assert after.success, after
        assert server_refs(rt)[0] is not ref


def test_a_call_queued_for_a_start_when_the_server_actor_stops_gets_a_result() -> None:
    mock = repos()
    mock.hang_on_connect = True
    # A short connect timeout: a stop waits for a hanging start to give up (see the next tests).
    with runtime(mock, connectTimeout=1) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=20)
        rt.registry.tell(message)
        assert wait_until(lambda: status(rt).state == "starting", WAIT)
        (ref,) = server_refs(rt)
        ref.stop(block=True, timeout=WAIT)
        result = message.reply.result(timeout=2.0)
        assert result.error_type == "cancelled", result
        # A server that never answers its start: the call times out, it does not hang.
        began = time.monotonic()
        late = call(rt, timeout=0.3)
        assert late.error_type == "timeout", late
        assert time.monotonic() - began < 3


def server_actor_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ServerActor")]


def stop_leftover_server_actors() -> None:
    for ref in pykka.ActorRegistry.get_by_class(ServerActor):
        ref.stop(block=True, timeout=WAIT)


def test_shutdown_stops_every_server_actor_even_when_a_server_is_slow_to_stop() -> None:
    mock = repos()
    mock.hang_on_connect = True
    before = set(server_actor_threads())
    try:
        rt = Runtime.start(
            {"mcpServers": {NS: entry(connectTimeout=30)}, "builtin": {"enabled": False}},
            transports={NS: mock},
        )
        rt.registry.tell(CallTool(namespace=NS, tool="list_repos", timeout=20))
        assert wait_until(lambda: status(rt).state == "starting", WAIT)
        rt.shutdown(timeout=0.5)
        assert wait_until(lambda: not set(server_actor_threads()) - before, 3.0), server_actor_threads()
    finally:
        stop_leftover_server_actors()


def test_stop_during_a_hanging_start_does_not_wait_for_the_connect_timeout() -> None:
    mock = repos()
    mock.hang_on_connect = True
    with runtime(mock, connectTimeout=2.5) as rt:
        message = CallTool(namespace=NS, tool="list_repos", timeout=20)
        rt.registry.tell(message)
        assert wait_until(lambda: status(rt).state == "starting", WAIT)
        assert rt.stop_server(NS, timeout=1.0).state == "stopped"
        assert message.reply.result(timeout=1.0).error_type == "cancelled"


def test_calls_after_shutdown_get_a_result() -> None:
    with runtime(repos()) as rt:
        assert call(rt).success
    assert call(rt).error_type == "cancelled"
    with pytest.raises(ToolError):
        rt.status()


# ---- MCPClient -----------------------------------------------------------------------------


def test_mcp_client_restarts_after_a_pushed_death() -> None:
    mock = repos()
    config = ServerConfig(
        name="gh",
        command="github-mcp-server",
        restart_backoff=0.01,
        restart_backoff_max=0.05,
        health_check_interval=0,
        idle_timeout=0,
    )
    with MCPClient(config, mock) as client:
        assert client.call_tool("list_repos", {}, timeout=5).success
        mock.die()
        assert wait_until(lambda: client.state == "running" and client.restart_count == 1, WAIT)
        assert client.connected
        assert client.call_tool("list_repos", {}, timeout=5).success
