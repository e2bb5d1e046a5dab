"""`actors.runtime.dispatch.Dispatch`: the routes both facades and the gateway send by.

Plain objects stand in for the registry and the server actors (they record what is told to
them); the real routes are exercised by every facade and gateway test.
"""

from __future__ import annotations

from typing import Any

import pykka

from actors.runtime.dispatch import Dispatch
from actors.runtime.messages import CallTool, GetPrompt
from actors.runtime.registry import Route


class _Told:
    """What is told to it, as an actor ref records nothing else; ``dead``: as a stopped actor."""

    def __init__(self, *, dead: bool = False) -> None:
        self.told: list[Any] = []
        self.dead = dead

    def tell(self, message: Any) -> None:
        if self.dead:
            raise pykka.ActorDeadError("stopped")
        self.told.append(message)


def _routes_asked(registry: _Told) -> list[Route]:
    return [m for m in registry.told if isinstance(m, Route)]


def test_an_unknown_route_goes_through_the_registry_and_is_learnt() -> None:
    registry, server = _Told(), _Told()
    dispatch = Dispatch(registry, {})  # type: ignore[arg-type]
    first = CallTool("a", "t", {})
    dispatch.tell(first)
    assert first in registry.told  # not held back waiting for the route
    (asked,) = _routes_asked(registry)
    asked.reply.set_result(server)  # the registry's answer, on its thread
    later = GetPrompt("a", "p", {})
    dispatch.tell(later)
    assert server.told == [later]  # every kind of request skips the registry now
    assert len(_routes_asked(registry)) == 1


def test_a_route_asked_for_before_its_server_was_forgotten_is_not_learnt() -> None:
    registry, old = _Told(), _Told()
    dispatch = Dispatch(registry, {})  # type: ignore[arg-type]
    dispatch.tell(CallTool("a", "t", {}))
    (asked,) = _routes_asked(registry)
    dispatch.forget_route("a")  # a gateway's copy retired before the registry answered
    asked.reply.set_result(old)
    dispatch.tell(CallTool("a", "t", {}))
    assert old.told == []  # through the registry again, and asked anew
    assert len(_routes_asked(registry)) == 2


def test_a_stopped_actor_sends_through_the_registry_again() -> None:
    registry, stopped = _Told(), _Told()
    dispatch = Dispatch(registry, {})  # type: ignore[arg-type]
    dispatch.tell(CallTool("a", "t", {}))
    _routes_asked(registry)[0].reply.set_result(stopped)
    stopped.dead = True
    again = CallTool("a", "t", {})
    dispatch.tell(again)
    assert again in registry.told
    assert dispatch.route("a") is None


def test_a_registry_that_knows_no_server_teaches_no_route() -> None:
    registry = _Told()
    dispatch = Dispatch(registry, {})  # type: ignore[arg-type]
    dispatch.tell(CallTool("ghost", "t", {}))
    _routes_asked(registry)[0].reply.set_result(None)
    assert dispatch.route("ghost") is None
