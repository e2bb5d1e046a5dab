"""`CopyBook`: the copies of servers' entries the gateway registers in the runtime for callers.

Two kinds of copy share it: a per-user server's instance for each caller
(`actors.gateway.access.per_user`) and a dual-era server's handshake-era session for each
handshake-era caller (`actors.gateway.era_copies`). The book keeps each copy's life the same
way for both:

- `register`: the copy is registered (on a worker thread: the runtime's answer comes back to the
  loop) under a namespace of its own, and becomes its caller's current copy of that server;
- `entered` / `done` count the requests it serves; a copy's first requests wait for its
  registration, and fail with a `ToolError` if it could not be registered;
- `retire`: no new request goes to it; it is unregistered once its requests are answered, then
  dropped, and ``forget(namespace)`` tells the gateway's routes;
- `adopt`: after a reload, the copies of servers removed or changed are retired;
- `CopyUpkeep` bounds and sweeps them by the ``access.perUserServers`` keys.

Owned by the gateway's loop: every method but `adopt` runs there.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import anyio.to_thread

from actors.config import RuntimeConfig
from actors.gateway.access.upkeep import CopyUpkeep
from actors.gateway.handoff import LoopHandoff
from actors.mcp.config import ServerConfig
from actors.runtime import Runtime
from actors.tools import ErrorType, ToolError

__all__ = ["Copy", "CopyBook"]

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Copy:
    """One copy of a server's entry, for one caller. Touched on the loop only."""

    namespace: str
    server: str
    """The name of the server's entry it copies."""
    caller: str
    """The key of the caller it serves (`Principal.key`)."""
    source: ServerConfig
    """The server's entry it was made from."""
    config: ServerConfig = field(repr=False)
    """The entry registered (a per-user one holds the caller's secrets: never logged)."""
    registered: asyncio.Future[None] = field(repr=False)
    """Done once registered; a `ToolError` if it could not be."""
    in_flight: int = 0
    last_used: float = 0.0
    retiring: bool = False


class CopyBook:
    """The copies of one kind (``kind`` names it in the log), by namespace and by (server,
    caller). ``config`` is the configuration served now (read on the loop)."""

    def __init__(
        self,
        kind: str,
        runtime: Runtime,
        config: Callable[[], RuntimeConfig],
        handoff: LoopHandoff,
        forget: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kind = kind
        self._runtime = runtime
        self._config = config
        self._handoff = handoff
        self._forget = forget
        self._clock = clock
        self._current: dict[tuple[str, str], Copy] = {}
        """(server, caller) → the copy that takes that caller's requests now."""
        self.copies: dict[str, Copy] = {}
        """namespace → every copy registered or on its way in or out."""
        self._names = itertools.count(1)
        self._upkeep = CopyUpkeep(
            lambda: self._config().access.per_user_servers, clock, self.copies.values, self.retire
        )

    def current(self, server: str, caller: str) -> Copy | None:
        """The copy of ``server`` that serves ``caller`` now, if there is one."""
        return self._current.get((server, caller))

    def live(self) -> Iterable[Copy]:
        """The copies not on their way out."""
        return (copy for copy in self.copies.values() if not copy.retiring)

    def register(
        self, source: ServerConfig, caller: str, namespace: str, entry: Callable[[str], ServerConfig]
    ) -> Copy:
        """A new copy of ``source`` for ``caller``, registered as ``namespace`` (made unique)
        with the entry ``entry(namespace)``; from now on the caller's current copy."""
        if namespace in self.copies:  # the caller's former copy is still on its way out
            namespace = f"{namespace}~{next(self._names)}"
        loop = asyncio.get_running_loop()
        copy = Copy(
            namespace,
            source.name,
            caller,
            source,
            entry(namespace),
            loop.create_future(),
            last_used=self._clock(),
        )
        self._current[source.name, caller] = copy
        self.copies[namespace] = copy
        self._handoff.start(self._registering(copy))
        self._upkeep.added(loop)
        return copy

    async def entered(self, copy: Copy) -> None:
        """A request for ``copy``: counted until `done`; returns once the copy is registered,
        raises its `ToolError` if it could not be (the request is then not counted)."""
        copy.in_flight += 1
        try:
            await asyncio.shield(copy.registered)
        except BaseException:
            self.done(copy)
            raise
        copy.last_used = self._clock()

    def done(self, copy: Copy) -> None:
        """A request `entered` for ``copy`` was answered."""
        copy.in_flight -= 1
        copy.last_used = self._clock()
        if copy.retiring and copy.in_flight == 0:
            self._unregister(copy)

    async def _registering(self, copy: Copy) -> None:
        try:
            await anyio.to_thread.run_sync(self._runtime.register_server, copy.config)
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, ToolError)
                else ToolError(copy.namespace, ErrorType.EXECUTION, str(exc))
            )
            logger.warning("%s: %s not registered: %s", self._kind, copy.namespace, error)
            copy.registered.set_exception(error)
            copy.registered.exception()  # retrieved: the requests waiting are told by `entered`
            self._drop(copy)
            return
        logger.info("%s: %s serves %s for %s", self._kind, copy.namespace, copy.server, copy.caller)
        copy.registered.set_result(None)
        if copy.retiring and copy.in_flight == 0:
            self._unregister(copy)

    # ---- leaving -------------------------------------------------------------------------------

    def retire(self, copy: Copy) -> None:
        """No new request goes to ``copy``; it is unregistered once its requests are answered."""
        if copy.retiring:
            return
        copy.retiring = True
        if self._current.get((copy.server, copy.caller)) is copy:
            del self._current[copy.server, copy.caller]
        if copy.in_flight == 0 and copy.registered.done():
            self._unregister(copy)

    def _unregister(self, copy: Copy) -> None:
        if not copy.registered.done() or copy.registered.exception() is not None:
            return  # never registered (or not yet: `_registering` unregisters it when it is)
        self._handoff.start(self._unregistering(copy))

    async def _unregistering(self, copy: Copy) -> None:
        try:
            await anyio.to_thread.run_sync(self._runtime.unregister_server, copy.namespace)
        except Exception as exc:
            logger.info("%s: %s not unregistered: %s", self._kind, copy.namespace, exc)
        self._drop(copy)
        logger.info("%s: %s unregistered", self._kind, copy.namespace)

    def _drop(self, copy: Copy) -> None:
        if self.copies.get(copy.namespace) is copy:
            del self.copies[copy.namespace]
        if self._current.get((copy.server, copy.caller)) is copy:
            del self._current[copy.server, copy.caller]
        self._forget(copy.namespace)

    def adopt(self) -> None:
        """The config was reloaded (any thread): copies of servers removed or changed go."""
        self._handoff.call(self._adopted)

    def _adopted(self) -> None:
        servers = self._config().servers
        for copy in list(self.copies.values()):
            if servers.get(copy.server) != copy.source:
                self.retire(copy)
