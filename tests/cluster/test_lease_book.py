"""The lease decisions on their own (`actors.cluster.lease_book`): plain numbers for the time,
no Redis, no thread. Each test is one rule of the bet docs/scaling.md writes down."""

from __future__ import annotations

import itertools

import pytest

from actors.cluster.lease_book import (
    DRIFT,
    TRANSITIONS,
    LeaseAction,
    LeaseBook,
    LeaseEvent,
    LeaseTiming,
    Phase,
)
from actors.cluster.owners import KnownOwner, KnownOwners

TTL = 10.0


def book() -> LeaseBook:
    return LeaseBook(LeaseTiming(TTL))


def test_the_table_covers_every_phase_and_event() -> None:
    assert set(TRANSITIONS) == set(itertools.product(Phase, LeaseEvent))


def test_the_timing_leaves_the_owner_time_to_stop_before_anyone_may_take_it() -> None:
    for ttl in (1.5, 2.0, 5.0, 10.0, 60.0):
        timing = LeaseTiming(ttl)
        # The owner's belief, on a clock up to DRIFT fast, ends before Redis's TTL on a clock up
        # to DRIFT slow, by the time to stop the copy.
        assert timing.belief * (1 + DRIFT) + timing.stop_allowance <= ttl * (1 - DRIFT)
        assert timing.stop_allowance >= min(2.5, ttl / 2)
        # A new epoch's quiet period outlasts any belief from before it.
        assert timing.quiet * (1 - DRIFT) > timing.belief * (1 + DRIFT)
        assert 0 < timing.retry_every < timing.renew_every < timing.belief
    with pytest.raises(ValueError):
        LeaseTiming(0)


def test_a_grant_is_believed_from_when_it_was_sent_and_ends_on_its_own() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    assert leases.apply("m", LeaseEvent.GRANTED, now=100.5, sent=100.0) is LeaseAction.NONE
    assert leases.holds("m", 100.5)
    assert leases.beliefs == {"m": 100.0 + timing.belief}
    assert leases.due(100.0 + timing.renew_every - 0.01) == []
    assert leases.due(100.0 + timing.renew_every) == ["m"]
    assert leases.next_wake(101.0, idle=60) == 100.0 + timing.renew_every
    # Nothing renewed it: the belief ends, the copy is to be stopped, before Redis's TTL.
    assert leases.expire(100.0 + timing.belief - 0.01) == []
    assert leases.expire(100.0 + timing.belief) == ["m"]
    assert not leases.holds("m", 100.0 + timing.belief)
    assert leases.phase("m") is Phase.FREE and leases.beliefs == {}


def test_a_renewal_extends_it_and_an_unreachable_redis_does_not() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    leases.apply("m", LeaseEvent.GRANTED, now=0.1, sent=0.0)
    assert leases.apply("m", LeaseEvent.UNREACHABLE, now=3.0) is LeaseAction.NONE
    assert leases.beliefs["m"] == timing.belief  # not moved by a renewal that failed
    assert leases.due(3.0 + timing.retry_every) == ["m"]  # tried again soon
    leases.apply("m", LeaseEvent.GRANTED, now=3.5, sent=3.4)
    assert leases.beliefs["m"] == 3.4 + timing.belief


def test_a_grant_that_comes_back_too_late_buys_nothing() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    assert leases.apply("m", LeaseEvent.GRANTED, now=timing.belief + 1, sent=0.0) is LeaseAction.NONE
    assert not leases.holds("m", timing.belief + 1) and leases.phase("m") is Phase.FREE
    leases.apply("m", LeaseEvent.GRANTED, now=1.0, sent=0.0)
    assert leases.apply("m", LeaseEvent.GRANTED, now=timing.belief + 1, sent=0.5) is LeaseAction.STOP


def test_redis_saying_it_is_another_s_or_gone_stops_the_copy() -> None:
    leases = book()
    leases.apply("m", LeaseEvent.GRANTED, now=0.0)
    assert leases.apply("m", LeaseEvent.REFUSED, now=1.0) is LeaseAction.STOP
    assert not leases.holds("m", 1.0)
    # Refused while not ours: nothing to stop.
    assert leases.apply("m", LeaseEvent.REFUSED, now=2.0) is LeaseAction.NONE


