"""The records of the tasks the gateway holds (`actors.gateway.held_tasks`), and where they live.

A `TaskRecord` is one task as any replica may answer for it: who made it, what it calls, which
replica (or process) runs it, its status, and once it ended its result or error; immutable,
written whole. `TaskRecords` is where they are kept: files in the cache folder for a lone
gateway (`FileTaskRecords`: a result outlives a restart), Redis with ``--cluster``
(`actors.gateway.task_records_redis`: any replica answers, a finished result outlives the
replica that ran it), or memory (`MemoryTaskRecords`, a gateway made in-process). A record is
kept ``ttlMs`` from its creation, then swept; an unfinished one counts against its caller's
cap.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from actors.mcp.tasks import TaskStatus
from actors.mcp.transport import JSONObject
from actors.runtime.owner import OwnerCheck
from actors.runtime.schema_cache import default_cache_folder

__all__ = [
    "POLL_INTERVAL_MS",
    "FileTaskRecords",
    "MemoryTaskRecords",
    "TaskRecord",
    "TaskRecords",
    "default_task_folder",
    "now_text",
]

_SWEEP_EVERY = 60.0
"""Seconds between two sweeps of a folder of records."""

POLL_INTERVAL_MS = 500
"""The ``pollIntervalMs`` the gateway asks of its clients for the tasks it holds."""


def now_text() -> str:
    """Now, as the extension writes times (ISO 8601, UTC, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TaskRecord:
    """One held task. ``created`` is wall-clock seconds (records cross replicas); ``replica``
    the replica that runs it (None: a lone gateway)."""

    task_id: str
    caller: str
    namespace: str
    tool: str
    ttl_ms: int
    created: float = field(default_factory=time.time)
    created_at: str = field(default_factory=now_text)
    last_updated_at: str = ""
    replica: str | None = None
    status: TaskStatus = TaskStatus.WORKING
    status_message: str | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
    input_requests: JSONObject = field(default_factory=dict)
    answers: JSONObject = field(default_factory=dict)
    """Answers to ``input_requests`` given on another replica, for the one that runs the call
    to take (`actors.gateway.held_tasks`)."""

    def moved(self, status: TaskStatus, **changes: Any) -> TaskRecord:
        """This record with a new status (and other ``changes``), updated now."""
        return dataclasses.replace(self, status=status, last_updated_at=now_text(), **changes)

    def expires(self) -> float:
        """When the record goes (wall-clock seconds)."""
        return self.created + self.ttl_ms / 1000.0

    def answer(self, *, detailed: bool) -> JSONObject:
        """As the extension writes it: a ``CreateTaskResult``'s task, or (``detailed``) the
        ``tasks/get`` answer, with its result, error or input requests."""
        data: JSONObject = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at or self.created_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            data["statusMessage"] = self.status_message
        if detailed:
            if self.status == TaskStatus.COMPLETED and self.result is not None:
                data["result"] = self.result
            if self.status == TaskStatus.FAILED and self.error is not None:
                data["error"] = self.error
            if self.status == TaskStatus.INPUT_REQUIRED and self.input_requests:
                data["inputRequests"] = self.input_requests
        return data

    def to_json(self) -> JSONObject:
        return {**dataclasses.asdict(self), "status": self.status.value}

    @classmethod
    def from_json(cls, data: JSONObject) -> TaskRecord:
        return cls(**{**data, "status": TaskStatus(data["status"])})


class TaskRecords(Protocol):
    """Where held tasks' records live. Awaited on the gateway's loop; an implementation that
    does I/O does it off the loop."""

    async def put(self, record: TaskRecord) -> None:
        """Write ``record`` whole (a new one, or a new state of one)."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``; None when there is none (never, or swept)."""
        ...

    async def unfinished(self, caller: str) -> int:
        """How many of ``caller``'s tasks have not ended."""
        ...


class MemoryTaskRecords:
    """`TaskRecords` in this process; swept as it is written. Owned by the gateway's loop."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._owner = OwnerCheck("the gateway's task records")

    async def put(self, record: TaskRecord) -> None:
        self._owner.touch()
        self._sweep(time.time())
        self._records[record.task_id] = record

    async def get(self, task_id: str) -> TaskRecord | None:
        self._owner.touch()
        record = self._records.get(task_id)
        if record is not None and record.expires() <= time.time():
            del self._records[task_id]
            return None
        return record

    async def unfinished(self, caller: str) -> int:
        self._owner.touch()
        self._sweep(time.time())
        return sum(1 for r in self._records.values() if r.caller == caller and not r.status.terminal)

    def _sweep(self, now: float) -> None:
        for task_id in [key for key, record in self._records.items() if record.expires() <= now]:
            del self._records[task_id]


def default_task_folder() -> Path:
    """Where a lone gateway keeps the records of the tasks it holds: ``tasks`` beside the schema
    cache (``$MCP_ACTORS_CACHE_DIR/tasks``, else ``~/.cache/mcp-actors/tasks``)."""
    schemas = default_cache_folder()
    return schemas / "tasks" if os.environ.get("MCP_ACTORS_CACHE_DIR") else schemas.parent / "tasks"


class FileTaskRecords:
    """`TaskRecords` in a folder, one JSON file per task: a lone gateway's records outlive its
    process (a finished result is still there after a restart). Files are read and written off
    the loop (a worker thread each), whole (written aside, then renamed); the expired ones are
    swept at most once a minute, as records are written."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._swept = 0.0

    def _path(self, task_id: str) -> Path:
        return self.folder / f"{hashlib.sha256(task_id.encode()).hexdigest()[:32]}.json"

    async def put(self, record: TaskRecord) -> None:
        await asyncio.to_thread(self._write, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await asyncio.to_thread(self._read, self._path(task_id), time.time())

    async def unfinished(self, caller: str) -> int:
        def count() -> int:
            records = (self._read(path, time.time()) for path in self._paths())
            return sum(1 for r in records if r is not None and r.caller == caller and not r.status.terminal)

        return await asyncio.to_thread(count)

    def _paths(self) -> list[Path]:
        try:
            return [path for path in self.folder.iterdir() if path.suffix == ".json"]
        except FileNotFoundError:
            return []

    def _write(self, record: TaskRecord) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(record.task_id)
        staged = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        staged.write_text(json.dumps(record.to_json()), encoding="utf-8")
        os.replace(staged, path)
        now = time.time()
        if now - self._swept >= _SWEEP_EVERY:
            self._swept = now
            for other in self._paths():
                self._read(other, now)  # an expired record is removed as it is read

    @staticmethod
    def _read(path: Path, now: float) -> TaskRecord | None:
        try:
            record = TaskRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        if record.expires() <= now:
            path.unlink(missing_ok=True)
            return None
        return record
