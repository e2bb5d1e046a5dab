"""`RedisPinStore` on a real Redis: changes applied to the entry as Redis has it, mirrored to
each replica's folder, and kept through an outage to be applied once Redis is back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from actors.cluster.link import RedisLink
from actors.cluster.pin_store import RedisPinStore
from actors.pins import Pin, PinChange, ServerPins
from tests.cluster.conftest import (  # noqa: F401 (fixtures)
    PREFIX,
    WAIT,
    RedisServer,
    _module_redis,
    own_redis,
    redis_client,
    redis_server,
)
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(180)

V1 = {"name": "echo", "description": "Echo."}
V2 = {"name": "echo", "description": "Echo, and more."}


@contextmanager
def pin_store(url: str, folder: Path, **options: float) -> Iterator[RedisPinStore]:
    link = RedisLink(url, timeout=0.5).start()
    try:
        yield RedisPinStore(link, folder, refresh=0.1, **options)
    finally:
        link.close()


def in_redis(url: str, key: str) -> ServerPins | None:
    with redis_client(url) as client:
        text = client.get(f"{PREFIX}pins:{key}")
    return ServerPins.from_json(json.loads(text)) if isinstance(text, str) else None


def test_two_replicas_change_one_entry_and_both_see_it(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811 (the fixture)
) -> None:
    with (
        pin_store(redis_server.url, tmp_path / "a") as a,
        pin_store(redis_server.url, tmp_path / "b") as b,
    ):
        a.pull(WAIT)
        b.pull(WAIT)
        a.apply("k", "ns", PinChange(pin={("tools", "echo"): Pin.of(V1, 1.0)}))
        after = b.apply("k", "ns", PinChange(hold={("tools", "echo"): Pin.of(V2, 2.0)}))
        assert set(after.pinned) == set(after.held) == {("tools", "echo")}  # b applied to a's entry
        assert in_redis(redis_server.url, "k") == after
        assert b.load("k") == after
        assert wait_until(lambda: a.load("k") == after, WAIT), a.load("k")  # copied in by a's link
        approved = a.apply("k", "ns", PinChange(approve=frozenset({"echo"}), at=3.0))
        assert not approved.held
        assert wait_until(lambda: b.load("k") == approved, WAIT)


def test_a_change_made_while_redis_is_away_reaches_it_when_it_is_back(
    tmp_path: Path,
    own_redis: RedisServer,  # noqa: F811 (the fixture)
) -> None:
    with pin_store(own_redis.url, tmp_path / "a", timeout=2.0) as store:
        store.pull(WAIT)
        store.apply("k", "ns", PinChange(pin={("tools", "echo"): Pin.of(V1, 1.0)}))
        own_redis.stop()
        kept = store.apply("k", "ns", PinChange(hold={("tools", "echo"): Pin.of(V2, 2.0)}))
        assert set(kept.held) == {("tools", "echo")} and store.load("k") == kept  # the folder has it
        own_redis.start()  # empty: it lost its data
        assert wait_until(lambda: in_redis(own_redis.url, "k") == kept, WAIT), in_redis(own_redis.url, "k")
        assert store.load("k") == kept
