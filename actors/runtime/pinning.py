"""A runtime's pins (`actors.pins`): where it keeps them, and its book wired to its threads.

Where: the store given to `Runtime.start`; else, for a runtime with a schema cache, the state
folder's (``pins/``): lists that outlive the process need pins that do too, or a definition
held in one run would be offered as new in the next; else memory, for the runtime's lifetime
(a server that changes a tool while it runs is still caught, and nothing is written where the
host did not ask for state).

Wired: the book's store I/O runs on the runtime's host threads, never on an actor or the loop;
its events and list changes are told in order on the host's news thread (list changes as
`PinsChanged` to the registry, which leaves what is held out of its answers with
`actors.pins.Shown`); with a store, a timer asks every `REFRESH` seconds for what changed in it
(an approval by ``mcp-actors approve``, or by another replica).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pykka

from actors.pins.book import PinBook
from actors.pins.store import FilePinStore, PinStore
from actors.runtime.host import HostCalls
from actors.runtime.reply import tell
from actors.runtime.schema_cache import SchemaCache
from actors.runtime.timers import TimerService

__all__ = ["REFRESH", "PinsChanged", "pin_book", "wire_pins"]

REFRESH = 1.0
"""Seconds between looks at the store for pins changed elsewhere."""


@dataclass(frozen=True)
class PinsChanged:
    """To the registry: the pins of ``namespace`` changed (an approval, here or elsewhere), so
    its list of ``kind`` (``tools``, ``resources`` or ``prompts``) may show more or less."""

    namespace: str
    kind: str


def pin_book(pins: PinStore | None, cache: SchemaCache | None) -> PinBook:
    """The book of a runtime started with ``pins`` and ``cache`` (see the module)."""
    if pins is None and cache is not None:
        pins = FilePinStore()
    return PinBook(pins)


def wire_pins(book: PinBook, host: HostCalls, timers: TimerService, registry: pykka.ActorRef[Any]) -> None:
    """Run ``book``'s I/O and notices on ``host``'s threads; tell ``registry`` of list changes."""

    def lists_changed(namespace: str, lists: tuple[str, ...]) -> None:
        for kind in lists:
            tell(registry, PinsChanged(namespace, kind))

    def refresh() -> None:  # on the timers' thread: handed over at once
        host.submit(book.refresh)

    book.attach(host.submit, host.notify, lists_changed)
    if book.store is not None:
        timers.schedule(("pins", "refresh"), REFRESH, refresh, repeat=REFRESH)
