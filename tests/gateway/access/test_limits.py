"""The token buckets and what decides which apply (`actors.gateway.access.limits`), on a
`ManualClock`: a minute of traffic passes in microseconds, and no test sleeps."""

from __future__ import annotations

import asyncio
import math

import pytest

from actors.config import LimitKeys, load_config
from actors.gateway.access.limits import (
    RATE_LIMITED,
    BucketDecision,
    BucketKey,
    LimitPlan,
    LocalBuckets,
    Rate,
    RateLimits,
    Scope,
    limited_error,
)
from actors.gateway.access.principal import Principal
from actors.runtime.clock import ManualClock

ALICE = Principal("alice", issuer="https://issuer.test")
BOB = Principal("bob", issuer="https://issuer.test")


def limits(**keys: object) -> LimitKeys:
    """``access.limits`` as a config file says it."""
    return load_config({"mcpServers": {}, "access": {"limits": keys}}).access.limits


def key(name: str, rate: float, burst: float, scope: Scope = Scope.USER) -> BucketKey:
    return BucketKey(name, Rate(rate, burst), scope)


def test_a_bucket_allows_its_burst_then_one_per_interval() -> None:
    clock = ManualClock()
    buckets = LocalBuckets(clock)
    bucket = key("user:a", rate=2.0, burst=3)
    assert [buckets.take([bucket]).allowed for _ in range(4)] == [True, True, True, False]
    refused = buckets.take([bucket])
    assert refused.key == bucket
    assert refused.retry_after == pytest.approx(0.5)
    clock.advance(0.25)
    assert buckets.take([bucket]).retry_after == pytest.approx(0.25)
    clock.advance(0.25)
    assert buckets.take([bucket]).allowed
    assert not buckets.take([bucket]).allowed


def test_the_rate_holds_over_a_long_run() -> None:
    """A client asking 50 times a second against 5/s, burst 10, for 60 s gets the burst and
    what 59.98 s refilled (its last try), give or take the rounding of 3000 clock steps."""
    clock = ManualClock()
    buckets = LocalBuckets(clock)
    bucket = key("user:a", rate=5.0, burst=10)
    allowed = 0
    for _ in range(60 * 50):
        allowed += buckets.take([bucket]).allowed
        clock.advance(1 / 50)
    assert allowed in (10 + math.floor(5 * 59.98) - 1, 10 + math.floor(5 * 59.98))


def test_a_refused_take_costs_no_other_bucket_a_token() -> None:
    clock = ManualClock()
    buckets = LocalBuckets(clock)
    mine = key("tool:t:user:a", rate=1.0, burst=1, scope=Scope.TOOL_USER)
    everyone = key("tool:t", rate=1.0, burst=2, scope=Scope.TOOL)
    assert buckets.take([mine, everyone]).allowed
    refused = buckets.take([mine, everyone])
    assert not refused.allowed and refused.key == mine
    # "everyone" kept the token the refused take did not take: another user still gets it.
    theirs = key("tool:t:user:b", rate=1.0, burst=1, scope=Scope.TOOL_USER)
    assert buckets.take([theirs, everyone]).allowed
    assert buckets.take([key("tool:t:user:c", 1.0, 1, Scope.TOOL_USER), everyone]).key == everyone


def test_the_longest_wait_is_the_one_reported() -> None:
    clock = ManualClock()
    buckets = LocalBuckets(clock)
    fast, slow = key("a", rate=10.0, burst=1), key("b", rate=0.1, burst=1)
    assert buckets.take([fast, slow]).allowed
    refused = buckets.take([fast, slow])
    assert refused.key == slow and refused.retry_after == pytest.approx(10.0)


def test_full_buckets_are_swept_away() -> None:
    clock = ManualClock()
    buckets = LocalBuckets(clock)
    for user in range(1000):
        buckets.take([key(f"user:{user}", rate=10.0, burst=5)])
    assert len(buckets) == 1000
    clock.advance(1.0)  # every one of them is full again
    for _ in range(24):
        buckets.take([key("user:busy", rate=1000.0, burst=1000)])
    assert len(buckets) == 1


