"""`ListenStreams` with a client double whose listen streams the test drives: the order of
opening and closing when the subscriptions change, what is reported, drops and refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import cast

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import (
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from actors.mcp import listen
from actors.mcp.listen import ListenKinds, ListenStreams

WAIT = 10.0


class FakeStream:
    """One listen stream: the test pushes events, drops it or ends it."""

    def __init__(self, uris: tuple[str, ...], honored: types.SubscriptionFilter) -> None:
        self.uris = uris
        self.honored = honored
        self.closed = False
        self._send, self._receive = anyio.create_memory_object_stream[ServerEvent | str](100)

    def push(self, event: ServerEvent) -> None:
        self._send.send_nowait(event)

    def drop(self) -> None:
        self._send.send_nowait("lost")

    def __aiter__(self) -> FakeStream:
        return self

    async def __anext__(self) -> ServerEvent:
        item = await self._receive.receive()
        if item == "lost":
            raise SubscriptionLost("dropped by the test")
        assert not isinstance(item, str)
        return item


class FakeClient:
    """Records ``("open", uris)`` and ``("close", uris)`` in order; honors what it is asked for,
    except the URIs in ``ignored``; raises ``refusal`` instead of opening when set."""

    def __init__(self) -> None:
        self.log: list[tuple[str, tuple[str, ...]]] = []
        self.streams: list[FakeStream] = []
        self.refusal: Exception | None = None
        self.ignored: set[str] = set()
        self.opened = anyio.Event()

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
    ) -> AsyncIterator[FakeStream]:
        uris = tuple(resource_subscriptions)
        self.log.append(("open", uris))
        await anyio.lowlevel.checkpoint()
        if self.refusal is not None:
            raise self.refusal
        honored = types.SubscriptionFilter(
            tools_list_changed=tools_list_changed or None,
            resources_list_changed=resources_list_changed or None,
            prompts_list_changed=prompts_list_changed or None,
            resource_subscriptions=[u for u in uris if u not in self.ignored] or None,
        )
        stream = FakeStream(uris, honored)
        self.streams.append(stream)
        self.opened.set()
        self.opened = anyio.Event()
        try:
            yield stream
        finally:
            stream.closed = True
            self.log.append(("close", uris))


class Harness:
    def __init__(self) -> None:
        self.client = FakeClient()
        self.reported: list[ServerEvent] = []
        self.suspected = 0
        self.streams = ListenStreams(
            cast(Client, self.client), "fake", ListenKinds(resources=True), self._report, self._suspect
        )

    def _report(self, event: ServerEvent) -> None:
        self.reported.append(event)

    def _suspect(self) -> None:
        self.suspected += 1

    async def until(self, ready: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not ready():
                await anyio.sleep(0.005)


def scenario(body: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        harness = Harness()
        async with anyio.create_task_group() as tasks:
            with anyio.fail_after(WAIT):
                await tasks.start(harness.streams.run)
                await body(harness)
            tasks.cancel_scope.cancel()
        assert all(stream.closed for stream in harness.client.streams), "a stream left open"

    anyio.run(main)


def test_a_new_subscription_opens_a_stream_before_closing_the_old() -> None:
    async def body(h: Harness) -> None:
        assert h.client.log == [("open", ())]
        await h.streams.follow("file:///a")
        await h.streams.follow("file:///b")
        assert h.client.log == [
            ("open", ()),
            ("open", ("file:///a",)),
            ("close", ()),
            ("open", ("file:///a", "file:///b")),
            ("close", ("file:///a",)),
        ]
        current = h.client.streams[-1]
        current.push(ResourceUpdated(uri="file:///b"))
        current.push(ToolsListChanged())
        await h.until(lambda: len(h.reported) == 2)
        assert h.reported == [ResourceUpdated(uri="file:///b"), ToolsListChanged()]

        await h.streams.unfollow("file:///a")
        assert h.client.log[-2:] == [("open", ("file:///b",)), ("close", ("file:///a", "file:///b"))]
        await h.streams.unfollow("file:///not-followed")  # nothing to change
        assert len(h.client.log) == 7

    scenario(body)


def test_events_of_the_old_stream_before_the_switch_are_reported() -> None:
    async def body(h: Harness) -> None:
        first = h.client.streams[0]
        first.push(ResourcesListChanged())
        await h.streams.follow("file:///a")
        assert h.reported == [ResourcesListChanged()]
        assert first.closed

    scenario(body)


def test_a_dropped_stream_is_opened_again_and_what_it_followed_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listen, "RETRY_DELAY", 0.01)

    async def body(h: Harness) -> None:
        await h.streams.follow("file:///a")
        h.client.streams[-1].drop()
        await h.until(lambda: len(h.reported) == 3)
        assert set(h.reported) == {
            ToolsListChanged(),
            ResourcesListChanged(),
            ResourceUpdated(uri="file:///a"),
        }
        assert h.suspected == 1
        assert h.client.log[-2:] == [("close", ("file:///a",)), ("open", ("file:///a",))]
        assert h.streams.following

    scenario(body)


def test_a_stream_dropped_too_often_is_given_up_until_the_subscriptions_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listen, "RETRY_DELAY", 0.001)

    async def body(h: Harness) -> None:
        for _ in range(listen.RETRIES + 1):
            opened = h.client.opened
            h.client.streams[-1].drop()
            if len(h.client.streams) <= listen.RETRIES:
                await opened.wait()
        await h.until(lambda: not h.streams.following)
        assert len(h.client.streams) == listen.RETRIES + 1
        await h.streams.follow("file:///a")  # asks again
        assert h.streams.following
        assert h.client.log[-1] == ("open", ("file:///a",))

    scenario(body)


def test_a_refused_subscription_raises_and_keeps_the_stream() -> None:
    async def body(h: Harness) -> None:
        h.client.refusal = MCPError(types.INVALID_PARAMS, "no such resource")
        with pytest.raises(MCPError, match="no such resource"):
            await h.streams.follow("file:///a")
        assert h.client.log == [("open", ()), ("open", ("file:///a",))]
        assert h.streams.following and not h.client.streams[0].closed

        h.client.refusal = None
        h.client.ignored.add("file:///b")
        with pytest.raises(MCPError, match="did not accept a subscription to file:///b"):
            await h.streams.follow("file:///b")
        await h.streams.follow("file:///a")
        assert h.client.log[-2:] == [("open", ("file:///a",)), ("close", ("file:///b",))]

    scenario(body)


def test_follow_after_the_session_ended_does_not_wait() -> None:
    async def main() -> None:
        harness = Harness()
        async with anyio.create_task_group() as tasks:
            await tasks.start(harness.streams.run)
            tasks.cancel_scope.cancel()
        with anyio.fail_after(WAIT), pytest.raises(MCPError):
            await harness.streams.follow("file:///a")

    anyio.run(main)
