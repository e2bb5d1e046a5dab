"""`PinBook`: judging, hiding, approving, and staying in step with its store, on one thread.

The book's I/O and notices run where the runtime says (`PinBook.attach`); here they run at
once, on the test's thread, so every step is seen as it happens."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from actors import load_config
from actors.mcp.config import ServerConfig
from actors.pins import FilePinStore, PinAction, PinBook, PinChange, PinEvent, pin_key

V1 = {"name": "echo", "description": "Echo.", "annotations": {"readOnlyHint": True}}
V2 = {**V1, "description": "Echo, and read ~/.ssh."}
V3 = {**V1, "annotations": {"readOnlyHint": False}}


def server(name: str = "ns", **entry: Any) -> ServerConfig:
    return load_config({"mcpServers": {name: {"command": "srv", **entry}}}, environ={}).servers[name]


class Told:
    """What a book told: events and list changes, in order."""

    def __init__(self, book: PinBook) -> None:
        self.events: list[PinEvent] = []
        self.lists: list[tuple[str, tuple[str, ...]]] = []
        book.attach(
            lambda job: job(), lambda fn, *args: fn(*args), lambda ns, lists: self.lists.append((ns, lists))
        )
        book.listen(self.events.append)


def test_memory_only_book_pins_for_its_lifetime(caplog: pytest.LogCaptureFixture) -> None:
    book, config = PinBook(), server()
    told = Told(book)
    book.load(config)
    assert book.judge(config, "tools", {"echo": V1}).hidden == frozenset()
    with caplog.at_level(logging.WARNING, logger="actors.pins"):
        judged = book.judge(config, "tools", {"echo": V2})
    assert judged.hidden == {"echo"} and book.hidden(config) == {("tools", "echo")}
    [record] = [r for r in caplog.records if r.name == "actors.pins"]
    assert record.levelno == logging.WARNING
    assert (
        "'ns'" in record.getMessage()
        and "'echo'" in record.getMessage()
        and "description" in record.getMessage()
    )
    assert [(e.action, e.drift.name, e.drift.changed) for e in told.events] == [
        (PinAction.HELD, "echo", ("description",))
    ]
    [drift] = book.held()
    assert (
        drift.namespace == "ns"
        and drift.seen.definition == V2
        and drift.pinned
        and drift.pinned.definition == V1
    )
    approved = book.approve(config, ["echo"])
    assert [d.name for d in approved] == ["echo"] and book.hidden(config) == frozenset()
    assert told.events[-1].action is PinAction.APPROVED
    # Held, then approved: each time the runtime hears its list of tools changed.
    assert told.lists == [("ns", ("tools",)), ("ns", ("tools",))]
    assert book.judge(config, "tools", {"echo": V2}).hidden == frozenset()
    assert len(told.lists) == 2  # listed again as approved: nothing changed


def test_the_mode_is_read_from_the_config_each_time() -> None:
    book, blocking = PinBook(), server()
    book.judge(blocking, "tools", {"echo": V1})
    book.judge(blocking, "tools", {"echo": V3})
    assert book.hidden(blocking) == {("tools", "echo")}
    warning = server(pin="warn")
    assert book.hidden(warning) == frozenset()  # the same server, now in warn mode
    assert book.judge(warning, "tools", {"echo": V3}).hidden == frozenset()
    assert book.held() == []
    assert book.pins(warning).pinned[("tools", "echo")].definition == V3 and not book.pins(warning).held
    off = server(pin="off")
    assert not book.judge(off, "tools", {"echo": V2}).change


def test_a_file_store_keeps_what_the_book_pinned(tmp_path: Path) -> None:
    store, config = FilePinStore(tmp_path), server()
    book = PinBook(store)
    Told(book)
    book.load(config)
    book.judge(config, "tools", {"echo": V1})
    book.judge(config, "prompts", {"greet": {"name": "greet"}})
    kept = store.load(pin_key(config))
    assert kept is not None and set(kept.pinned) == {("tools", "echo"), ("prompts", "greet")}
    # A second runtime (another book) holds the changed tool at once.
    later = PinBook(store)
    Told(later)
    later.load(config)
    assert later.judge(config, "tools", {"echo": V2}).hidden == {"echo"}
    assert set((store.load(pin_key(config)) or kept).held) == {("tools", "echo")}


def test_an_approval_made_elsewhere_is_seen_on_refresh(tmp_path: Path) -> None:
    store, config = FilePinStore(tmp_path), server()
    book = PinBook(store)
    told = Told(book)
    book.load(config)
    book.judge(config, "tools", {"echo": V1})
    book.judge(config, "tools", {"echo": V2})
    assert book.hidden(config) == {("tools", "echo")}
    told.lists.clear()
    book.refresh()  # nothing changed on disk: nothing read, nothing told
    assert told.lists == []
    FilePinStore(tmp_path).apply(pin_key(config), "ns", PinChange(approve=frozenset({"echo"}), at=9.0))
    book.refresh()
    assert book.hidden(config) == frozenset()
    assert told.lists == [("ns", ("tools",))]
    assert told.events[-1].action is PinAction.APPROVED and told.events[-1].drift.name == "echo"


def test_a_read_does_not_undo_a_change_made_meanwhile(tmp_path: Path) -> None:
    store, config = FilePinStore(tmp_path), server()
    book = PinBook(store)
    queued: list[Any] = []
    book.attach(queued.append, lambda fn, *args: fn(*args))  # writes wait, as on a busy host thread
    book.load(config)
    book.judge(config, "tools", {"echo": V1})
    book.judge(config, "tools", {"echo": V2})
    assert book.hidden(config) == {("tools", "echo")}
    book.refresh()  # a write is pending: the store's older entry is not read over it
    FilePinStore(tmp_path).apply(
        pin_key(config),
        "ns",
        PinChange(pin={("tools", "other"): next(iter(book.pins(config).pinned.values()))}),
    )
    book.refresh()
    assert book.hidden(config) == {("tools", "echo")}
    for job in queued:
        job()
    # Written, and read back merged with the other writer's change.
    assert book.hidden(config) == {("tools", "echo")}
    assert ("tools", "other") in book.pins(config).pinned


def test_servers_registered_twice_share_their_pins() -> None:
    book = PinBook()
    first, second = server("a"), server("b")
    book.load(first)
    book.load(second)
    book.judge(first, "tools", {"echo": V1})
    assert book.judge(second, "tools", {"echo": V2}).hidden == {"echo"}
    assert {d.namespace for d in book.held()} == {"a", "b"}
    assert [d.namespace for d in book.held("b")] == ["b"]


def test_an_approval_bound_to_a_digest_approves_only_that_definition() -> None:
    """``name@digest`` (the digest `held` showed) approves only while that is what is held: a
    definition that changed again meanwhile stays held; a too-short digest binds nothing."""
    book, config = PinBook(), server()
    book.load(config)
    book.judge(config, "tools", {"echo": V1})
    book.judge(config, "tools", {"echo": V2})
    [shown] = book.held()
    book.judge(config, "tools", {"echo": V3})  # changed again after the operator looked
    [now] = book.held()
    assert now.seen.digest != shown.seen.digest
    assert book.approve(config, [f"echo@{shown.seen.digest}"]) == []
    assert book.hidden(config) == {("tools", "echo")}
    assert book.approve(config, ["echo@sha256:ab"]) == []  # not a digest: a name nothing has
    [approved] = book.approve(config, [f"echo@{now.seen.short}"])
    assert approved.seen.digest == now.seen.digest and book.hidden(config) == frozenset()
    assert book.pins(config).pinned[("tools", "echo")].definition == V3
