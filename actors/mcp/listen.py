"""`ListenStreams`: what a 2026-07-28 session follows through ``subscriptions/listen``.

On 2026-07-28 sessions list changes and resource updates arrive only on a listen stream, and
the SDK fixes a stream's filter when it opens it (`mcp.Client.listen`). So a new resource
subscription, or the end of one, opens a new stream with the new set of URIs, and the old
stream is closed only once the new one is acknowledged: no change goes unreported while they
switch. A change in that moment may be reported twice (both streams carry it); the events are
level triggers (re-list, read again), so twice is harmless where never would not be.

A stream the server drops is opened again (a few times, with a growing pause), and every kind
of change it followed is then reported once, since changes may have been missed meanwhile.
Runs on the event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    Subscription,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

__all__ = ["ListenKinds", "ListenStreams"]

logger = logging.getLogger(__name__)

ACK_TIMEOUT: Final = 5.0
"""How long a server may take to acknowledge a listen request."""
RETRIES: Final = 3
"""How many times in a row a dropped stream is opened again before following stops."""
RETRY_DELAY: Final = 1.0
"""The pause before the first re-open; it grows by this much each time."""

_REFUSALS = (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError)


@dataclass(frozen=True)
class ListenKinds:
    """Which list changes to ask for (the server's capabilities say which lists it has)."""

    tools: bool = True
    resources: bool = False
    prompts: bool = False


@dataclass
class _Stream:
    """One open listen stream and the task that reads it."""

    uris: frozenset[str]
    honored: types.SubscriptionFilter
    exits: AsyncExitStack
    reader: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ended: anyio.Event = field(default_factory=anyio.Event)
    lost: bool = False

    @property
    def honored_uris(self) -> frozenset[str]:
        return frozenset(self.honored.resource_subscriptions or ())

    async def close(self) -> None:
        self.reader.cancel()
        with anyio.CancelScope(shield=True):
            await self.exits.aclose()


class ListenStreams:
    """The listen streams of one session: `run` is their task; `follow` and `unfollow` change
    the resource subscriptions and return once a stream with the new set is acknowledged."""

    def __init__(
        self,
        client: Client,
        label: str,
        kinds: ListenKinds,
        report: Callable[[ServerEvent], None],
        suspect: Callable[[], None],
    ) -> None:
        self._client = client
        self._label = label
        self._kinds = kinds
        self._report = report
        self._suspect = suspect
        self._wanted: set[str] = set()
        self._asked = 0
        """Bumped on each change of the wanted URIs; ``_answered`` catches up with it."""
        self._answered = 0
        self._answers = anyio.Event()
        self._nudge = anyio.Event()
        self._current: _Stream | None = None
        self._error: BaseException | None = None
        """Why the last attempt to open a stream failed (None once one opened)."""
        self._finished = False

    @property
    def following(self) -> bool:
        """Whether a stream is open."""
        return self._current is not None

    async def follow(self, uri: str) -> None:
        """Follow updates of ``uri``; raises why the server would not (``MCPError``, ...)."""
        self._wanted.add(uri)
        await self._settled()
        current = self._current
        if current is not None and uri in current.honored_uris:
            return
        self._wanted.discard(uri)
        if self._error is not None:
            raise self._error
        raise MCPError(types.INVALID_PARAMS, f"the server did not accept a subscription to {uri}")

    async def unfollow(self, uri: str) -> None:
        """Stop following ``uri`` (best effort: if no new stream opens, the old one stays)."""
        if uri in self._wanted:
            self._wanted.discard(uri)
            await self._settled()

    async def _settled(self) -> None:
        """Ask `run` to catch up with the wanted URIs, and wait until it has tried."""
        self._asked += 1
        asked = self._asked
        self._nudge.set()
        while self._answered < asked and not self._finished:
            await self._answers.wait()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep one stream open for the wanted URIs until cancelled; started once the first
        stream is acknowledged or refused."""
        drops = 0
        missed = False
        try:
            async with anyio.create_task_group() as readers:
                while True:
                    self._nudge = anyio.Event()
                    asked = self._asked
                    wanted = frozenset(self._wanted)
                    stale = self._current is None or self._current.uris != wanted
                    if stale and await self._switch(readers, wanted, missed=missed):
                        missed = False
                    self._answer(asked)
                    task_status.started()
                    task_status = anyio.TASK_STATUS_IGNORED
                    stream = self._current
                    if stream is None:
                        # The open just tried failed: dropped before its acknowledgment counts as lost.
                        lost = isinstance(self._error, SubscriptionLost)
                    elif stream.ended.is_set():
                        self._current = None
                        await stream.close()
                        lost = stream.lost
                        missed = missed or lost
                    else:
                        lost = False
                    if lost and drops < RETRIES:
                        drops += 1
                        self._suspect()
                        await anyio.sleep(RETRY_DELAY * drops)
                        continue
                    # Open and well, or refused, ended by the server or lost too often: only a
                    # change of the subscriptions (or of this stream) asks again.
                    await self._nudge.wait()
        finally:
            self._finished = True
            stream, self._current = self._current, None
            if stream is not None:
                await stream.close()
            self._answer(self._asked)

    def _answer(self, asked: int) -> None:
        if asked > self._answered or self._finished:
            self._answered = max(asked, self._answered)
            self._answers.set()
            self._answers = anyio.Event()

    async def _switch(self, readers: anyio.abc.TaskGroup, uris: frozenset[str], *, missed: bool) -> bool:
        """Open a stream for ``uris``, then close the one it replaces; False if it would not open."""
        try:
            new = await self._open(readers, uris)
        except _REFUSALS as exc:
            self._error = exc
            logger.debug("%s: subscriptions/listen failed: %s", self._label, exc)
            return False
        self._error = None
        old, self._current = self._current, new
        if old is not None:
            await old.close()
        if missed:
            self._report_missed(new.honored)
        return True

    async def _open(self, readers: anyio.abc.TaskGroup, uris: frozenset[str]) -> _Stream:
        kinds = self._kinds
        exits = AsyncExitStack()
        with anyio.fail_after(ACK_TIMEOUT):
            subscription = await exits.enter_async_context(
                self._client.listen(
                    tools_list_changed=kinds.tools,
                    resources_list_changed=kinds.resources,
                    prompts_list_changed=kinds.prompts,
                    resource_subscriptions=sorted(uris),
                )
            )
        stream = _Stream(uris, subscription.honored, exits)
        readers.start_soon(self._read, stream, subscription)
        return stream

    async def _read(self, stream: _Stream, subscription: Subscription) -> None:
        try:
            with stream.reader:
                async for event in subscription:
                    self._report(event)
                logger.debug("%s: the server ended a subscriptions/listen stream", self._label)
        except SubscriptionLost as exc:
            stream.lost = True
            logger.debug("%s: a subscriptions/listen stream was lost: %s", self._label, exc)
        finally:
            stream.ended.set()
            self._nudge.set()

    def _report_missed(self, honored: types.SubscriptionFilter) -> None:
        if honored.tools_list_changed:
            self._report(ToolsListChanged())
        if honored.resources_list_changed:
            self._report(ResourcesListChanged())
        if honored.prompts_list_changed:
            self._report(PromptsListChanged())
        for uri in honored.resource_subscriptions or ():
            self._report(ResourceUpdated(uri=uri))
