"""Rate limits: token buckets per principal, and per tool for each principal and for all of them.

``"access": {"limits": ...}`` (`actors.config.LimitKeys`) names them:

- ``perUser``: each principal's whole request rate over HTTP. Refused at the HTTP layer, as
  the transport does it: status 429 with ``Retry-After`` (`actors.gateway.access.limits_http`).
- ``tools``: by ``"ns/tool"``, ``"ns/*"`` or ``"*"`` (the most specific entry applies), a
  ``perUser`` bucket (each principal's calls of that tool) and an ``all`` bucket (everyone's
  together). A call over either is refused with the JSON-RPC error `RATE_LIMITED`, whose
  ``data`` says when to retry (`limited_error`).

A bucket holds up to ``burst`` tokens and gains ``rate`` per second; a request takes one from
each bucket that applies, all or none (a refused call costs no other bucket a token). The
buckets live here (`LocalBuckets`, on this process's `Clock`) or, for replicas, in Redis
(`actors.gateway.access.limits_redis`), with the local ones as the fallback while Redis does
not answer.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from mcp.shared.exceptions import MCPError

from actors.config import LimitKeys, RateKeys, ToolLimitKeys
from actors.gateway.access.principal import Principal
from actors.runtime.clock import Clock, SystemClock

__all__ = [
    "ALLOWED",
    "RATE_LIMITED",
    "BucketDecision",
    "BucketKey",
    "LimitPlan",
    "LocalBuckets",
    "Rate",
    "RateLimits",
    "Scope",
    "SharedBuckets",
    "limited_error",
    "retry_after_seconds",
]

RATE_LIMITED = -32005
"""The JSON-RPC error code of a request over its limit: in the range JSON-RPC leaves to
implementations below MCP's own (-32020 and up), and the one JSON-RPC APIs use for "limit
exceeded" (EIP-1474). Its ``data`` carries ``retryAfter`` (seconds) and ``retryAfterMs``."""

_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}
_PRUNE_EVERY = 1024
"""Takes between two sweeps of the buckets that are full again (as good as absent)."""


@dataclass(frozen=True, slots=True)
class Rate:
    """A bucket's size (``burst``) and how many tokens it gains per second."""

    per_second: float
    burst: float

    @classmethod
    def of(cls, keys: RateKeys) -> Rate:
        burst = keys.burst if keys.burst is not None else max(1, math.floor(keys.rate))
        return cls(keys.rate / _SECONDS[keys.per], float(burst))

    def describe(self) -> str:
        """``5/s, burst 10``: for messages."""
        per_minute = self.per_second * 60
        rate = f"{self.per_second:g}/s" if self.per_second >= 1 else f"{per_minute:g}/min"
        return f"{rate}, burst {self.burst:g}"


class Scope(StrEnum):
    """Which kind of bucket a key is: a classified value, for answers and the audit."""

    USER = "user"
    """One principal's whole request rate."""
    TOOL_USER = "tool-user"
    """One principal's calls of one tool (or server, under ``ns/*``)."""
    TOOL = "tool"
    """Everyone's calls of one tool together."""


@dataclass(frozen=True, slots=True)
class BucketKey:
    """One bucket: its name (unique; the same on every replica) and its rate."""

    name: str
    rate: Rate
    scope: Scope


@dataclass(frozen=True, slots=True)
class BucketDecision:
    """Whether a request may go; if not, which bucket refused and when it has a token again."""

    allowed: bool
    retry_after: float = 0.0
    """Seconds until the refusing bucket holds a token (0 when allowed)."""
    key: BucketKey | None = None
    """The bucket that refused (the one to wait longest for, if several did)."""


ALLOWED = BucketDecision(True)
"""The answer when every bucket had a token (or none applies)."""


class _Bucket:
    """One token bucket's state, and the rate it was last taken at (to know when it is full)."""

    __slots__ = ("rate", "tokens", "updated")

    def __init__(self, rate: Rate, tokens: float, updated: float) -> None:
        self.rate = rate
        self.tokens = tokens
        self.updated = updated

    def level(self, rate: Rate, now: float) -> float:
        return min(rate.burst, self.tokens + max(0.0, now - self.updated) * rate.per_second)


class LocalBuckets:
    """The buckets of this process, on ``clock``. Thread-safe (one lock; no waiting inside it),
    used on the gateway's loop and, in tests, on the test's thread.

    A bucket that has filled up again is dropped (on a sweep every so many takes): it is the
    same as one never used, so the map holds only the principals and tools in use lately.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._takes = 0

    def take(self, keys: Sequence[BucketKey]) -> BucketDecision:
        """One token from each bucket of ``keys`` if every one has it, else none."""
        if not keys:
            return ALLOWED
        now = self._clock.monotonic()
        with self._lock:
            levels = []
            refused: BucketDecision | None = None
            for key in keys:
                bucket = self._buckets.get(key.name)
                level = key.rate.burst if bucket is None else bucket.level(key.rate, now)
                levels.append(level)
                if level < 1.0:
                    wait = (1.0 - level) / key.rate.per_second
                    if refused is None or wait > refused.retry_after:
                        refused = BucketDecision(False, wait, key)
            if refused is not None:
                return refused
            for key, level in zip(keys, levels, strict=True):
                self._buckets[key.name] = _Bucket(key.rate, level - 1.0, now)
            self._takes += 1
            if self._takes % _PRUNE_EVERY == 0:
                self._prune(now)
        return ALLOWED

    def _prune(self, now: float) -> None:
        full = [name for name, b in self._buckets.items() if b.level(b.rate, now) >= b.rate.burst]
        for name in full:
            del self._buckets[name]

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)


class SharedBuckets(Protocol):
    """Buckets shared by the replicas of a cluster (`actors.gateway.access.limits_redis`)."""

    async def take(self, keys: Sequence[BucketKey]) -> BucketDecision | None:
        """As `LocalBuckets.take`, on the shared buckets; None when they could not answer in
        time (the caller falls back on its own). On the gateway's loop; never blocks it."""
        ...


