"""How much loop one call costs: turns of the event loop and callbacks it runs, per call.

Counted on the runtime's loop thread for sequential `rt.call_tool`s, and on the SDK's own loop
for the same calls made by `mcp.Client` alone, against the same server. Each turn is one pass
of the selector (a `select` system call and the ready callbacks), so fewer turns per call is
less CPU spent only on going round. The counters wrap asyncio's own methods at run time and
count only the watched thread (nothing under ``actors/`` is edited).
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.events
import collections
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from benchmarks.common import runtime_config, sdk_parameters

__all__ = ["measure"]

ECHO_ARGS = {"text": "hello, benchmark"}
_WARM_UP = 50


class _Counter:
    def __init__(self) -> None:
        self.watched: str | None = None
        self.turns = 0
        self.callbacks: collections.Counter[str] = collections.Counter()

    def watch(self, thread: str | None) -> None:
        self.watched, self.turns = thread, 0
        self.callbacks.clear()

    def result(self, calls: int) -> dict[str, Any]:
        kinds = {kind: round(n / calls, 2) for kind, n in self.callbacks.most_common(8)}
        return {
            "turns_per_call": self.turns / calls,
            "callbacks_per_call": sum(self.callbacks.values()) / calls,
            "callbacks": kinds,
        }


def _kind(callback: Any) -> str:
    name = getattr(callback, "__qualname__", None)
    if name is None:  # a task's step, wrapped by the C implementation
        return "task step" if type(callback).__name__ == "TaskStepMethWrapper" else type(callback).__name__
    return str(name)


@contextlib.contextmanager
def _counting(counter: _Counter) -> Iterator[None]:
    loop_class: Any = asyncio.base_events.BaseEventLoop
    handle_class: Any = asyncio.events.Handle
    run_once, run = loop_class._run_once, handle_class._run

    def counted_run_once(self: Any) -> None:
        if threading.current_thread().name == counter.watched:
            counter.turns += 1
        run_once(self)

    def counted_run(self: Any) -> None:
        if threading.current_thread().name == counter.watched:
            counter.callbacks[_kind(self._callback)] += 1
        run(self)

    loop_class._run_once, handle_class._run = counted_run_once, counted_run
    try:
        yield
    finally:
        loop_class._run_once, handle_class._run = run_once, run


def _ours(calls: int, counter: _Counter) -> dict[str, Any]:
    from actors import Runtime
    from actors.config import load_config
    from actors.mcp.loop import THREAD_NAME

    with Runtime.start(load_config(runtime_config(["echo"]))) as rt:
        for _ in range(_WARM_UP):
            rt.call_tool("echo/echo", ECHO_ARGS)
        counter.watch(THREAD_NAME)
        for _ in range(calls):
            rt.call_tool("echo/echo", ECHO_ARGS)
        result = counter.result(calls)
        counter.watch(None)
    return result


def _sdk(calls: int, counter: _Counter) -> dict[str, Any]:
    from mcp import Client

    async def run() -> dict[str, Any]:
        async with Client(sdk_parameters()) as client:
            for _ in range(_WARM_UP):
                await client.call_tool("echo", ECHO_ARGS)
            counter.watch(threading.current_thread().name)
            for _ in range(calls):
                await client.call_tool("echo", ECHO_ARGS)
            result = counter.result(calls)
            counter.watch(None)
            return result

    return asyncio.run(run())


def measure(calls: int) -> dict[str, Any]:
    """Turns and callbacks per call on the runtime's loop (``ours``) and the SDK's (``sdk``)."""
    counter = _Counter()
    with _counting(counter):
        return {"calls": calls, "ours": _ours(calls, counter), "sdk": _sdk(calls, counter)}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 500), indent=2))
