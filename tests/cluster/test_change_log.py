"""`ChangeLog` on a real Redis, with a clock the test drives: a refresh reads only what was
written since the last one, and asks for a full resync when one is due or Redis lost its data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.cluster.change_log import ChangeLog
from actors.cluster.link import RedisLink
from tests.cluster.conftest import PREFIX, WAIT, RedisServer, redis_client


class Reader:
    """What a refresh asked for, and the clock it runs by."""

    def __init__(self, link: RedisLink, full_resync: float = 60.0) -> None:
        self.now = 0.0
        self.link = link
        self.log = ChangeLog(link, "things", full_resync, clock=lambda: self.now)
        self.read: list[list[str]] = []
        self.resyncs: list[int] = []

    def refresh(self) -> None:
        def resync(version: int) -> None:
            self.resyncs.append(version)
            self.log.resynced(version)

        self.link.call(lambda client: self.log.refresh(client, self.read.append, resync), WAIT)

    def write(self, key: str, text: str) -> None:
        self.link.call(lambda client: self.log.write(client, PREFIX + key, text), WAIT)


@pytest.fixture
def link(redis_server: RedisServer) -> Iterator[RedisLink]:
    link = RedisLink(redis_server.url).start()
    try:
        yield link
    finally:
        link.close()


def test_the_first_refresh_resyncs_then_only_changes_are_read(link: RedisLink) -> None:
    reader = Reader(link)
    reader.refresh()
    assert (reader.resyncs, reader.read) == ([0], [])
    reader.refresh()  # nothing written: the version alone was read
    assert (reader.resyncs, reader.read) == ([0], [])
    reader.write("a", "1")
    reader.write("b", "2")
    reader.write("a", "3")
    reader.refresh()
    assert reader.read == [[f"{PREFIX}b", f"{PREFIX}a"]]  # each once, in the order of its last write
    assert reader.log.seen == 3
    reader.refresh()
    assert len(reader.read) == 1


def test_a_full_resync_comes_when_due_and_when_the_version_went_back(
    link: RedisLink, redis_server: RedisServer
) -> None:
    reader = Reader(link, full_resync=60.0)
    reader.refresh()
    reader.write("a", "1")
    reader.now = 60.0
    reader.refresh()
    assert (reader.resyncs, reader.read) == ([0, 1], [])
    with redis_client(redis_server.url) as look:
        assert look.get(f"{PREFIX}a") == "1"
        look.flushdb()  # Redis lost its data: the version is gone, below the 1 seen
    reader.refresh()
    assert (reader.resyncs, reader.read) == ([0, 1, 0], [])