class LimitPlan:
    """Which buckets a request takes from, by ``access.limits``. Immutable: a reload makes a
    new plan, read from any thread."""

    def __init__(self, keys: LimitKeys) -> None:
        self.per_user = Rate.of(keys.per_user) if keys.per_user is not None else None
        self._tools: dict[str, tuple[Rate | None, Rate | None]] = {
            pattern: _tool_rates(limit) for pattern, limit in keys.tools.items()
        }

    @property
    def limits_requests(self) -> bool:
        """Whether any principal's whole request rate is limited (``perUser``)."""
        return self.per_user is not None

    @property
    def limits_tools(self) -> bool:
        return bool(self._tools)

    def user_keys(self, principal: Principal) -> tuple[BucketKey, ...]:
        """The bucket of ``principal``'s whole request rate, if one is configured."""
        if self.per_user is None:
            return ()
        return (BucketKey(f"user:{principal.key}", self.per_user, Scope.USER),)

    def tool_keys(self, principal: Principal, namespace: str, tool: str) -> tuple[BucketKey, ...]:
        """The buckets a call of ``namespace/tool`` by ``principal`` takes from."""
        if not self._tools:
            return ()
        pattern = _most_specific(self._tools, namespace, tool)
        if pattern is None:
            return ()
        per_user, everyone = self._tools[pattern]
        # Under "ns/*" each tool of the server has its own buckets: the pattern is the server's
        # limit per tool, not one bucket shared by all its tools.
        name = f"{namespace}/{tool}"
        keys = []
        if per_user is not None:
            keys.append(BucketKey(f"tool:{name}:user:{principal.key}", per_user, Scope.TOOL_USER))
        if everyone is not None:
            keys.append(BucketKey(f"tool:{name}", everyone, Scope.TOOL))
        return tuple(keys)


def _tool_rates(limit: ToolLimitKeys) -> tuple[Rate | None, Rate | None]:
    return (
        Rate.of(limit.per_user) if limit.per_user is not None else None,
        Rate.of(limit.all) if limit.all is not None else None,
    )


def _most_specific(patterns: Mapping[str, object], namespace: str, tool: str) -> str | None:
    for pattern in (f"{namespace}/{tool}", f"{namespace}/*", "*"):
        if pattern in patterns:
            return pattern
    return None


class RateLimits:
    """The gateway's limits: the plan (replaced whole on a reload) over the buckets.

    ``admit_request`` and ``admit_tool`` run on the gateway's loop. With ``shared`` buckets (a
    cluster), those answer; while they cannot (Redis away or slow), this replica's own buckets
    do, so each replica then allows the configured rate on its own.
    """

    def __init__(
        self, keys: LimitKeys, *, clock: Clock | None = None, shared: SharedBuckets | None = None
    ) -> None:
        self._plan = LimitPlan(keys)
        self.local = LocalBuckets(clock)
        self._shared = shared

    @property
    def plan(self) -> LimitPlan:
        return self._plan

    def adopt(self, keys: LimitKeys) -> None:
        """Limit by ``keys`` from now on (a reload; any thread). Buckets keep their tokens."""
        self._plan = LimitPlan(keys)

    async def admit_request(self, principal: Principal) -> BucketDecision:
        """Whether ``principal`` may send one more request (``perUser``)."""
        return await self._take(self._plan.user_keys(principal))

    async def admit_tool(self, principal: Principal, namespace: str, tool: str) -> BucketDecision:
        """Whether ``principal`` may call ``namespace/tool`` now (``tools``)."""
        return await self._take(self._plan.tool_keys(principal, namespace, tool))

    async def _take(self, keys: tuple[BucketKey, ...]) -> BucketDecision:
        if not keys:
            return ALLOWED
        if self._shared is not None:
            decision = await self._shared.take(keys)
            if decision is not None:
                return decision
        return self.local.take(keys)


def retry_after_seconds(decision: BucketDecision) -> int:
    """Whole seconds to wait (``Retry-After``), at least 1."""
    return max(1, math.ceil(decision.retry_after))


def limited_error(decision: BucketDecision, what: str) -> MCPError:
    """The JSON-RPC error for a request ``decision`` refused (``what``: the tool, for the
    message): `RATE_LIMITED`, with when to retry in ``data``."""
    key = decision.key
    assert key is not None, "a refusal names its bucket"
    whose = {Scope.USER: "your requests", Scope.TOOL_USER: f"your calls of {what}", Scope.TOOL: what}
    message = (
        f"rate limit: {whose[key.scope]} ({key.rate.describe()}); retry after {decision.retry_after:.2f} s"
    )
    data = {
        "retryAfter": retry_after_seconds(decision),
        "retryAfterMs": max(1, math.ceil(decision.retry_after * 1000)),
        "scope": key.scope.value,
        "limit": {"rate": key.rate.per_second, "burst": key.rate.burst},
    }
    return MCPError(RATE_LIMITED, message, data)