def test_released_it_is_dropped_and_no_longer_served() -> None:
    leases = book()
    leases.apply("m", LeaseEvent.GRANTED, now=0.0)
    assert leases.apply("m", LeaseEvent.RELEASED, now=1.0) is LeaseAction.DROP
    assert not leases.believed("m") and leases.owned() == []


def test_a_new_epoch_unconfirms_every_owner_and_quiets_taking_for_a_ttl() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    assert leases.observe_epoch("run-1:0", 0.0) == []  # the first one seen: nothing changed
    assert leases.may_take(0.0)
    leases.apply("m", LeaseEvent.GRANTED, now=1.0)
    leases.apply("b", LeaseEvent.GRANTED, now=1.0)
    assert leases.observe_epoch("run-1:0", 2.0) == []
    assert leases.observe_epoch("", 2.0) == []  # an answer without one says nothing
    # Redis restarted: every owner re-confirms before it serves again, at once.
    assert sorted(leases.observe_epoch("run-2:0", 2.0)) == ["b", "m"]
    assert leases.phase("m") is Phase.UNCONFIRMED and not leases.holds("m", 2.0)
    assert leases.believed("m")  # its requests are renewals, never takes
    assert sorted(leases.due(2.0)) == ["b", "m"]
    assert not leases.may_take(2.0 + timing.quiet - 0.01) and leases.may_take(2.0 + timing.quiet)
    # Re-confirmed: served again. Not re-confirmed within its belief: lost.
    assert leases.apply("m", LeaseEvent.GRANTED, now=2.2, sent=2.1) is LeaseAction.NONE
    assert leases.holds("m", 2.2)
    assert leases.apply("b", LeaseEvent.UNREACHABLE, now=2.2) is LeaseAction.NONE
    assert leases.expire(1.0 + timing.belief) == ["b"]
    assert leases.holds("m", 1.0 + timing.belief)


def test_the_thread_wakes_for_a_belief_s_end_even_without_a_renewal_due() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    leases.apply("m", LeaseEvent.GRANTED, now=0.0)
    for _ in range(4):  # failing renewals push the renewal, never the end of the belief
        leases.apply("m", LeaseEvent.UNREACHABLE, now=timing.belief - 0.01)
    assert leases.next_wake(timing.belief - 0.01, idle=60) <= timing.belief
    assert leases.next_wake(5.0, idle=1.0) <= 6.0


def test_a_call_is_served_here_only_while_the_belief_lasts_its_margin_more() -> None:
    leases, timing = book(), LeaseTiming(TTL)
    leases.apply("m", LeaseEvent.GRANTED, now=0.0)
    assert leases.holds("m", timing.belief - 0.6, margin=0.5)
    assert not leases.holds("m", timing.belief - 0.4, margin=0.5)
    assert leases.claimed == {"m"}
    leases.observe_epoch("run-1:0", 1.0)
    leases.observe_epoch("run-2:0", 1.0)
    # Awaiting re-confirmation: not served, but still this replica's (its copy is not stopped).
    assert not leases.holds("m", 1.0) and leases.claimed == {"m"}
    leases.apply("m", LeaseEvent.REFUSED, now=1.1)
    assert leases.claimed == frozenset()


def test_known_owners_are_recent_for_a_ttl_and_a_moved_owner_s_address_is_let_go() -> None:
    owners = KnownOwners()
    assert owners.seen("memory", KnownOwner("r1", "http://a/mcp", 10.0)) is None
    assert owners.seen("browser", KnownOwner("r1", "http://a/mcp", 10.0)) is None
    assert owners.recent("memory", 19.9, within=TTL) == KnownOwner("r1", "http://a/mcp", 10.0)
    assert owners.recent("memory", 20.0, within=TTL) is None
    assert owners.address_of("r1") == "http://a/mcp" and owners.address_of("r2") is None
    # Moved, but the browser is still forwarded there: the client stays.
    assert owners.seen("memory", KnownOwner("r2", "http://b/mcp", 11.0)) is None
    assert owners.seen("browser", KnownOwner("r2", "http://b/mcp", 11.0)) == "http://a/mcp"
