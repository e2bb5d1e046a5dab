"""The registry's list ages: which server lists are stale on the runtime's clock, what freshness
is left of an answer that merges several, and how they cross to the schema cache and back.
Pure: no threads, no servers."""

from __future__ import annotations

from actors.mcp.freshness import ListFreshness, Received
from actors.runtime.clock import ManualClock
from actors.runtime.list_ages import ListAges

MINUTE = ListFreshness(60_000, "public")
SECOND_PRIVATE = ListFreshness(1_000, "private")


def test_a_list_is_stale_once_its_ttl_ran_out_and_ttl_0_always() -> None:
    clock, ages = ManualClock(), ListAges()
    now = clock.monotonic()
    ages.learnt("a", {"tools": Received(now, MINUTE)}, ("tools",))
    ages.learnt("b", {"tools": Received(now, ListFreshness(0, "public"))}, ("tools",))
    ages.learnt("c", {"tools": Received(now)}, ("tools",))
    assert [ages.stale(ns, "tools", now) for ns in "abc"] == [False, True, False]
    clock.advance(60)
    later = clock.monotonic()
    assert [ages.stale(ns, "tools", later) for ns in "abc"] == [True, True, False]
    assert not ages.stale("unknown", "tools", later)


def test_an_answer_has_the_shortest_ttl_left_and_is_private_if_any_list_is() -> None:
    clock, ages = ManualClock(), ListAges()
    ages.learnt("a", {"tools": Received(clock.monotonic(), MINUTE)}, ("tools",))
    clock.advance(20)
    ages.learnt("b", {"tools": Received(clock.monotonic(), ListFreshness(30_000, "public"))}, ("tools",))
    assert ages.remaining(["a", "b"], "tools", clock.monotonic()) == ListFreshness(30_000, "public")
    clock.advance(15)
    assert ages.remaining(["a", "b"], "tools", clock.monotonic()) == ListFreshness(15_000, "public")
    ages.learnt("c", {"tools": Received(clock.monotonic(), SECOND_PRIVATE)}, ("tools",))
    assert ages.remaining(["a", "b", "c"], "tools", clock.monotonic()) == ListFreshness(1_000, "private")


def test_a_server_without_hints_or_unknown_makes_an_answer_ttl_0_private() -> None:
    clock, ages = ManualClock(), ListAges()
    now = clock.monotonic()
    ages.learnt("a", {"tools": Received(now, MINUTE)}, ("tools",))
    ages.learnt("legacy", {"tools": Received(now)}, ("tools",))
    assert ages.remaining(["a", "legacy"], "tools", now) == ListFreshness(0, "private")
    assert ages.remaining(["a", "never-listed"], "tools", now) == ListFreshness(0, "private")
    assert ages.remaining(["legacy"], "tools", now) is None
    assert ages.remaining([], "tools", now) is None


def test_a_kind_a_server_does_not_offer_constrains_nothing() -> None:
    clock, ages = ManualClock(), ListAges()
    now = clock.monotonic()
    ages.learnt("a", {"resources": Received(now, MINUTE)}, ("resources", "templates", "prompts"))
    ages.learnt("tools-only", {}, ("resources", "templates", "prompts"))
    assert ages.remaining(["a", "tools-only"], "resources", now) == MINUTE
    assert ages.remaining(["a", "tools-only"], "prompts", now) is None


def test_a_change_the_server_announced_makes_a_hinted_list_stale_until_it_is_listed_again() -> None:
    clock, ages = ManualClock(), ListAges()
    now = clock.monotonic()
    ages.learnt("a", {"tools": Received(now, MINUTE)}, ("tools",))
    ages.learnt("legacy", {"tools": Received(now)}, ("tools",))
    ages.changed("a", ("tools",))
    ages.changed("legacy", ("tools",))
    assert ages.stale("a", "tools", now)
    assert not ages.stale("legacy", "tools", now)  # no hint: kept until the relist, as always
    ages.learnt("a", {"tools": Received(now, MINUTE)}, ("tools",))
    assert not ages.stale("a", "tools", now)


def test_learning_says_whether_a_hint_changed_not_just_the_age() -> None:
    ages = ListAges()
    assert ages.learnt("a", {"tools": Received(1.0, MINUTE)}, ("tools",))  # first seen
    assert not ages.learnt("a", {"tools": Received(2.0, MINUTE)}, ("tools",))  # older, same hint
    assert ages.learnt("a", {"tools": Received(3.0, SECOND_PRIVATE)}, ("tools",))
    assert ages.learnt("a", {}, ("tools",))  # no longer offered
    assert not ages.learnt("a", {}, ("tools",))


def test_lists_cross_to_wall_clock_times_and_back() -> None:
    clock, ages = ManualClock(), ListAges()
    ages.learnt("a", {"tools": Received(clock.monotonic(), MINUTE)}, ("tools",))
    clock.advance(10)
    stored = ages.stored("a", clock.wall(), clock.monotonic())
    assert stored == {"tools": Received(clock.wall() - 10, MINUTE)}
    # Another process, 25 s later: the list is 35 s old, 25 s of freshness left.
    other, restored = ManualClock(start=5.0, wall_start=clock.wall() + 25), ListAges()
    restored.restored("a", stored, other.wall(), other.monotonic())
    assert restored.remaining(["a"], "tools", other.monotonic()) == ListFreshness(25_000, "public")


def test_an_entry_without_times_restores_as_lists_without_hints() -> None:
    clock, ages = ManualClock(), ListAges()
    ages.restored("old", {}, clock.wall(), clock.monotonic())
    assert not ages.stale("old", "tools", clock.monotonic())
    assert ages.remaining(["old"], "prompts", clock.monotonic()) is None
    stored = ages.stored("old", clock.wall(), clock.monotonic())
    assert set(stored) == {"tools", "resources", "templates", "prompts"}
    ages.forget("old")
    assert ages.stored("old", clock.wall(), clock.monotonic()) == {}