def test_rates_in_the_file() -> None:
    assert Rate.of(limits(perUser={"rate": 120, "per": "minute"}).per_user) == Rate(2.0, 120.0)  # type: ignore[arg-type]
    assert Rate.of(limits(perUser={"rate": 0.5}).per_user) == Rate(0.5, 1.0)  # type: ignore[arg-type]
    assert Rate.of(limits(perUser={"rate": 5, "burst": 20}).per_user) == Rate(5.0, 20.0)  # type: ignore[arg-type]
    with pytest.raises(Exception, match=r"access\.limits\.perUser\.rate"):
        limits(perUser={"rate": -1})
    with pytest.raises(Exception, match=r"access\.limits\.tools\.git/\*\.everyone"):
        limits(tools={"git/*": {"everyone": {"rate": 1}}})


def test_the_most_specific_tool_entry_applies() -> None:
    plan = LimitPlan(
        limits(
            tools={
                "*": {"all": {"rate": 100}},
                "git/*": {"perUser": {"rate": 10}},
                "git/git_commit": {"perUser": {"rate": 1}, "all": {"rate": 2}},
            }
        )
    )
    commit = plan.tool_keys(ALICE, "git", "git_commit")
    assert [(k.scope, k.rate.per_second) for k in commit] == [(Scope.TOOL_USER, 1.0), (Scope.TOOL, 2.0)]
    log = plan.tool_keys(ALICE, "git", "git_log")
    assert [(k.scope, k.rate.per_second) for k in log] == [(Scope.TOOL_USER, 10.0)]
    # Under "git/*" each tool has buckets of its own, and each principal too.
    assert log[0].name != plan.tool_keys(ALICE, "git", "git_status")[0].name
    assert log[0].name != plan.tool_keys(BOB, "git", "git_log")[0].name
    assert [k.scope for k in plan.tool_keys(ALICE, "time", "now")] == [Scope.TOOL]
    assert plan.user_keys(ALICE) == ()
    assert not plan.limits_requests and plan.limits_tools


def test_one_user_over_the_limit_leaves_the_others_alone() -> None:
    clock = ManualClock()
    gate = RateLimits(
        limits(perUser={"rate": 1, "burst": 2}, tools={"t/*": {"perUser": {"rate": 1}}}), clock=clock
    )

    async def run() -> tuple[list[bool], list[bool], list[bool]]:
        alice = [(await gate.admit_request(ALICE)).allowed for _ in range(3)]
        bob = [(await gate.admit_request(BOB)).allowed for _ in range(2)]
        tools = [(await gate.admit_tool(p, "t", "x")).allowed for p in (ALICE, ALICE, BOB)]
        return alice, bob, tools

    assert asyncio.run(run()) == ([True, True, False], [True, True], [True, False, True])


def test_a_reload_changes_the_rates_and_keeps_the_tokens() -> None:
    clock = ManualClock()
    gate = RateLimits(limits(perUser={"rate": 1, "burst": 1}), clock=clock)

    async def admitted() -> bool:
        return (await gate.admit_request(ALICE)).allowed

    assert asyncio.run(admitted())
    gate.adopt(limits(perUser={"rate": 1, "burst": 5}))
    # The bucket it emptied stays empty: a reload is no way around a limit.
    assert not asyncio.run(admitted())
    clock.advance(1.0)
    assert asyncio.run(admitted())
    gate.adopt(limits())
    assert all(asyncio.run(admitted()) for _ in range(20))


def test_the_refusal_says_when_to_retry() -> None:
    bucket = key("tool:git/git_commit:user:alice", rate=0.5, burst=2, scope=Scope.TOOL_USER)
    error = limited_error(BucketDecision(False, 1.2, bucket), "git__git_commit")
    assert error.code == RATE_LIMITED == -32005
    assert error.data == {
        "retryAfter": 2,
        "retryAfterMs": 1200,
        "scope": "tool-user",
        "limit": {"rate": 0.5, "burst": 2.0},
    }
    assert "your calls of git__git_commit" in error.message and "30/min, burst 2" in error.message
    tiny = limited_error(BucketDecision(False, 0.0001, bucket), "x")
    assert tiny.data["retryAfter"] == 1 and tiny.data["retryAfterMs"] == 1
    assert math.isclose(Rate(5, 10).per_second, 5)
