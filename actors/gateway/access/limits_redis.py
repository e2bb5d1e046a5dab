"""`RedisBuckets`: token buckets the replicas of a cluster share, in the Redis they already use.

Each bucket is a hash ``mcp-actors:limit:<bucket name>`` (``t``: tokens, ``ts``: when, in ms),
taken from by one Lua script, so a take is atomic across replicas: it refills every bucket the
request needs by the time gone, and takes one token from each only if every one has it. The
time is Redis's own (``TIME``), one clock for every replica. A bucket expires once it would be
full again: an idle principal leaves nothing behind.

Nothing on the gateway's loop talks to Redis: a take is queued for a `RedisLink` thread of its
own, which runs whatever takes are waiting in one pipeline, and the loop awaits the answer for
at most ``wait`` seconds. When Redis is away (the link says so at once) or slow, `take` answers
None and the caller falls back on this replica's own buckets: during an outage each replica
allows the configured rate by itself, so a cluster of N allows up to N times it, and once Redis
is back the shared buckets answer again (a Redis that lost its data starts them full).

Needs the ``redis`` package (the ``cluster`` extra): imported only where ``--cluster`` is.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script

from actors.cluster.link import RedisLink
from actors.gateway.access.limits import ALLOWED, BucketDecision, BucketKey
from actors.runtime.clock import Clock

__all__ = ["LIMIT_PREFIX", "RedisBuckets"]

logger = logging.getLogger(__name__)

LIMIT_PREFIX = "mcp-actors:limit:"

DEFAULT_WAIT = 0.25
"""Seconds a request waits at most for Redis's answer before this replica's buckets decide."""

# KEYS: the buckets. ARGV[1]: now in ms ("" for Redis's clock); then per bucket: tokens per ms
# and burst. Answers {1} if a token was taken from every bucket, else {0, ms to wait, index of
# the bucket to wait for}; a refused take writes nothing.
_TAKE = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
end
local levels = {}
local wait, which = 0, 0
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local state = redis.call('HMGET', KEYS[i], 't', 'ts')
  local level = burst
  if state[1] then
    level = math.min(burst, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * rate)
  end
  levels[i] = level
  if level < 1 then
    local w = (1 - level) / rate
    if w > wait then wait, which = w, i end
  end
end
if which > 0 then return {0, math.ceil(wait), which} end
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local left = levels[i] - 1
  redis.call('HSET', KEYS[i], 't', string.format('%.6f', left), 'ts', string.format('%.3f', now))
  redis.call('PEXPIRE', KEYS[i], math.ceil((burst - left) / rate) + 1000)
end
return {1}
"""

_Take = tuple[Sequence[BucketKey], "concurrent.futures.Future[BucketDecision]"]


class RedisBuckets:
    """The shared buckets (`actors.gateway.access.limits.SharedBuckets`).

    `take` runs on the gateway's loop; the Redis client, the script and the pipeline are the
    link thread's only. The queue of waiting takes is shared under a lock. ``clock``: a test's
    clock (its wall time goes to the script); None, Redis's own.
    """

    def __init__(
        self, url: str, *, wait: float = DEFAULT_WAIT, timeout: float = 1.0, clock: Clock | None = None
    ) -> None:
        self._link = RedisLink(url, timeout=timeout, name="limits")
        self._wait = wait
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: list[_Take] = []
        self._script: Script | None = None
        """Registered on the link's thread, on first use."""

    @classmethod
    def start(cls, url: str, **options: Any) -> RedisBuckets:
        buckets = cls(url, **options)
        buckets._link.start()
        return buckets

    @property
    def up(self) -> bool:
        """Whether Redis answered last time."""
        return self._link.up

    def close(self) -> None:
        """Stop the link's thread (takes still queued fail: their callers decide locally)."""
        self._link.close()
        self._fail_waiting(redis.ConnectionError("the limits' Redis link is closed"))

    def __enter__(self) -> RedisBuckets:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def take(self, keys: Sequence[BucketKey]) -> BucketDecision | None:
        """One token from each of ``keys`` in Redis, all or none; None if Redis did not answer
        within ``wait`` seconds, or is away."""
        if not keys:
            return ALLOWED
        if not self._link.up:
            return None
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self._enqueue(keys)), self._wait)
        except (TimeoutError, redis.RedisError):
            return None

    def take_now(self, keys: Sequence[BucketKey], timeout: float) -> BucketDecision | None:
        """`take` for a thread of the caller's own (tests, tools): blocks up to ``timeout``."""
        if not keys:
            return ALLOWED
        answer = self._enqueue(keys)
        try:
            return answer.result(timeout)
        except (concurrent.futures.TimeoutError, redis.RedisError):
            answer.cancel()
            return None

    def _enqueue(self, keys: Sequence[BucketKey]) -> concurrent.futures.Future[BucketDecision]:
        answer: concurrent.futures.Future[BucketDecision] = concurrent.futures.Future()
        with self._lock:
            self._waiting.append((keys, answer))
        # One job per take; the first to run takes every one waiting, the others find none.
        self._link.submit(self._run_waiting).add_done_callback(self._unrun)
        return answer

    # ---- the link's thread ----------------------------------------------------------------

    def _run_waiting(self, client: redis.Redis) -> None:
        """Every take waiting, in one pipeline (each script atomic on its own)."""
        with self._lock:
            batch, self._waiting = self._waiting, []
        batch = [(keys, answer) for keys, answer in batch if answer.set_running_or_notify_cancel()]
        if not batch:
            return
        if self._script is None:
            self._script = client.register_script(_TAKE)
        now = "" if self._clock is None else f"{self._clock.wall() * 1000:.3f}"
        pipe = client.pipeline(transaction=False)
        for keys, _ in batch:
            args: list[str] = [now]
            for key in keys:
                args += [repr(key.rate.per_second / 1000.0), repr(key.rate.burst)]
            self._script(keys=[LIMIT_PREFIX + key.name for key in keys], args=args, client=pipe)
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            for _, answer in batch:
                answer.set_exception(exc)
            raise  # the link notes an outage
        for (keys, answer), reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                answer.set_exception(reply)
            else:
                answer.set_result(_decision(keys, reply))

    def _unrun(self, job: concurrent.futures.Future[Any]) -> None:
        """The link failed the job without running it (Redis away, link closed): the takes it
        would have run fail now rather than wait out their callers' timeouts."""
        exc = job.exception()
        if exc is not None:
            self._fail_waiting(exc)

    def _fail_waiting(self, exc: BaseException) -> None:
        with self._lock:
            batch, self._waiting = self._waiting, []
        for _, answer in batch:
            if answer.set_running_or_notify_cancel():
                answer.set_exception(exc)


def _decision(keys: Sequence[BucketKey], reply: Any) -> BucketDecision:
    if int(reply[0]) == 1:
        return ALLOWED
    return BucketDecision(False, int(reply[1]) / 1000.0, keys[int(reply[2]) - 1])
