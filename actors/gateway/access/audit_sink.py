"""`AuditSink`: the audit's writer thread, its bounded queue, its file, and its recent records.

The gateway's loop only appends an event to the queue (`submit`, never blocking, and waking the
writer only when it sleeps). The writer thread takes what is queued in batches, at most one batch
per `_LINGER` under load, has each event made into a record (``finish``: the digest, the
redaction, the JSON), keeps the last ``keep`` records in memory, appends the batch to the file
(``"-"``: stdout) and flushes it, so a crash of the process loses at most the batch in hand and
what came in the last `_LINGER`.
When the queue is full the event is dropped and counted; the writer says so in the log (once a
second at most), so a slow disk costs records, never a request's time.

With no file the records are only for reading (`recent`: the operator's page): the last ``keep``
events are kept as they came and made into records when read, on the reader's thread. No
writer thread runs then, and a request costs no record made and no wake-up.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TextIO, TypeVar

__all__ = ["DEFAULT_CAPACITY", "STDOUT", "AuditSink", "Line"]

logger = logging.getLogger(__name__)

STDOUT = "-"
"""``"file": "-"``: the records go to stdout (the HTTP gateway's; over stdio it carries MCP)."""
DEFAULT_CAPACITY = 10_000
"""Events queued at most for the writer."""

_POLL = 0.5
"""Seconds the writer waits for an event before it looks whether it should stop."""
_LINGER = 0.02
"""Seconds the writer rests after a batch, so that a busy gateway wakes it once per batch, not
once per request."""
_REPORT_EVERY = 1.0
_CLOSE_TIMEOUT = 10.0


class Line(Protocol):
    """A record the sink can write: one JSON line."""

    def line(self) -> str: ...


_Event = TypeVar("_Event")
_Record = TypeVar("_Record", bound=Line)


class AuditSink(Generic[_Event, _Record]):
    """Writes audit records as JSON lines on a thread of its own.

    Who owns what: the queue (a deque: appends and pops are atomic), the writer's wake-up
    event and the counters are shared (counters under the lock); the file, once
    `start` opened it on the caller's thread, is the writer thread's alone; the recent records
    (immutable `AuditRecord` values) are kept under a lock and read from any thread.
    """

    def __init__(
        self,
        file: str | None,
        *,
        keep: int,
        finish: Callable[[_Event], _Record],
        capacity: int = DEFAULT_CAPACITY,
        stdout: TextIO | None = None,
    ) -> None:
        self._path = file
        self._finish = finish
        self._stdout = stdout
        self._capacity = capacity
        self._queue: collections.deque[_Event] = collections.deque()
        self._wake = threading.Event()
        self._sleeping = False
        """Set by the writer before it waits on `_wake`: only then does a submission set it."""
        self._lock = threading.Lock()
        self._recent: collections.deque[_Record] = collections.deque(maxlen=keep)
        self._unread: collections.deque[_Event] = collections.deque(maxlen=keep)
        """Without a file: the events not yet made into records (`recent` makes them)."""
        self._reading = threading.Lock()
        """Held by a reader making `_unread` into records: one at a time, in order."""
        self._dropped = 0
        self._reported = 0
        self._submitted = 0
        self._done = 0
        self._written = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._out: TextIO | None = None
        self._failing = False
        self._last_report = 0.0
        self._thread = threading.Thread(target=self._run, name="mcp-actors-audit", daemon=True)

    def start(self) -> AuditSink[_Event, _Record]:
        """Open the file for appending (raising `OSError` if it cannot be) and start writing."""
        if self._path == STDOUT:
            self._out = self._stdout or sys.stdout
        elif self._path is not None:
            path = Path(self._path).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            self._out = path.open("a", encoding="utf-8")
        else:
            return self  # in memory only: nothing to write, no writer
        self._thread.start()
        return self

    def close(self) -> None:
        """Write what is queued, then stop the thread and close the file. Idempotent."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(_CLOSE_TIMEOUT)
        out, self._out = self._out, None
        if out is not None and self._path != STDOUT:
            out.close()

    def submit(self, event: _Event) -> bool:
        """Queue ``event`` for the writer; False (and counted) if the queue is full."""
        if self._path is None:
            with self._lock:
                self._submitted += 1
                self._done += 1
                self._unread.append(event)  # the oldest falls out past ``keep``
            return True
        if len(self._queue) >= self._capacity:
            with self._lock:
                self._dropped += 1
            return False
        with self._lock:
            self._submitted += 1
        self._queue.append(event)
        if self._sleeping:
            self._wake.set()
        return True

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    def recent(self, limit: int | None = None) -> tuple[_Record, ...]:
        with self._reading:
            with self._lock:
                unread = list(self._unread)
                self._unread.clear()
            made = self._records(unread)
            with self._lock:
                self._recent.extend(made)
                records = tuple(self._recent)
        return records if limit is None else records[max(0, len(records) - limit) :]

    def wait_written(self, timeout: float) -> bool:
        """Wait until every event queued so far is written (or failed to be)."""
        deadline = time.monotonic() + timeout
        with self._written:
            target = self._submitted
            while self._done < target:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return self._done >= target
                self._written.wait(left)
            return True

    # ---- the writer's thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            # Said before the queue is looked at: a submission after the look sees it and
            # wakes the writer, one before it is in the queue.
            self._sleeping = True
            if not self._queue:
                self._wake.wait(_POLL)
            self._sleeping = False
            self._wake.clear()
            batch = self._take()
            if batch:
                self._write(batch)
                self._stop.wait(_LINGER)
            self._report_drops()
            if not batch and self._stop.is_set() and not self._queue:
                return

    def _take(self) -> list[_Event]:
        batch = []
        with contextlib.suppress(IndexError):
            while True:
                batch.append(self._queue.popleft())
        return batch

    def _records(self, events: list[_Event]) -> list[_Record]:
        records = []
        for event in events:
            try:
                records.append(self._finish(event))
            except Exception:
                # A record that cannot be made (a bug): said, the others kept.
                logger.exception("audit: a record could not be made; it is left out")
        return records

    def _write(self, batch: list[_Event]) -> None:
        records = self._records(batch)
        self._put([record.line() + "\n" for record in records])
        with self._written:
            self._recent.extend(records)
            self._done += len(batch)
            self._written.notify_all()

    def _put(self, lines: list[str]) -> None:
        out = self._out
        if out is None or not lines:
            return
        try:
            out.write("".join(lines))
            out.flush()
        except (OSError, ValueError) as exc:
            if not self._failing:
                logger.error(
                    "audit: cannot write to %s (%s); records are kept in memory only", self._path, exc
                )
            self._failing = True
            return
        if self._failing:
            logger.warning("audit: writing to %s again", self._path)
            self._failing = False

    def _report_drops(self) -> None:
        with self._lock:
            dropped = self._dropped
        if dropped > self._reported and self._may_report():
            logger.warning(
                "audit: %d records dropped so far (%d since the last report): the writer fell behind",
                dropped,
                dropped - self._reported,
            )
            self._reported = dropped

    def _may_report(self) -> bool:
        now = time.monotonic()
        if now - self._last_report < _REPORT_EVERY:
            return False
        self._last_report = now
        return True
