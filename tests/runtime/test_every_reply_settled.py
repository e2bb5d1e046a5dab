"""Every reply slot is settled, at once, however a request meets a stop, an unregister or a start.

The races here are narrow, so most tests drive `MockTransport` servers that count their
connects and closes; the leaked-process checks use the real fixture servers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pykka
import pytest

from actors import Runtime
from actors.runtime.answering import AnsweringActor
from actors.runtime.builtin_actor import BuiltinActor
from actors.runtime.messages import CallTool, GetStatus, Retire, StartServer
from actors.runtime.registry import RegistryActor, Route
from actors.runtime.server import ServerActor
from actors.testing import MockTransport
from tests.conftest import child_pids, wait_until
from tests.runtime.conftest import config, stdio_server
from tests.runtime.test_supervision import NS, call, entry, repos, runtime, status

WAIT = 10.0


def route(rt: Runtime, namespace: str = NS) -> Any:
    asked = Route(namespace)
    rt.registry.tell(asked)
    return asked.reply.result(timeout=WAIT)


# ---- a retired server takes no more work ---------------------------------------------------


def test_a_call_that_reaches_a_retiring_server_is_cancelled_and_starts_nothing() -> None:
    mock = repos()
    with runtime(mock) as rt:
        server = route(rt)
        retire = Retire("server 'ns' was unregistered")
        late = CallTool(NS, "list_repos", {})
        server.tell(retire)
        server.tell(late)
        assert retire.reply.result(timeout=WAIT).state == "idle"
        result = late.reply.result(timeout=WAIT)
        assert result.error_type == "cancelled", result
        assert "unregistered" in (result.error or "")
        assert mock.connects == 0
        start = StartServer(NS)
        server.tell(start)
        assert isinstance(start.reply.exception(timeout=WAIT), Exception)
        assert mock.connects == 0


def test_unregister_while_starting_answers_the_waiting_call_and_closes_the_session() -> None:
    mock = repos()
    mock.hang_on_connect = True
    with runtime(mock, connectTimeout=30) as rt:
        waiting = CallTool(NS, "list_repos", {}, timeout=20)
        rt.registry.tell(waiting)
        assert wait_until(lambda: status(rt).state == "starting", WAIT)
        assert rt.unregister_server(NS, timeout=WAIT) is True
        assert waiting.reply.result(timeout=1.0).error_type == "cancelled"
        assert rt.status() == []
        assert call(rt).error_type == "not_found"


def test_an_unregistered_real_server_leaves_no_process() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/echo", {"text": "x"}, timeout=30).success
        pid = rt.status("fx")[0].pid
        assert pid in child_pids_of_tree()
        assert rt.unregister_server("fx", timeout=30) is True
        assert wait_until(lambda: pid not in child_pids_of_tree(), WAIT)
        after = rt.call_tool("fx/echo", {"text": "x"}, timeout=30)
        assert after.error_type == "not_found", after
        assert rt.status() == []


def child_pids_of_tree() -> set[int]:
    """Our child processes (a stdio server runs as our child: the pdeathsig wrapper execs it, or
    execs the launcher of a forked one), the harness's fork servers excepted."""
    return child_pids()


# ---- shutdown and stop while a start is under way ------------------------------------------


def test_runtime_shutdown_during_a_slow_start_answers_the_call_and_leaves_no_process() -> None:
    rt = Runtime.start(config({"slow": stdio_server("slow_start_server", "30")}))
    waiting = CallTool("slow", "echo", {"text": "x"}, timeout=60)
    rt.registry.tell(waiting)
    assert wait_until(lambda: rt.status("slow")[0].state == "starting", WAIT)
    assert wait_until(lambda: bool(child_pids_of_tree()), WAIT)
    rt.shutdown()
    assert waiting.reply.result(timeout=1.0).error_type == "cancelled"
    assert wait_until(lambda: not child_pids_of_tree(), WAIT), child_pids_of_tree()


def test_stop_during_a_slow_start_ends_stopped_with_no_session_and_no_process() -> None:
    with Runtime.start(config({"slow": stdio_server("slow_start_server", "30")})) as rt:
        waiting = CallTool("slow", "echo", {"text": "x"}, timeout=60)
        rt.registry.tell(waiting)
        assert wait_until(lambda: bool(child_pids_of_tree()), WAIT)
        stopped = rt.stop_server("slow", timeout=WAIT)
        assert (stopped.state, stopped.connected) == ("stopped", False)
        assert waiting.reply.result(timeout=1.0).error_type == "cancelled"
        assert wait_until(lambda: not child_pids_of_tree(), WAIT), child_pids_of_tree()
        assert rt.status("slow")[0].last_error is None


# ---- requests queued behind a stop ---------------------------------------------------------


@dataclass(frozen=True)
class _Hold:
    release: threading.Event


class _Holding(AnsweringActor):
    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _Hold):
            message.release.wait(WAIT)
        return None


def test_requests_queued_behind_a_stop_are_answered_cancelled_at_once() -> None:
    ref = _Holding.start()
    release = threading.Event()
    ref.tell(_Hold(release))
    ref.stop(block=False)
    call_behind = CallTool(NS, "list_repos", {})
    status_behind = GetStatus()
    ref.tell(call_behind)
    ref.tell(status_behind)
    asked = ref.ask(GetStatus(), block=False)
    release.set()
    result = call_behind.reply.result(timeout=2.0)
    assert result.error_type == "cancelled", result
    assert isinstance(status_behind.reply.exception(timeout=2.0), Exception)
    # Pykka's own ask envelope is still failed by Pykka.
    with pytest.raises(pykka.ActorDeadError):
        asked.get(timeout=2.0)
    assert wait_until(lambda: not ref.is_alive(), WAIT)


def test_the_runtimes_actors_answer_what_is_queued_when_they_stop() -> None:
    for actor in (ServerActor, RegistryActor, BuiltinActor):
        assert issubclass(actor, AnsweringActor), actor


def test_a_server_actor_stopped_with_calls_queued_answers_them() -> None:
    mock = MockTransport(["slow"], {"slow": lambda args: {"ok": True}}, call_delay=5.0)
    with Runtime.start(
        {"mcpServers": {NS: entry()}, "builtin": {"enabled": False}}, transports={NS: mock}
    ) as rt:
        server = route(rt)
        calls = [CallTool(NS, "slow", {}, timeout=20) for _ in range(20)]
        for message in calls:
            server.tell(message)
        server.stop(block=False)
        for message in calls:
            assert message.reply.result(timeout=WAIT).error_type == "cancelled"
