"""The plain parts behind a stale list's relist: the `Coalescer`'s waiters share the request in
flight, and `gather_within` answers once, when all are done or when its bound fires. No
threads, no servers."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

import pytest

from actors.mcp.config import ServerConfig
from actors.runtime.clock import ManualClock
from actors.runtime.internal_messages import Freshen
from actors.runtime.relisting import Coalescer
from actors.runtime.reply import gather_within
from actors.runtime.session import Session


def slot() -> concurrent.futures.Future[bool]:
    return concurrent.futures.Future()


def test_asks_for_a_fresh_list_share_the_request_in_flight() -> None:
    relist = Coalescer()
    first, second, third = slot(), slot(), slot()
    assert relist.wait(first) is True  # none in flight: it goes now
    assert relist.wait(second) is False  # joins it
    assert relist.changed() is False  # a change meanwhile owes one more, as always
    assert not first.done()
    assert relist.done() is True  # the owed one goes ...
    assert (first.result(0), second.result(0)) == (True, True)  # ... and the waiters are answered
    assert relist.wait(third) is False  # joins the owed one
    assert relist.done(listed=False) is False
    assert third.result(0) is False  # it failed: answered all the same, with what is known


def test_a_new_session_answers_the_waiters_of_a_request_that_will_never_answer() -> None:
    relist = Coalescer()
    waiting = slot()
    relist.wait(waiting)
    relist.reset()
    assert waiting.result(0) is False
    assert relist.wait(slot()) is True


def test_a_bounded_gather_answers_once_when_all_are_done() -> None:
    futures = [concurrent.futures.Future[int](), concurrent.futures.Future[int]()]
    fired: list[Callable[[], None]] = []
    calls: list[int] = []
    gather_within(futures, lambda done: calls.append(len(done)), fired.append)
    futures[0].set_result(1)
    assert calls == []
    futures[1].set_result(2)
    assert calls == [2]
    fired[0]()  # the bound fires late: nothing more
    assert calls == [2]


def test_a_bounded_gather_answers_when_its_bound_fires_first() -> None:
    future = concurrent.futures.Future[int]()
    fired: list[Callable[[], None]] = []
    seen: list[bool] = []
    gather_within([future], lambda done: seen.append(done[0].done()), fired.append)
    fired[0]()
    assert seen == [False]  # answered without it
    future.set_result(1)
    assert seen == [False]


def test_a_bounded_gather_of_nothing_answers_at_once_and_arms_no_bound() -> None:
    fired: list[Callable[[], None]] = []
    calls: list[int] = []
    gather_within([], lambda done: calls.append(len(done)), fired.append)
    assert (calls, fired) == ([0], [])


class _NoRequests:
    """An adapter that must not be asked: a list request here would be the defect."""

    def discover_future(self) -> concurrent.futures.Future[object]:
        raise AssertionError("listed again although a newer list was already told")


def test_a_stale_ask_that_crossed_a_newer_list_on_its_way_is_answered_without_a_request() -> None:
    # The registry found the list stale and asked, while the server's relist (after a
    # list_changed) had already told it the new one: that list is ahead of the answer in the
    # registry's mailbox, so listing a third time would cost the server for nothing.
    session = Session(ServerConfig(name="ns", command="srv"), _NoRequests(), None, ManualClock())  # type: ignore[arg-type]
    session.told["tools"] = 2
    crossed = Freshen("tools", told=1)
    session.freshen(crossed, running=True)
    assert crossed.reply.result(0) is True
    current = Freshen("tools", told=2)
    with pytest.raises(AssertionError, match="listed again"):
        session.freshen(current, running=True)
