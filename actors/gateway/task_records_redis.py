"""`RedisTaskRecords`: the records of the tasks the gateway holds, shared by every replica.

``mcp-actors:task:<task id>`` is the record as JSON (`actors.gateway.task_records.TaskRecord`),
expiring with it (``ttlMs`` from the task's creation): Redis sweeps what is past its time.
``mcp-actors:task-caller:<caller>`` is the set of the caller's tasks that have not ended, for
the cap on them (an id whose record ended or expired is dropped from it as it is counted).

Nothing on the gateway's loop talks to Redis: each operation is a job of a `RedisLink` thread
of its own (a record's JSON is written there too), awaited for at most ``wait`` seconds. When
Redis is away, a request about a held task fails (a task cannot be created without its record).

Needs the ``redis`` package (the ``cluster`` extra): imported only where ``--cluster`` is.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from actors.cluster.link import RedisLink
from actors.gateway.task_records import TaskRecord

__all__ = ["RedisTaskRecords"]

_T = TypeVar("_T")

DEFAULT_WAIT = 2.0
"""Seconds a request waits at most for Redis's answer about a task."""


class RedisTaskRecords:
    """`actors.gateway.task_records.TaskRecords` in the cluster's Redis."""

    def __init__(self, url: str, *, wait: float = DEFAULT_WAIT) -> None:
        self._link = RedisLink(url, name="tasks")
        self._wait = wait

    @classmethod
    def start(cls, url: str, **options: Any) -> RedisTaskRecords:
        records = cls(url, **options)
        records._link.start()
        return records

    def close(self) -> None:
        self._link.close()

    def __enter__(self) -> RedisTaskRecords:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def put(self, record: TaskRecord) -> None:
        key, owned = self._link.key("task", record.task_id), self._link.key("task-caller", record.caller)

        def write(client: redis.Redis) -> None:
            left = int((record.expires() - time.time()) * 1000)
            pipe = client.pipeline(transaction=True)
            if left <= 0:
                pipe.delete(key)
                pipe.srem(owned, record.task_id)
            else:
                pipe.set(key, json.dumps(record.to_json()), px=left)
                if record.status.terminal:
                    pipe.srem(owned, record.task_id)
                else:
                    pipe.sadd(owned, record.task_id)
                    pipe.pexpire(owned, record.ttl_ms)
            pipe.execute()

        await self._run(write)

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._link.key("task", task_id)

        def read(client: redis.Redis) -> TaskRecord | None:
            data = client.get(key)
            return TaskRecord.from_json(json.loads(str(data))) if data else None

        return await self._run(read)

    async def unfinished(self, caller: str) -> int:
        owned = self._link.key("task-caller", caller)

        def count(client: redis.Redis) -> int:
            ids = sorted(str(task_id) for task_id in client.smembers(owned))
            if not ids:
                return 0
            values = client.mget([self._link.key("task", task_id) for task_id in ids])
            gone = []
            running = 0
            for task_id, data in zip(ids, values, strict=True):
                record = TaskRecord.from_json(json.loads(str(data))) if data else None
                if record is None or record.status.terminal:
                    gone.append(task_id)
                else:
                    running += 1
            if gone:
                client.srem(owned, *gone)
            return running

        return await self._run(count)

    async def _run(self, job: Callable[[redis.Redis], _T]) -> _T:
        future = self._link.submit(job)
        try:
            result: _T = await asyncio.wait_for(asyncio.wrap_future(future), self._wait)
        except TimeoutError:
            future.cancel()
            raise ConnectionError(f"Redis gave no answer about tasks within {self._wait:g} s") from None
        return result
