"""The lease script's epoch on a real Redis (`actors.cluster.lease_script`): when Redis lost data
(another run id than the epoch key names, as after a failover to a replica that missed the last
writes), nobody takes a free lease for a quiet period, and an owner whose belief holds writes
its key again and goes on serving; a renewal that finds its key gone outside a quiet period is
a loss."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from actors.cluster.lease import LEASE_PREFIX, Leases, redis_client
from actors.cluster.lease_script import EPOCH_KEY, QUIET_KEY
from tests.cluster.conftest import WAIT, RedisServer
from tests.cluster.conftest import redis_client as look_into
from tests.conftest import wait_until

TTL = 1.5


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[tuple[Leases, Leases]]:
    a = Leases(redis_client(redis_server.url), "a", TTL)
    b = Leases(redis_client(redis_server.url), "b", TTL)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def take(leases: Leases, name: str) -> float:
    """Take the free lease ``name``, waiting out a quiet period; how long that took."""
    began = time.monotonic()
    assert wait_until(lambda: leases.claim(name).result(WAIT).mine, WAIT, interval=0.05)
    return time.monotonic() - began


def test_another_run_of_redis_quiets_takes_while_the_owner_re_confirms(
    pair: tuple[Leases, Leases], redis_server: RedisServer
) -> None:
    a, b = pair
    lost = threading.Event()
    a.on_lost = lambda name: lost.set()
    take(a, "memory")
    with look_into(redis_server.url) as look:
        # As after a failover to a replica that missed a's last write: another run, no key.
        look.set(EPOCH_KEY, "another-run:0")
        look.delete(LEASE_PREFIX + "memory")
        claim = b.claim("memory").result(WAIT)
        assert (claim.mine, claim.owner) == (False, "") and claim.quiet > 0, claim
        assert look.pttl(QUIET_KEY) > 0
        # The owner's belief holds: it writes its key again at its next renewal.
        assert wait_until(lambda: look.get(LEASE_PREFIX + "memory") == "a", WAIT)
    assert a.holds("memory") and not lost.is_set()
    assert b.claim("memory").result(WAIT).owner == "a"
    # A free lease waits out the quiet period, from b as from anyone.
    assert take(b, "browser") >= TTL * 0.5


def test_a_renewal_finding_its_key_gone_in_the_same_epoch_is_a_loss(
    pair: tuple[Leases, Leases], redis_server: RedisServer
) -> None:
    a, b = pair
    lost = threading.Event()
    a.on_lost = lambda name: lost.set()
    take(a, "memory")
    with look_into(redis_server.url) as look:
        assert wait_until(lambda: look.pttl(QUIET_KEY) < 0, WAIT)  # no quiet period left
        look.delete(LEASE_PREFIX + "memory")
    assert lost.wait(WAIT)
    assert not a.holds("memory")
    assert b.claim("memory").result(WAIT).mine
