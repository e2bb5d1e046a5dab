"""`BuiltinActor`: runs the built-in tools off the registry actor's thread, within their timeouts."""

from __future__ import annotations

import itertools
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pykka

from actors.builtin.deadline import until
from actors.runtime.messages import CallTool
from actors.runtime.reply import settle
from actors.runtime.timers import TimerService
from actors.tools import ErrorType, ToolRegistry, ToolResult, ToolRunner

__all__ = ["BuiltinActor"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
WORKERS = 4

_call_ids = itertools.count(1)


class BuiltinActor(pykka.ThreadingActor):
    """Executes ``builtin/*`` calls with a `ToolRunner` on a few worker threads.

    Built-in tools do local file and git work that blocks: it runs on the workers, so one slow
    call (a large search, a slow git) neither holds up the others nor outlives its timeout:
    the caller gets a ``timeout`` result at the deadline even if the work goes on.
    """

    use_daemon_thread = True

    def __init__(self, registry: ToolRegistry, namespace: str = "builtin", *, timers: TimerService) -> None:
        super().__init__()
        self.runner = ToolRunner(registry)
        self.namespace = namespace
        self.timers = timers
        # (run, cancel) pairs; None tells a worker to end.
        self.work: queue.SimpleQueue[tuple[Callable[[], None], Callable[[], None]] | None] = (
            queue.SimpleQueue()
        )
        self.workers = [
            threading.Thread(target=self._work, name=f"mcp-actors-builtin-{i}", daemon=True)
            for i in range(WORKERS)
        ]
        # Started here, not in on_start: they exist once `BuiltinActor.start` returns.
        for worker in self.workers:
            worker.start()

    def _work(self) -> None:
        while (job := self.work.get()) is not None:
            job[0]()

    def on_receive(self, message: Any) -> Any:
        match message:
            case CallTool():
                try:
                    self._call(message)
                except Exception as exc:
                    logger.exception("builtin: %s/%s failed", self.namespace, message.tool)
                    settle(message.reply, ToolResult.fail(ErrorType.EXECUTION, f"{exc!r}"))
        return None

    def _call(self, call: CallTool) -> None:
        name = f"{self.namespace}/{call.tool}"
        if self.runner.registry.get(name) is None:
            settle(call.reply, ToolResult.fail(ErrorType.NOT_FOUND, f"no built-in tool {name!r}"))
            return
        if not isinstance(call.arguments, Mapping):
            kind = type(call.arguments).__name__
            settle(
                call.reply,
                ToolResult.fail(ErrorType.VALIDATION, f"arguments must be an object, got {kind}"),
            )
            return
        timeout = DEFAULT_TIMEOUT if call.timeout is None else call.timeout
        if not (math.isfinite(timeout) and timeout > 0):
            settle(
                call.reply,
                ToolResult.fail(
                    ErrorType.VALIDATION,
                    f"timeout must be a positive number, got {timeout!r}",
                ),
            )
            return
        key = ("builtin-deadline", next(_call_ids))
        arguments = dict(call.arguments)
        started = time.monotonic()

        def expire() -> None:
            settle(call.reply, ToolResult.fail(ErrorType.TIMEOUT, f"{name} took longer than {timeout}s"))

        def run() -> None:
            try:
                # Tools that can stop early (a long search) stop at the caller's deadline.
                with until(started + timeout):
                    result = self.runner.execute(name, arguments)
            except Exception as exc:  # execute raises only for a missing tool; be safe anyway
                result = ToolResult.fail(ErrorType.EXECUTION, f"{exc!r}")
            self.timers.cancel(key)
            settle(call.reply, result)

        def cancel() -> None:
            self.timers.cancel(key)
            settle(call.reply, ToolResult.fail(ErrorType.CANCELLED, f"{name}: the runtime stopped"))

        self.timers.schedule(key, timeout, expire)
        self.work.put((run, cancel))

    def on_stop(self) -> None:
        # Queued work is dropped, its callers told so; running work finishes, then workers end.
        while True:
            try:
                job = self.work.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[1]()
        for _ in self.workers:
            self.work.put(None)
