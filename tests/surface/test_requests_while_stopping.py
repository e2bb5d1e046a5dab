"""Requests that reach a server while it is stopping: each is served as it would be a moment
later, and the stop itself is answered.

Told straight to the server actor, back to back, the second message is handled while the
server stops (its stdio child takes far longer to exit than a tell takes to arrive)."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pykka
import pytest

from actors import Runtime
from actors.runtime.messages import CallTool, StartServer, StopServer, SubscribeResource
from actors.runtime.registry import Route
from tests.conftest import wait_until
from tests.servers.surface_server import COUNTER_URI
from tests.surface.conftest import WAIT, ServerEntry, Updates, bump_until, config, text_of

NS = "s"


def running_server(rt: Runtime) -> pykka.ActorRef[Any]:
    """Start the server and return its actor."""
    assert rt.start_server(NS).state == "running"
    route = Route(NS)
    rt.registry.tell(route)
    server: pykka.ActorRef[Any] = route.reply.result(timeout=WAIT)
    return server


def test_a_call_made_while_the_server_stops_starts_it_again(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        server = running_server(rt)
        stop, call = StopServer(NS), CallTool(namespace=NS, tool="bump", arguments={}, timeout=WAIT)
        server.tell(stop)
        server.tell(call)
        assert stop.reply.result(timeout=WAIT).state == "stopped"
        assert text_of(call.reply.result(timeout=WAIT)) == "count 1"
        assert rt.status(NS)[0].state == "running"


def test_a_subscription_made_while_the_server_stops_starts_it_again(surface_stdio: ServerEntry) -> None:
    # As a call does: a subscriber needs the server, so a stop under way (asked for, or an idle
    # stop) must not leave it down with a subscriber that never hears of a change.
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        server = running_server(rt)
        stop, updates = StopServer(NS), Updates()
        subscribe = SubscribeResource(namespace=NS, uri=COUNTER_URI, on_update=updates)
        server.tell(stop)
        server.tell(subscribe)
        assert stop.reply.result(timeout=WAIT).state == "stopped"
        subscription = subscribe.reply.result(timeout=WAIT)
        # Up again by itself: not woken by the bumps below.
        assert wait_until(lambda: rt.status(NS)[0].state == "running", WAIT), rt.status(NS)
        bump_until(rt, updates, 1)
        assert subscription.cancel()


def test_a_stop_is_answered_when_a_start_follows_it_at_once(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        server = running_server(rt)
        stop, start = StopServer(NS), StartServer(NS)
        server.tell(stop)
        server.tell(start)
        assert start.reply.result(timeout=WAIT).state == "running"
        try:
            stopped = stop.reply.result(timeout=WAIT)
        except concurrent.futures.TimeoutError:
            pytest.fail(f"the stop was never answered (within {WAIT:g} s)")
        assert stopped.namespace == NS
