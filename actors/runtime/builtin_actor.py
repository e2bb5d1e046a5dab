"""`BuiltinActor`: runs the built-in tools off the registry actor's thread, within their timeouts."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from typing import Any

from actors.builtin.deadline import until
from actors.runtime.answering import AnsweringActor
from actors.runtime.messages import CallTool
from actors.runtime.refusals import answer_refusal
from actors.runtime.reply import settle
from actors.runtime.timers import TimerService
from actors.tools import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    ErrorType,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    duration_text,
)

__all__ = ["DEFAULT_TIMEOUT", "MAX_QUEUED", "WORKERS", "BuiltinActor"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
"""Seconds a built-in call may take when it names no timeout (the `Runtime` waits as long)."""
WORKERS = 4
"""Built-in calls that run at once."""
MAX_QUEUED = 256
"""Built-in calls that may wait for a worker; more are refused at once."""

_call_ids = itertools.count(1)


class BuiltinActor(AnsweringActor):
    """Executes ``builtin/*`` calls with a `ToolRunner` on a few worker threads.

    Built-in tools do local file and git work that blocks: it runs on the workers, so one slow
    call (a large search, a slow git) neither holds up the others nor outlives its timeout:
    the caller gets a ``timeout`` result at the deadline even if the work goes on. A call
    answered before a worker takes it up (timed out, or cancelled by its caller) never runs.
    """

    stopped_reason = "the built-in tools stopped"

    def __init__(
        self,
        registry: ToolRegistry,
        namespace: str = "builtin",
        *,
        timers: TimerService,
        workers: int = WORKERS,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        super().__init__()
        self.runner = ToolRunner(registry)
        self.namespace = namespace
        self.timers = timers
        self.max_queued = max_queued
        # Jobs waiting for a worker; None tells a worker to end. Bounded: with every worker
        # stuck on slow calls, a queue without end would hold work that can only time out.
        self.work: queue.Queue[_BuiltinJob | None] = queue.Queue(maxsize=max_queued + workers)
        self.workers = [
            threading.Thread(target=self._work, name=f"mcp-actors-builtin-{i}", daemon=True)
            for i in range(workers)
        ]
        # Started here, not in on_start: they exist once `BuiltinActor.start` returns.
        for worker in self.workers:
            worker.start()

    def _work(self) -> None:
        while (job := self.work.get()) is not None:
            job.run()

    def on_receive(self, message: Any) -> Any:
        match message:
            case CallTool():
                try:
                    self._call(message)
                except Exception as exc:
                    logger.exception("builtin: %s/%s failed", self.namespace, message.tool)
                    settle(message.reply, ToolResult.fail(ErrorType.EXECUTION, f"{exc!r}"))
            case _:
                logger.debug("builtin: ignored %r", message)
        return None

    def _call(self, call: CallTool) -> None:
        # The one check, once: here all of it but the input schema (which may take up to the
        # pattern budget), which the worker checks before it runs the tool.
        offered = {spec.tool_name: spec for spec in self.runner.registry.list(namespace=self.namespace)}
        refusal = call.refusal(
            DEFAULT_MAX_ARGUMENT_BYTES, offered=offered, server=self.namespace, schema=False
        )
        if refusal is not None:
            answer_refusal(call, refusal, self.namespace)
            return
        name = f"{self.namespace}/{call.tool}"
        if self.work.qsize() >= self.max_queued:
            # Execution: nothing ran, and the caller may try again once the workers catch up.
            busy = f"{name} was not run: the built-in tools are busy ({self.max_queued} calls queued)"
            settle(call.reply, ToolResult.fail(ErrorType.EXECUTION, busy))
            return
        job = _BuiltinJob(call, name, DEFAULT_TIMEOUT if call.timeout is None else call.timeout, self)
        self.timers.schedule(job.key, job.timeout, job.expire)
        self.work.put_nowait(job)

    def on_stop(self) -> None:
        # Queued work is dropped, its callers told so; running work finishes, then workers end.
        while True:
            try:
                job = self.work.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.cancel(self.stopped_reason)
        for _ in self.workers:
            self.work.put_nowait(None)


class _BuiltinJob:
    """One built-in call on its way to a worker. Its reply decides who goes first: a worker
    marks it running, or the deadline (or the caller's cancel) answers it before that."""

    def __init__(self, call: CallTool, name: str, timeout: float, actor: BuiltinActor) -> None:
        self.call = call
        self.name = name
        self.timeout = timeout
        self.arguments = dict(call.arguments)
        self.runner = actor.runner
        self.timers = actor.timers
        self.key = ("builtin-deadline", next(_call_ids))
        self.received = time.monotonic()

    def run(self) -> None:
        """On a worker: run the tool, unless the call was answered while it waited."""
        if not self._claim():
            logger.debug("builtin: %s was answered before it ran (%s); dropped", self.name, self._outcome())
            self.timers.cancel(self.key)
            return
        try:
            # Tools that can stop early (a long search) stop at the caller's deadline.
            with until(self.received + self.timeout):
                result = self.runner.execute(self.name, self.arguments, shape_checked=True)
        except Exception as exc:  # execute raises only for a missing tool; be safe anyway
            result = ToolResult.fail(ErrorType.EXECUTION, f"{exc!r}")
        self.timers.cancel(self.key)
        settle(self.call.reply, result)

    def expire(self) -> None:
        """On the timer thread: the deadline passed."""
        limit = duration_text(self.timeout)
        if self.call.reply.running():
            why = f"{self.name} took longer than {limit}"
        else:
            why = f"{self.name} did not start within {limit}: the built-in tools were busy"
        settle(self.call.reply, ToolResult.fail(ErrorType.TIMEOUT, why))

    def cancel(self, why: str) -> None:
        self.timers.cancel(self.key)
        settle(self.call.reply, ToolResult.fail(ErrorType.CANCELLED, f"{self.name}: {why}"))

    def _claim(self) -> bool:
        try:
            return self.call.reply.set_running_or_notify_cancel()
        except RuntimeError:  # already answered: its deadline came first
            return False

    def _outcome(self) -> str:
        # Only for a reply that is done: `_claim` said so.
        reply = self.call.reply
        if reply.cancelled():
            return "cancelled by its caller"
        if reply.exception(timeout=0) is not None:
            return "failed"
        return reply.result(timeout=0).error or "answered"
