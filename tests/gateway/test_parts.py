"""The gateway's plain parts, without threads, servers or clients: the not-offered decision,
the sessions' book, the routes' generations, the loop hand-off, list-change broadcasts, log
forwarding, and the gateway's and cluster's sections of the configuration."""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from actors.config import ConfigError, load_config
from actors.gateway.broadcasts import Broadcasts, kind_of
from actors.gateway.conversion import is_not_offered, protocol_error, template_pattern
from actors.gateway.forwarding import Forwarding
from actors.gateway.handoff import LoopHandoff
from actors.gateway.routing import plain_name
from actors.gateway.sessions import Sessions
from actors.tools import ErrorType, ToolResult
from actors.tools.check import not_offered

STDIO = {"command": "python"}


# ---- is_not_offered: the one decision on "the tool is not offered" ------------------------------


def test_a_refusal_for_a_tool_not_offered_is_a_protocol_error() -> None:
    refused = not_offered("tool", "lookpu", ["lookup"], "a").result()
    assert is_not_offered(refused)


def test_the_decision_is_on_the_classified_value_never_the_text() -> None:
    # The runtime's words without its classification: a tool error, not a protocol error.
    assert not is_not_offered(ToolResult.fail(ErrorType.NOT_FOUND, "tool 'x' is not offered by server 'a'"))
    assert not is_not_offered(ToolResult.fail(ErrorType.NOT_FOUND, "no server for namespace 'a'"))
    assert not is_not_offered(ToolResult.fail(ErrorType.SERVER_ERROR, "x is not offered by y"))
    assert not is_not_offered(ToolResult.ok({"content": []}))


def test_protocol_errors_blame_the_caller_for_unknown_names_and_bad_arguments() -> None:
    assert protocol_error(ToolResult.fail(ErrorType.NOT_FOUND, "x")).error.code == types.INVALID_PARAMS
    assert protocol_error(ToolResult.fail(ErrorType.VALIDATION, "x")).error.code == types.INVALID_PARAMS
    assert protocol_error(ToolResult.fail(ErrorType.TIMEOUT, "x")).error.code == types.INTERNAL_ERROR


def test_template_patterns_match_one_segment_or_more() -> None:
    assert template_pattern("file:///{name}").fullmatch("file:///a")
    assert not template_pattern("file:///{name}").fullmatch("file:///a/b")
    assert template_pattern("file:///{+path}").fullmatch("file:///a/b")


# ---- Sessions -----------------------------------------------------------------------------------


@dataclass
class _Ctx:
    session: Any = field(default_factory=object)
    request_id: Any = 1


def test_sessions_count_requests_in_flight_and_name_the_oldest_first() -> None:
    sessions = Sessions()
    first, second = _Ctx(request_id=1), _Ctx(request_id=2)
    one = sessions.busy("a", first)
    two = sessions.busy("a", second)
    sessions.busy("b", first)
    assert sessions.in_flight == 3
    assert [r.request_id for r in sessions.waiting_on("a")] == [1, 2]
    sessions.idle("a", one)
    sessions.idle("a", one)  # twice is once
    assert sessions.in_flight == 2
    assert sessions.request("a", two) is not None and sessions.request("a", one) is None
    sessions.idle("a", two)
    assert sessions.waiting_on("a") == []


def test_sessions_keep_each_client_s_connection_once() -> None:
    sessions = Sessions()

    class Session:
        def __init__(self, connection: object) -> None:
            self._connection = connection

    connection = Session(None)
    sessions.seen(_Ctx(session=Session(connection)))
    sessions.seen(_Ctx(session=Session(connection)))
    assert sessions.connections() == [connection]


# ---- LoopHandoff --------------------------------------------------------------------------------


def test_nothing_is_handed_over_before_the_gateway_serves() -> None:
    handoff = LoopHandoff()
    ran: list[int] = []
    assert handoff.call(ran.append, 1) is False

    async def never() -> None:
        ran.append(2)

    coroutine = never()
    assert handoff.send_soon(coroutine) is None
    assert coroutine.cr_frame is None  # closed, not left to warn
    with pytest.raises(RuntimeError, match="not serving"):
        handoff.run(never(), 1.0)
    assert ran == []


def test_handed_over_work_runs_on_the_loop_in_order() -> None:
    ran: list[str] = []

    async def scenario() -> None:
        handoff = LoopHandoff()
        handoff.on_loop()
        loop = asyncio.get_running_loop()

        async def sent() -> str:
            ran.append("coroutine")
            return "done"

        assert handoff.call(ran.append, "call")
        future = handoff.send_soon(sent())
        assert isinstance(future, concurrent.futures.Future)
        assert await asyncio.wrap_future(future, loop=loop) == "done"

    asyncio.run(scenario())
    assert ran == ["call", "coroutine"]


# ---- Broadcasts and forwarded logs --------------------------------------------------------------


