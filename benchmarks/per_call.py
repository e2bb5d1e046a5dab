"""Per-call latency: ours against the SDK alone, fastmcp's ``Client`` and two floors.

Every client runs in this process, in batches of a few calls that alternate round by round, so
a slow spell of a shared machine (seconds long) falls on all of them alike; a ratio is the
median of the per-round ratios. The floors are the SDK itself driven across threads:

- ``sdk_from_thread``: the caller hands the call to the SDK's loop thread
  (``run_coroutine_threadsafe``), two crossings;
- ``sdk_relayed``: the caller hands it to a relay thread, which hands it to the loop, three
  crossings: the shape of the actor hop (caller -> server actor -> event loop -> caller) with
  no code of ours in it. What ``rt.call_tool`` costs beyond it is the runtime's own work.
"""

from __future__ import annotations

import concurrent.futures
import functools
import importlib.metadata
import importlib.util
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from actors import Runtime
from benchmarks.common import SDKLoop, fastmcp_client, ms, runtime_config, summary
from benchmarks.suite import ECHO_ARGS, Sizes, _call, _message, _sdk_batch

__all__ = ["per_call_overhead"]


class _Relay:
    """A thread that hands each call on to the SDK's loop: the floor of three crossings."""

    def __init__(self, sdk: SDKLoop, client: Any) -> None:
        self._sdk, self._client = sdk, client
        self._inbox: queue.SimpleQueue[concurrent.futures.Future[Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="bench-relay", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (reply := self._inbox.get()) is not None:
            inner = self._sdk.submit(self._client.call_tool("echo", ECHO_ARGS))
            inner.add_done_callback(functools.partial(_pass_on, reply))

    def call(self, timeout: float = 30.0) -> Any:
        reply: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._inbox.put(reply)
        return reply.result(timeout)

    def close(self) -> None:
        self._inbox.put(None)
        self._thread.join(10)


def _pass_on(reply: concurrent.futures.Future[Any], done: concurrent.futures.Future[Any]) -> None:
    if (error := done.exception()) is not None:
        reply.set_exception(error)
    else:
        reply.set_result(done.result())


def _timed(call: Callable[[], Any], count: int) -> list[float]:
    out = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def _fastmcp(sdk: SDKLoop) -> Any:
    """fastmcp's ``Client`` connected on ``sdk``'s loop, or None where fastmcp is not installed."""
    if importlib.util.find_spec("fastmcp") is None:
        return None
    (client,) = sdk.connect(1, client=fastmcp_client)
    return client


def per_call_overhead(sizes: Sizes) -> dict[str, Any]:
    """Median latency of one echo call: the SDK alone, its floors and fastmcp's ``Client``
    against `rt.call_tool` and the message API."""
    batch = sizes.overhead_batch
    with SDKLoop() as sdk, Runtime.start(runtime_config(["echo"])) as rt:
        (client,) = sdk.connect(1)
        fast = _fastmcp(sdk)
        relay = _Relay(sdk, client)
        try:
            kinds: dict[str, Callable[[], list[float]]] = {
                "sdk": lambda: sdk.run(_sdk_batch(client, batch)),
                "call_tool": lambda: [_call(rt, "echo/echo", ECHO_ARGS) for _ in range(batch)],
                "message": lambda: [_message(rt, "echo", "echo", ECHO_ARGS) for _ in range(batch)],
                "sdk_from_thread": lambda: _timed(
                    lambda: sdk.run(client.call_tool("echo", ECHO_ARGS)), batch
                ),
                "sdk_relayed": lambda: _timed(relay.call, batch),
            }
            if fast is not None:
                kinds["fastmcp"] = lambda: sdk.run(_sdk_batch(fast, batch))
            _call(rt, "echo/echo", ECHO_ARGS)  # the lazy start
            for _ in range(max(1, sizes.overhead_warmup // batch)):
                for run in kinds.values():
                    run()
            medians = _rounds(kinds, sizes.overhead_rounds)
        finally:
            relay.close()
    return {"batch": batch, **_summarise(medians, fast is not None)}


def _rounds(
    kinds: dict[str, Callable[[], list[float]]], rounds: int
) -> dict[str, list[tuple[float, list[float]]]]:
    """Each kind's (batch median, batch) per round; the order turns by one each round."""
    order = list(kinds)
    out: dict[str, list[tuple[float, list[float]]]] = {name: [] for name in order}
    for round_no in range(rounds):
        shift = round_no % len(order)
        for name in order[shift:] + order[:shift]:
            batch = kinds[name]()
            out[name].append((sorted(batch)[len(batch) // 2], batch))
    return out


def _summarise(medians: dict[str, list[tuple[float, list[float]]]], with_fastmcp: bool) -> dict[str, Any]:
    def paired(name: str, against: str) -> float:
        ratios = [m / r for (m, _), (r, _) in zip(medians[name], medians[against], strict=True)]
        return float(summary(ratios)["median"])

    out: dict[str, Any] = {}
    for name, rounds in medians.items():
        values = [sample for _, batch in rounds for sample in batch]
        out[name] = {"samples_ms": ms(values), **summary(ms(values))}
    for name, row in out.items():
        if name != "sdk":
            row["ratio"] = row["median"] / out["sdk"]["median"]
    out["round_ratio_median"] = {name: paired(name, "sdk") for name in ("call_tool", "message")}
    out["floor_ratio_median"] = {name: paired(name, "sdk") for name in ("sdk_from_thread", "sdk_relayed")}
    out["call_tool_vs_relayed"] = paired("call_tool", "sdk_relayed")
    if with_fastmcp:
        out["fastmcp_version"] = importlib.metadata.version("fastmcp")
        out["vs_fastmcp"] = {
            name: paired(name, "fastmcp") for name in ("call_tool", "message", "sdk", "sdk_relayed")
        }
    return out
