"""The caching hints as values (SEP-2549): pages and servers combine (the shortest TTL wins, one
private list makes the answer private), a list goes stale with its TTL on the runtime's clock,
and a `Listing` reads as its items. Pure: no threads, no servers."""

from __future__ import annotations

import pytest

from actors.mcp.freshness import ListFreshness, Listing, Received, combine, combined, freshness_of
from actors.runtime.clock import ManualClock

PUBLIC_MINUTE = ListFreshness(60_000, "public")
PRIVATE_SECOND = ListFreshness(1_000, "private")


def test_two_lists_take_the_shorter_ttl_and_any_private_scope() -> None:
    assert PUBLIC_MINUTE.combine(PRIVATE_SECOND) == ListFreshness(1_000, "private")
    assert PUBLIC_MINUTE.combine(ListFreshness(5_000, "public")) == ListFreshness(5_000, "public")
    assert combined([PUBLIC_MINUTE, PUBLIC_MINUTE, PRIVATE_SECOND]) == ListFreshness(1_000, "private")


def test_no_hint_beside_a_hint_is_ttl_0_and_private_and_no_hints_stay_none() -> None:
    assert combine(None, PUBLIC_MINUTE) == ListFreshness(0, "private")
    assert combine(PUBLIC_MINUTE, None) == ListFreshness(0, "private")
    assert combine(None, None) is None
    assert combined([None, None]) is None
    assert combined([]) is None
    assert combined([PUBLIC_MINUTE]) == PUBLIC_MINUTE


@pytest.mark.parametrize(
    ("ttl_ms", "scope"), [(-1, "public"), (True, "public"), (1.5, "public"), (0, "shared")]
)
def test_a_bad_hint_is_refused(ttl_ms: object, scope: object) -> None:
    with pytest.raises(ValueError):
        ListFreshness(ttl_ms, scope)  # type: ignore[arg-type]


def test_hints_read_and_write_as_mcp_spells_them() -> None:
    assert PUBLIC_MINUTE.to_json() == {"ttlMs": 60_000, "cacheScope": "public"}
    assert ListFreshness.from_json({"ttlMs": 60_000, "cacheScope": "public"}) == PUBLIC_MINUTE
    broken: object
    for broken in (None, [], {"ttlMs": -5, "cacheScope": "public"}, {"ttlMs": 5}, "x"):
        assert ListFreshness.from_json(broken) is None


def test_a_list_goes_stale_when_its_ttl_has_run_out_on_the_clock() -> None:
    clock = ManualClock()
    seen = Received(clock.monotonic(), ListFreshness(2_000, "public"))
    assert not seen.stale(clock.monotonic())
    assert seen.remaining(clock.monotonic()) == ListFreshness(2_000, "public")
    clock.advance(1.5)
    assert not seen.stale(clock.monotonic())
    assert seen.remaining(clock.monotonic()) == ListFreshness(500, "public")
    clock.advance(0.5)
    assert seen.stale(clock.monotonic())  # age == ttl: stale
    clock.advance(10)
    assert seen.remaining(clock.monotonic()) == ListFreshness(0, "public")  # floored at 0


def test_ttl_0_is_always_stale_and_no_hint_never_is() -> None:
    clock = ManualClock()
    assert Received(clock.monotonic(), ListFreshness(0, "public")).stale(clock.monotonic())
    unhinted = Received(clock.monotonic())
    clock.advance(10**6)
    assert not unhinted.stale(clock.monotonic())
    assert unhinted.remaining(clock.monotonic()) is None


def test_a_list_the_server_said_changed_is_stale_whatever_its_ttl() -> None:
    seen = Received(100.0, ListFreshness(60_000, "public"), changed=True)
    assert seen.stale(100.0)
    assert seen.remaining(100.0) == ListFreshness(0, "public")


def test_a_time_moves_between_clocks_and_never_into_the_future() -> None:
    seen = Received(1_000.0, PUBLIC_MINUTE)
    # Received 5 s before "then" on its clock: 5 s before "now" on the other.
    assert seen.moved(1_005.0, 50.0) == Received(45.0, PUBLIC_MINUTE)
    # A time after "then" (another machine's clock ran ahead): received now.
    assert seen.moved(990.0, 50.0).at == 50.0


def test_a_listing_reads_as_its_items_and_carries_its_freshness() -> None:
    listing = Listing(("a", "b", "c"), PRIVATE_SECOND)
    assert list(listing) == ["a", "b", "c"]
    assert (len(listing), listing[0], list(listing[1:])) == (3, "a", ["b", "c"])
    assert freshness_of(listing) == PRIVATE_SECOND
    assert freshness_of(["a"]) is None  # a transport that knows no hints
    assert Listing().freshness is None and len(Listing()) == 0
