"""Delivery between threads: completing reply slots exactly once, and telling actors that may be gone."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pykka

__all__ = ["failure", "gather", "gather_within", "pipe", "settle", "settle_exception", "tell"]

_T = TypeVar("_T")

logger = logging.getLogger(__name__)


def settle(slot: concurrent.futures.Future[_T], value: _T) -> bool:
    """Complete ``slot`` with ``value`` unless it is already done (or cancelled); say if it was."""
    if slot.done():
        return False
    try:
        slot.set_result(value)
    except concurrent.futures.InvalidStateError:
        return False
    return True


def settle_exception(slot: concurrent.futures.Future[Any], error: BaseException) -> bool:
    """Fail ``slot`` with ``error`` unless it is already done; say if it was."""
    if slot.done():
        return False
    try:
        slot.set_exception(error)
    except concurrent.futures.InvalidStateError:
        return False
    return True


def gather(
    futures: Sequence[concurrent.futures.Future[Any]],
    then: Callable[[list[concurrent.futures.Future[Any]]], None],
) -> None:
    """Call ``then(futures)`` once all are done, on the thread that completes the last one.

    Never blocks: actors use it to answer a request that needs several other answers.
    """
    if not futures:
        then([])
        return
    remaining = len(futures)
    lock = threading.Lock()

    def one_done(_: concurrent.futures.Future[Any]) -> None:
        nonlocal remaining
        with lock:
            remaining -= 1
            last = remaining == 0
        if last:
            then(list(futures))

    for future in futures:
        future.add_done_callback(one_done)


def gather_within(
    futures: Sequence[concurrent.futures.Future[Any]],
    then: Callable[[list[concurrent.futures.Future[Any]]], None],
    bound: Callable[[Callable[[], None]], None],
) -> None:
    """`gather`, bounded: ``then(futures)`` runs once, when all are done or when the bound
    fires, whichever comes first (some may then still be running). ``bound(fire)`` arranges
    for ``fire()`` to be called when the wait is over (say, a timer). Never blocks."""
    lock = threading.Lock()
    called = False

    def once(_: object = None) -> None:
        nonlocal called
        with lock:
            if called:
                return
            called = True
        then(list(futures))

    if futures:
        bound(once)
    gather(futures, once)


def tell(ref: pykka.ActorRef[Any], message: Any) -> None:
    """``ref.tell(message)``, dropping the message if the actor has stopped (say, at shutdown)."""
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        logger.debug("dropped %s: the actor has stopped", type(message).__name__)


def failure(future: concurrent.futures.Future[Any]) -> BaseException | None:
    """Why the done ``future`` failed (a cancellation included), or None if it succeeded."""
    if future.cancelled():
        return concurrent.futures.CancelledError("cancelled")
    return future.exception()


def pipe(
    future: concurrent.futures.Future[_T],
    ref: pykka.ActorRef[Any],
    message: Callable[[concurrent.futures.Future[_T]], Any],
) -> None:
    """Tell ``ref`` what ``message`` makes of ``future`` once it is done (Akka's *pipeTo*).

    ``message`` runs on the thread that completes the future (often the event loop): it must
    only build the message. The actor reads the outcome from the message, on its own thread.
    """

    def done(finished: concurrent.futures.Future[_T]) -> None:
        try:
            built = message(finished)
        except Exception:
            logger.exception("could not turn a finished future into a message for %s", ref)
            return
        tell(ref, built)

    future.add_done_callback(done)
