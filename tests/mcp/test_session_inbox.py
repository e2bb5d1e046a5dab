"""`SessionInbox`: the order the server wrote, a big parse keeping its place, the pipe paused
while much waits, and the ends (drained, or closed). On a plain asyncio loop, no threads."""

from __future__ import annotations

import asyncio

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from actors.mcp.session_inbox import HIGH_WATER, Item, SessionInbox


def note(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="n", params={"n": n}))


def number(item: Item) -> int:
    assert isinstance(item, SessionMessage)
    return int((item.message.params or {})["n"])


def test_items_come_in_order_and_a_big_parse_keeps_its_place() -> None:
    async def run() -> list[int]:
        resumed: list[bool] = []
        inbox = SessionInbox(lambda: resumed.append(True))
        big: asyncio.Future[Item] = asyncio.get_running_loop().create_future()
        inbox.put(note(1))
        inbox.put(big)  # still being parsed
        inbox.put(note(3))
        assert inbox.full  # a parse in progress: the pipe waits
        got = [number(await inbox.receive())]
        reader = asyncio.ensure_future(inbox.receive())
        await asyncio.sleep(0)
        assert not reader.done()  # 3 waits behind the big one
        big.set_result(note(2))
        got.append(number(await reader))
        got.append(number(await inbox.receive()))
        assert resumed == [True] and not inbox.full  # drained: the pipe may be read again
        return got

    assert asyncio.run(run()) == [1, 2, 3]


def test_a_failed_parse_reaches_the_session_as_an_error_item() -> None:
    async def run() -> Item:
        inbox = SessionInbox(lambda: None)
        big: asyncio.Future[Item] = asyncio.get_running_loop().create_future()
        big.set_exception(RuntimeError("the worker stopped"))
        inbox.put(big)
        return await inbox.receive()

    item = asyncio.run(run())
    assert isinstance(item, RuntimeError) and str(item) == "the worker stopped"


def test_many_waiting_items_pause_the_pipe() -> None:
    inbox = SessionInbox(lambda: None)
    for n in range(HIGH_WATER - 1):
        inbox.put(note(n))
    assert not inbox.full
    inbox.put(note(HIGH_WATER))
    assert inbox.full


def test_the_end_comes_after_what_waits_and_a_waiting_reader_hears_it() -> None:
    async def run() -> list[object]:
        inbox = SessionInbox(lambda: None)
        reader = asyncio.ensure_future(inbox.receive())
        await asyncio.sleep(0)
        inbox.put(note(1))
        inbox.end()
        inbox.put(note(2))  # after the end: dropped
        seen: list[object] = [number(await reader)]
        with pytest.raises(anyio.EndOfStream):
            await inbox.receive()
        seen += [number(item) async for item in inbox]  # iteration stops at the end
        return seen

    assert asyncio.run(run()) == [1]


def test_a_cancelled_reader_loses_nothing() -> None:
    async def run() -> int:
        inbox = SessionInbox(lambda: None)
        big: asyncio.Future[Item] = asyncio.get_running_loop().create_future()
        inbox.put(big)
        reader = asyncio.ensure_future(inbox.receive())
        await asyncio.sleep(0)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert not big.cancelled()  # the parse goes on for the next reader
        big.set_result(note(7))
        return number(await inbox.receive())

    assert asyncio.run(run()) == 7


def test_closing_drops_what_waits_and_wakes_the_reader() -> None:
    async def run() -> bool:
        inbox = SessionInbox(lambda: None)
        reader = asyncio.ensure_future(inbox.receive())
        await asyncio.sleep(0)
        big: asyncio.Future[Item] = asyncio.get_running_loop().create_future()
        inbox.put(big)
        inbox.close()
        with pytest.raises(anyio.ClosedResourceError):
            await reader
        assert big.cancelled() and not inbox.reading
        inbox.put(note(1))  # after the close: dropped
        with pytest.raises(anyio.ClosedResourceError):
            await inbox.receive()
        return True

    assert asyncio.run(run())
