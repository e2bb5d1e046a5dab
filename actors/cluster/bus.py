"""`RedisSubscriptionBus`: the SDK's `SubscriptionBus` fanned out across replicas.

``publish`` delivers an event to this replica's listeners (``subscriptions/listen`` streams) at
once, then hands it to the link's thread, which publishes it on the Redis channel
``mcp-actors:events`` as JSON with this replica's id. A thread of the bus's own reads that
channel (its own connection, every read bounded) and hands each event from another replica to
the event loop the listeners live on, and to ``on_remote`` (say, the gateway's handshake-era
sessions). Its own echoes are ignored. Redis away: local delivery goes on; the reader retries
with a backoff and says once that it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio.lowlevel
import redis
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from actors.cluster.link import RedisLink

__all__ = ["RedisSubscriptionBus", "event_from_json", "event_to_json"]

logger = logging.getLogger(__name__)

_READ_TIMEOUT = 0.5
_BACKOFF_FIRST = 0.2
_BACKOFF_MAX = 3.0
_JOIN_TIMEOUT = 5.0

_KINDS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}


def event_to_json(event: ServerEvent, origin: str) -> str:
    """The message published for ``event`` by replica ``origin``."""
    if isinstance(event, ResourceUpdated):
        return json.dumps({"origin": origin, "kind": "resource_updated", "uri": event.uri})
    kind = next(name for name, value in _KINDS.items() if value == event)
    return json.dumps({"origin": origin, "kind": kind})


def event_from_json(text: str) -> tuple[str, ServerEvent] | None:
    """(origin, event) of a published message, or None if it is not one."""
    try:
        data = json.loads(text)
        origin, kind = str(data["origin"]), data["kind"]
    except (ValueError, KeyError, TypeError):
        return None
    if kind == "resource_updated" and isinstance(data.get("uri"), str):
        return origin, ResourceUpdated(uri=data["uri"])
    event = _KINDS.get(kind) if isinstance(kind, str) else None
    return (origin, event) if event is not None else None


class RedisSubscriptionBus:
    """Local fan-out plus Redis pub/sub on ``mcp-actors:events``, for replica ``origin``."""

    def __init__(
        self,
        link: RedisLink,
        origin: str,
        *,
        on_remote: Callable[[ServerEvent], None] | None = None,
    ) -> None:
        self.link = link
        self.origin = origin
        self.channel = link.key("events")
        self.on_remote = on_remote
        """Called on the bus's thread with each event from another replica."""
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = threading.Event()
        self._subscribed = threading.Event()
        self._thread = threading.Thread(target=self._read, name="cluster-events", daemon=True)

    # ---- the SubscriptionBus protocol (on the event loop) ----------------------------------

    async def publish(self, event: ServerEvent) -> None:
        """Deliver ``event`` here, then to the other replicas (never waits on Redis)."""
        self._loop = asyncio.get_running_loop()
        self._deliver(event)
        message = event_to_json(event, self.origin)
        self.link.submit(lambda client: client.publish(self.channel, message))
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register ``listener`` (called on the event loop); an idempotent unsubscribe."""
        # Registered off the loop: events reach it once a publish names the loop.
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the listeners live on."""
        self._loop = loop

    def _deliver(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # fan-out boundary: one bad listener must not starve the others
                logger.exception("subscription listener raised; continuing")

    # ---- the reader thread -------------------------------------------------------------------

    def start(self) -> RedisSubscriptionBus:
        self._thread.start()
        return self

    def wait_subscribed(self, timeout: float) -> bool:
        """Whether the reader is subscribed to the channel (within ``timeout``)."""
        return self._subscribed.wait(timeout)

    def close(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(_JOIN_TIMEOUT)

    def _read(self) -> None:
        backoff = _BACKOFF_FIRST
        lost = False
        while not self._stopping.is_set():
            client = redis.Redis.from_url(
                self.link.url,
                socket_timeout=self.link.timeout + _READ_TIMEOUT,
                socket_connect_timeout=self.link.timeout,
                decode_responses=True,
            )
            # Untyped before redis 8.2: the ignore holds on both sides of it.
            pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call,unused-ignore]
            try:
                pubsub.subscribe(self.channel)
                self._subscribed.set()
                if lost:
                    logger.warning("cluster: events from other replicas flow again")
                    lost, backoff = False, _BACKOFF_FIRST
                    # Nothing was replayed: whatever changed meanwhile, clients refetch.
                    for kind in _KINDS.values():
                        self._hand_over(kind)
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=_READ_TIMEOUT)
                    if message is not None and message.get("type") == "message":
                        self._received(message.get("data"))
            except redis.RedisError as exc:
                self._subscribed.clear()
                if not lost:
                    logger.warning("cluster: events from other replicas lost (%s); retrying", exc)
                    lost = True
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
            finally:
                try:
                    pubsub.close()
                    client.close()
                except redis.RedisError:
                    pass

    def _received(self, data: Any) -> None:
        parsed = event_from_json(data) if isinstance(data, str) else None
        if parsed is None:
            logger.debug("cluster: ignoring a message on %s: %r", self.channel, data)
            return
        origin, event = parsed
        if origin != self.origin:
            self._hand_over(event)

    def _hand_over(self, event: ServerEvent) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._deliver, event)
        if self.on_remote is not None:
            try:
                self.on_remote(event)
            except Exception:
                logger.exception("cluster: handing a remote event over failed")
