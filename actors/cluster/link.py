"""`RedisLink`: a replica's one way to Redis, on a thread of its own.

Nothing on an actor thread or the event loop talks to Redis: they hand jobs to the link
(`submit` puts them in a queue and returns). The link's thread runs them with a client whose
every operation has a short timeout, runs periodic jobs (heartbeat, schema refresh), and keeps
track of whether Redis is there. When it goes away the link says so once (a warning), drops
jobs until it is back, probes with a growing backoff, says once that it is back, and then runs
its catch-up callbacks: the owners of what Redis holds write it again (Redis may have come back
empty). Shared state is synced, not replayed: a dropped job is repaired by the catch-up.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

__all__ = ["PREFIX", "RedisLink"]

logger = logging.getLogger(__name__)

PREFIX = "mcp-actors:"
"""Every key and channel the cluster uses starts with this."""

_T = TypeVar("_T")

Job = Callable[[redis.Redis], Any]

_BACKOFF_FIRST = 0.2
_BACKOFF_MAX = 3.0
_CLOSE_TIMEOUT = 5.0


@dataclass
class _Every:
    interval: float
    job: Job
    due: float = 0.0


class RedisLink:
    """A client of Redis at ``url`` used only on the link's thread.

    ``timeout`` bounds each operation (connect, read, write).
    """

    def __init__(self, url: str, *, timeout: float = 1.0, name: str = "redis") -> None:
        self.url = url
        self.timeout = timeout
        self._client: redis.Redis = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=0,
            retry_on_timeout=False,
            decode_responses=True,
        )
        self._jobs: queue.Queue[tuple[Job, concurrent.futures.Future[Any]] | None] = queue.Queue()
        self._periodic: list[_Every] = []
        self._on_reconnect: list[Job] = []
        self._lock = threading.Lock()
        self._up = True
        self._backoff = _BACKOFF_FIRST
        self._next_probe = 0.0
        self._thread = threading.Thread(target=self._run, name=f"cluster-{name}", daemon=True)
        self._started = False
        self._closing = False

    @property
    def up(self) -> bool:
        """Whether the last operation reached Redis."""
        with self._lock:
            return self._up

    def key(self, *parts: str) -> str:
        """``mcp-actors:<part>:<part>...``."""
        return PREFIX + ":".join(parts)

    def start(self) -> RedisLink:
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        """Run ``job(client)`` on the link's thread; never blocks. Its future fails with
        `redis.ConnectionError` if Redis is away (the job is dropped)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put((job, future))
        return future

    def call(self, job: Callable[[redis.Redis], _T], timeout: float) -> _T:
        """Run ``job`` on the link's thread and wait for it (for a caller's own thread)."""
        return self.submit(job).result(timeout)  # type: ignore[no-any-return]

    def every(self, interval: float, job: Job) -> None:
        """Run ``job`` every ``interval`` seconds while Redis is there (first run at once)."""
        with self._lock:
            self._periodic.append(_Every(interval, job))
        self._jobs.put(None)  # wake the thread to schedule it

    def on_reconnect(self, callback: Job) -> None:
        """Run ``callback(client)`` on the link's thread each time Redis is back after an outage."""
        with self._lock:
            self._on_reconnect.append(callback)

    def close(self) -> None:
        """Stop the thread (jobs still queued fail) and the client's connections."""
        if self._started and self._thread.is_alive():
            self._closing = True
            self._jobs.put(None)
            self._thread.join(_CLOSE_TIMEOUT)
        self._client.close()

    # ---- the link's thread ----------------------------------------------------------------

    def _run(self) -> None:
        while not self._closing:
            wait = self._due_in()
            try:
                item = self._jobs.get(timeout=max(0.0, wait))
            except queue.Empty:
                item = None
            if self._closing:
                if item is not None:
                    item[1].set_exception(redis.ConnectionError("the cluster link is closed"))
                break
            if not self._reachable():
                if item is not None:
                    item[1].set_exception(redis.ConnectionError(f"Redis at {self.url} is unavailable"))
                continue
            if item is not None:
                job, future = item
                if future.set_running_or_notify_cancel():
                    self._attempt(job, future)
            self._run_due()
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1].set_exception(redis.ConnectionError("the cluster link is closed"))

    def _due_in(self) -> float:
        now = time.monotonic()
        with self._lock:
            if not self._up:
                return self._next_probe - now  # periodic jobs wait for Redis
            dues = [every.due for every in self._periodic]
        return min(dues, default=now + 1.0) - now

    def _run_due(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [every for every in self._periodic if every.due <= now]
        for every in due:
            every.due = now + every.interval
            if not self._attempt(every.job, None):
                return

    def _attempt(self, job: Job, future: concurrent.futures.Future[Any] | None) -> bool:
        try:
            result = job(self._client)
        except redis.RedisError as exc:
            if future is not None:
                future.set_exception(exc)
            if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
                self._went_down(exc)
                return False
            logger.warning("cluster: a Redis operation failed: %s", exc)
            return True
        except Exception as exc:
            # A job's own bug: reported, and the link goes on.
            logger.exception("cluster: a job on the Redis link failed")
            if future is not None:
                future.set_exception(exc)
            return True
        if future is not None:
            future.set_result(result)
        return True

    def _went_down(self, exc: BaseException) -> None:
        with self._lock:
            was_up, self._up = self._up, False
        if was_up:
            logger.warning(
                "cluster: Redis at %s is unavailable (%s); serving from local state", self.url, exc
            )
            self._backoff = _BACKOFF_FIRST
            self._next_probe = time.monotonic() + self._backoff

    def _reachable(self) -> bool:
        """Whether Redis is there; while it is not, probe it no more often than the backoff."""
        if self.up:
            return True
        now = time.monotonic()
        if now < self._next_probe:
            return False
        try:
            self._client.ping()
        except redis.RedisError:
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            self._next_probe = now + self._backoff
            return False
        with self._lock:
            self._up = True
            callbacks = list(self._on_reconnect)
            for every in self._periodic:
                every.due = 0.0
        logger.warning("cluster: Redis at %s is back; catching up", self.url)
        for callback in callbacks:
            if not self._attempt(callback, None):
                break
        return self.up
