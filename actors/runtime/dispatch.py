"""`Dispatch`: how a facade hands a request to the actor that serves it, and how long it waits.

Both facades send a request the same way: work out how long its caller may wait, tell it to
the server actor the registry named for its namespace (remembered, so the next request skips
the registry's hop), or to the registry when no actor is known. `Runtime` then waits on the
reply slot on its caller's thread, `AsyncRuntime` awaits it on the host's loop. The gateway
sends through the same routes (`Dispatch.tell`), without waiting for one it does not know yet.

Owner: none; shared by the host's threads and loops and the registry's thread (a route it
names). Its two maps are only read and written a key at a time (atomic for a dict), and what
they hold is immutable. A route learnt for a server since forgotten is dropped (`forget` starts
a new generation); one that names an actor since stopped sends through the registry again.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from dataclasses import dataclass
from typing import Any

import pykka

from actors.mcp.config import ServerConfig
from actors.runtime.builtin_actor import DEFAULT_TIMEOUT as BUILTIN_TIMEOUT
from actors.runtime.messages import ServerRequest
from actors.runtime.refusals import answer_refusal
from actors.runtime.registry import BUILTIN_NAMESPACE, RegistryActor, Route
from actors.tools import ToolResult
from actors.tools.check import check_timeout, is_seconds

__all__ = ["REQUEST_TIMEOUT", "Deadline", "Dispatch", "call_limit", "start_limit"]

REQUEST_TIMEOUT = 30.0
"""How long a facade waits for what is not a server's call: a route, a status, a stop."""

# Beyond a call's own timeout, how long the facade waits before it stops waiting itself.
_CALL_SLACK = 5.0


@dataclass(frozen=True, slots=True)
class Deadline:
    """How long a request's server may take (``limit``: its timeout and a start) and how long
    its caller waits for the answer (``wait``: a little longer, so the server's own timeout
    answers first)."""

    limit: float
    wait: float


class Dispatch:
    """The routes and server configurations a facade sends by."""

    def __init__(self, registry: pykka.ActorRef[RegistryActor], configs: dict[str, ServerConfig]) -> None:
        self._registry = registry
        self._configs = configs
        # namespace -> the actor that serves it, as the registry said.
        self._routes: dict[str, pykka.ActorRef[Any]] = {}
        self._forgotten = itertools.count()
        self._generation = next(self._forgotten)

    def config(self, namespace: str) -> ServerConfig | None:
        return self._configs.get(namespace)

    def namespaces(self) -> list[str]:
        """The servers configured or registered, by namespace."""
        return list(self._configs)

    def remember(self, config: ServerConfig) -> None:
        """A server was registered."""
        self._configs[config.name] = config

    def forget(self, namespace: str) -> None:
        """A server was unregistered: its configuration and route go (and any route asked for
        before now is not learnt when the registry answers)."""
        self._generation = next(self._forgotten)
        self._configs.pop(namespace, None)
        self._routes.pop(namespace, None)

    def forget_route(self, namespace: str) -> None:
        """The actor serving ``namespace`` was replaced (a gateway's copy retired): only its
        route goes."""
        self._generation = next(self._forgotten)
        self._routes.pop(namespace, None)

    def deadline(self, message: ServerRequest) -> ToolResult | Deadline:
        """How long ``message`` may take, or its refusal (a timeout that is no number of seconds),
        answered here as its actor would, span and all: how long to wait depends on it."""
        if (refusal := check_timeout(message.timeout)) is not None:
            return answer_refusal(message, refusal)
        # Worked out before sending: once the actor is woken, the caller should be waiting
        # (not holding the GIL the actor needs).
        limit = call_limit(self._configs.get(message.namespace), message.namespace, message.timeout)
        return Deadline(limit, min(limit + _CALL_SLACK, threading.TIMEOUT_MAX))

    def route(self, namespace: str) -> pykka.ActorRef[Any] | None:
        """The actor known to serve ``namespace``; None: ask the registry (`ask_route`)."""
        return self._routes.get(namespace)

    def ask_route(self, namespace: str) -> Route:
        """Ask the registry which actor serves ``namespace``; its ``reply`` answers (None: none)."""
        asked = Route(namespace)
        self._registry.tell(asked)
        return asked

    def tell(self, call: ServerRequest) -> None:
        """Send ``call`` without waiting (from any thread or loop): to its actor if the route is
        known; else through the registry, while the route is learnt for the calls after it."""
        route = self._routes.get(call.namespace)
        if route is None:
            self._learn(call.namespace)
        self.send(call, route)

    def _learn(self, namespace: str) -> None:
        asked, generation = Route(namespace), self._generation

        def learnt(answer: concurrent.futures.Future[Any]) -> None:
            # On the registry's thread. Not a route to a server forgotten since it was asked.
            if answer.cancelled() or answer.exception() is not None or answer.result() is None:
                return
            if generation == self._generation:
                self._routes.setdefault(namespace, answer.result())

        asked.reply.add_done_callback(learnt)
        self._registry.tell(asked)

    def send(self, call: ServerRequest, route: pykka.ActorRef[Any] | None) -> None:
        """Tell ``call`` to ``route`` (the actor the registry named), remembered for the next
        calls; without one, or when it died, to the registry, which knows what to answer."""
        if route is None:
            self._registry.tell(call)  # unknown (for now): the registry answers the call itself
            return
        self._routes[call.namespace] = route
        try:
            route.tell(call)
        except pykka.ActorDeadError:
            # Unregistered meanwhile: forget the route; the registry knows what to answer.
            self._routes.pop(call.namespace, None)
            self._registry.tell(call)


def call_limit(config: ServerConfig | None, namespace: str, timeout: object) -> float:
    """How long the caller may wait for a call's answer: its own timeout and a start."""
    if is_seconds(timeout):
        limit = float(timeout)
    elif config is not None:
        limit = config.call_timeout
    elif namespace == BUILTIN_NAMESPACE:
        limit = BUILTIN_TIMEOUT
    else:
        limit = REQUEST_TIMEOUT
    return limit + (config.connect_timeout if config is not None else 0.0)


def start_limit(dispatch: Dispatch, namespace: str) -> float:
    """How long a caller waits for a server it asked to start: its connect timeout, and more."""
    config = dispatch.config(namespace)
    return config.connect_timeout + _CALL_SLACK if config is not None else REQUEST_TIMEOUT