class _Connection:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send_tool_list_changed(self) -> None:
        self.sent.append("tools")

    async def send_resource_list_changed(self) -> None:
        self.sent.append("resources")

    async def send_prompt_list_changed(self) -> None:
        self.sent.append("prompts")

    async def send_log_message(self, level: str, data: Any, **keys: Any) -> None:
        self.sent.append((level, data, keys["related_request_id"]))

    async def send_progress_notification(self, token: Any, done: float, *args: Any, **keys: Any) -> None:
        self.sent.append(("progress", token, done, keys["related_request_id"]))


class _Bus:
    def __init__(self) -> None:
        self.published: list[Any] = []

    async def publish(self, event: Any) -> None:
        self.published.append(event)


def test_a_list_change_reaches_every_session_and_the_bus() -> None:
    connection, bus = _Connection(), _Bus()

    async def scenario() -> None:
        sessions, handoff = Sessions(), LoopHandoff()
        handoff.on_loop()
        sessions.seen(_Ctx(session=connection))
        Broadcasts(sessions, handoff, bus).lists_changed("a", "tools")  # type: ignore[arg-type]
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(scenario())
    assert connection.sent == ["tools"]
    assert bus.published == [ToolsListChanged()]
    assert kind_of(ToolsListChanged()) == "tools"
    assert kind_of(ResourceUpdated("x")) is None


def test_a_backend_log_goes_to_the_clients_it_is_serving_only() -> None:
    served, other = _Connection(), _Connection()

    async def scenario() -> None:
        sessions, handoff = Sessions(), LoopHandoff()
        handoff.on_loop()
        ticket = sessions.busy("a", _Ctx(session=served, request_id=7))
        sessions.busy("b", _Ctx(session=other, request_id=8))
        forwarding = Forwarding(sessions, handoff)
        forwarding.log("a", "info", None, "hello")
        forwarding.log("a", "chatty", None, "not a level")
        await asyncio.sleep(0)
        request = sessions.request("a", ticket)
        assert request is not None and len(request.sent) == 1
        await asyncio.wait(request.sent)

    asyncio.run(scenario())
    assert served.sent == [("info", "hello", 7)]
    assert other.sent == []


def test_a_backends_progress_is_noted_on_its_request_so_the_answer_waits_for_it() -> None:
    served = _Connection()

    async def scenario() -> None:
        sessions, handoff = Sessions(), LoopHandoff()
        handoff.on_loop()
        ticket = sessions.busy("a", _Ctx(session=served, request_id=7))
        report = Forwarding(sessions, handoff).progress_sender(_Ctx(session=served, request_id=7), "t")
        # Reported on the host thread: the sends are noted on the request once handed over.
        await asyncio.to_thread(lambda: [report(step, 2.0, None) for step in (1.0, 2.0)])
        await asyncio.sleep(0)
        request = sessions.request("a", ticket)
        assert request is not None and len(request.sent) == 2
        await asyncio.wait(request.sent)

    asyncio.run(scenario())
    assert served.sent == [("progress", "t", 1.0, "7"), ("progress", "t", 2.0, "7")]


# ---- the gateway's and the cluster's sections of the configuration ------------------------------


def test_prefix_and_affinity_are_their_layers_sections() -> None:
    config = load_config(
        {"mcpServers": {"a": {**STDIO, "prefix": False, "affinity": "single"}, "b": STDIO}}, environ={}
    )
    assert config.gateway.unprefixed() == {"a"}
    assert (config.gateway.prefixed("a"), config.gateway.prefixed("b")) == (False, True)
    assert (config.cluster.single("a"), config.cluster.single("b")) == (True, False)
    assert plain_name(config, "b__tool") == "b/tool"
    assert plain_name(config, "a__tool") is None  # unprefixed: learnt from the list
    assert plain_name(config, "c__tool") is None


def test_the_sections_take_their_keys_from_defaults_too() -> None:
    config = load_config({"defaults": {"prefix": False}, "mcpServers": {"a": STDIO}}, environ={})
    assert config.gateway.unprefixed() == {"a"}


def test_a_bad_section_key_names_the_server_and_the_key() -> None:
    with pytest.raises(ConfigError) as error:
        load_config(
            {"mcpServers": {"a": {**STDIO, "prefix": "no"}, "b": {**STDIO, "affinity": "x"}}}, environ={}
        )
    keys = {(p.server, p.key) for p in error.value.problems}
    assert keys == {("a", "prefix"), ("b", "affinity")}


def test_single_affinity_still_needs_a_lazy_start() -> None:
    with pytest.raises(ConfigError) as error:
        load_config({"mcpServers": {"m": {**STDIO, "affinity": "single", "lazyStart": False}}}, environ={})
    (problem,) = error.value.problems
    assert (problem.server, problem.key) == ("m", "affinity")
    assert "lazyStart" in problem.message


def test_a_send_that_fails_is_not_reported_as_a_lost_task_exception() -> None:
    lost: list[Any] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: lost.append(context))
        handoff = LoopHandoff()

        async def fails() -> None:
            raise ConnectionError("the client went away")

        task = handoff.start(fails())
        await asyncio.wait([task])
        del task

    asyncio.run(scenario())
    assert lost == []
