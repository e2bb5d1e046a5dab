"""The benchmarks themselves: each returns a JSON-ready dict of samples and summaries.

Every comparison runs ours and the reference in the same process, interleaved round by round,
so that a slow moment of a shared machine hits both sides alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from actors import AsyncRuntime, Runtime
from actors.mcp.sdk_transport import SDKTransport
from actors.mcp.stdio_process import PDEATHSIG_SCRIPT, parent_death_launcher
from actors.runtime.messages import CallTool, StartServer
from benchmarks.common import (
    SDKLoop,
    ms,
    runtime_config,
    sdk_parameters,
    server_entry,
    summary,
    thread_cpu_seconds,
    wait_all,
)

ECHO_ARGS = {"text": "hello, benchmark"}


@dataclass(frozen=True)
class Sizes:
    """How much of each benchmark to run (``quick`` is for smoke tests and ASV)."""

    overhead_rounds: int = 60
    overhead_batch: int = 10
    overhead_warmup: int = 100
    concurrency_reps: int = 7
    concurrency_calls: int = 64
    sleep_seconds: float = 0.2
    isolation_samples: int = 100
    isolation_rounds: int = 3
    isolation_load: int = 64
    fanout_servers: int = 20
    fanout_calls: int = 1000
    fanout_inflight: int = 64
    fanout_reps: int = 3
    cold_reps: int = 9
    wrapper_reps: int = 30
    scale_servers: int = 1000
    scale_running: int = 20
    peer_calls: int = 300
    peer_reps: int = 5
    peer_rounds: int = 2
    peer_fresh_calls: int = 8
    profile_calls: int = 1500
    big_reps: int = 5


FULL = Sizes()
QUICK = Sizes(
    overhead_rounds=4,
    overhead_batch=10,
    overhead_warmup=20,
    concurrency_reps=2,
    isolation_samples=30,
    isolation_rounds=1,
    fanout_servers=4,
    fanout_calls=200,
    fanout_reps=1,
    cold_reps=2,
    wrapper_reps=5,
    scale_servers=200,
    scale_running=4,
    peer_calls=50,
    peer_reps=2,
    peer_rounds=1,
    peer_fresh_calls=2,
    profile_calls=200,
    big_reps=2,
)


def _ok(result: Any) -> None:
    if not result.success:
        raise RuntimeError(f"a benchmark call failed: {result.error_type}: {result.error}")


def _call(rt: Runtime, name: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = rt.call_tool(name, arguments, timeout=30)
    elapsed = time.perf_counter() - start
    _ok(result)
    return elapsed


def _message(rt: Runtime, namespace: str, tool: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    message = CallTool(namespace, tool, arguments)
    rt.registry.tell(message)
    result = message.reply.result(timeout=30)
    elapsed = time.perf_counter() - start
    _ok(result)
    return elapsed


async def _sdk_batch(
    client: Any, count: int, tool: str = "echo", args: dict[str, Any] | None = None
) -> list[float]:
    arguments = args if args is not None else ECHO_ARGS
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        samples.append(time.perf_counter() - start)
        if result.is_error:
            raise RuntimeError(f"the SDK reference call failed: {result.content}")
    return samples


def _start_all(rt: Runtime, namespaces: list[str], timeout: float = 120.0) -> None:
    """Start servers in parallel (one StartServer each) and wait until all run."""
    messages = [StartServer(ns) for ns in namespaces]
    for message in messages:
        rt.registry.tell(message)
    wait_all([m.reply for m in messages], timeout)


# ---- concurrency on one server --------------------------------------------------------------


def concurrency(sizes: Sizes) -> dict[str, Any]:
    """Wall time of 64 concurrent calls of a 0.2 s tool on one server: the message API from a
    thread, `rt.call_tool` from 64 threads, and the message API from an asyncio host (on the
    SDK reference's own loop thread), against the SDK's ``asyncio.gather``."""
    n, seconds = sizes.concurrency_calls, sizes.sleep_seconds
    args = {"seconds": seconds}
    ours: list[float] = []
    threaded: list[float] = []
    hosted: list[float] = []
    awaited: list[float] = []
    reference: list[float] = []
    with SDKLoop() as sdk, Runtime.start(runtime_config(["slow"])) as rt:
        (client,) = sdk.connect(1)
        _call(rt, "slow/echo", ECHO_ARGS)
        pool = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="bench-caller")

        async def sdk_wall() -> float:
            start = time.perf_counter()
            results = await asyncio.gather(*[client.call_tool("sleep", args) for _ in range(n)])
            if any(r.is_error for r in results):
                raise RuntimeError("an SDK reference call failed")
            return time.perf_counter() - start

        def ours_wall() -> float:
            start = time.perf_counter()
            messages = [CallTool("slow", "sleep", args) for _ in range(n)]
            for message in messages:
                rt.registry.tell(message)
            for result in wait_all([m.reply for m in messages], 60):
                _ok(result)
            return time.perf_counter() - start

        def threaded_wall() -> float:
            start = time.perf_counter()
            for result in pool.map(lambda _: rt.call_tool("slow/sleep", args, timeout=30), range(n)):
                _ok(result)
            return time.perf_counter() - start

        async def host_wall() -> float:
            # An asyncio host on the SDK's own loop thread: the message API, each reply awaited
            # with asyncio.wrap_future, gathered as the SDK's calls are.
            async def one() -> Any:
                message = CallTool("slow", "sleep", args)
                rt.registry.tell(message)
                return await asyncio.wait_for(asyncio.wrap_future(message.reply), 60)

            start = time.perf_counter()
            for result in await asyncio.gather(*[one() for _ in range(n)]):
                _ok(result)
            return time.perf_counter() - start

        # The same runtime through `AsyncRuntime` (entered without starting another).
        facade = sdk.run(AsyncRuntime(lambda: rt).open())

        async def facade_wall() -> float:
            start = time.perf_counter()
            calls = [facade.call_tool("slow/sleep", args, timeout=30) for _ in range(n)]
            for result in await asyncio.gather(*calls):
                _ok(result)
            return time.perf_counter() - start

        sdk.run(sdk_wall())
        ours_wall()
        threaded_wall()
        sdk.run(host_wall())
        sdk.run(facade_wall())
        runs = {"ours": ours, "sdk": reference, "threaded": threaded, "host": hosted, "facade": awaited}
        for rep in range(sizes.concurrency_reps):
            order = [
                ("ours", ours_wall),
                ("sdk", lambda: sdk.run(sdk_wall())),
                ("host", lambda: sdk.run(host_wall())),
                ("facade", lambda: sdk.run(facade_wall())),
                ("threaded", threaded_wall),
            ]
            if rep % 2:
                order.reverse()
            for name, run in order:
                runs[name].append(run())
        pool.shutdown()
    out: dict[str, Any] = {
        "calls": n,
        "tool_seconds": seconds,
        "message": {"samples_s": ours, **summary(ours)},
        "call_tool_threads": {"samples_s": threaded, **summary(threaded)},
        "asyncio_host": {"samples_s": hosted, **summary(hosted)},
        "async_runtime": {"samples_s": awaited, **summary(awaited)},
        "sdk": {"samples_s": reference, **summary(reference)},
    }
    for variant in ("asyncio_host", "async_runtime"):
        out[variant]["ratio"] = out[variant]["median"] / out["sdk"]["median"]
    return out


# ---- isolation ----------------------------------------------------------------------------


class _Load:
    """Keeps ``count`` slow calls in flight on one server until stopped (refilled on completion)."""

    def __init__(self, rt: Runtime, namespace: str, count: int, seconds: float) -> None:
        self._rt = rt
        self._namespace = namespace
        self._seconds = seconds
        self._running = True
        self._lock = threading.Lock()
        self._outstanding: set[concurrent.futures.Future[Any]] = set()
        self.completed = 0
        self.failed = 0
        for _ in range(count):
            self._send()

    def _send(self) -> None:
        message = CallTool(self._namespace, "sleep", {"seconds": self._seconds})
        with self._lock:
            self._outstanding.add(message.reply)
        message.reply.add_done_callback(self._done)
        self._rt.registry.tell(message)

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._outstanding.discard(future)
            self.completed += 1
            if future.exception() is not None or not future.result().success:
                self.failed += 1
            again = self._running
        if again:
            self._send()

    def stop(self, timeout: float = 30.0) -> None:
        with self._lock:
            self._running = False
            pending = list(self._outstanding)
        concurrent.futures.wait(pending, timeout)


def isolation(sizes: Sizes) -> dict[str, Any]:
    """Echo latency on server B, A idle vs A running 64 slow calls."""
    idle: list[float] = []
    loaded: list[float] = []
    sdk_idle: list[float] = []
    sdk_loaded: list[float] = []
    slow = 1.0
    with SDKLoop() as sdk, Runtime.start(runtime_config(["a", "b"])) as rt:
        _start_all(rt, ["a", "b"])
        for _ in range(30):
            _call(rt, "b/echo", ECHO_ARGS)
        client_a, client_b = sdk.connect(2)
        sdk.run(_sdk_batch(client_b, 30))
        load_failures = 0
        for _ in range(sizes.isolation_rounds):
            idle.extend(_call(rt, "b/echo", ECHO_ARGS) for _ in range(sizes.isolation_samples))
            load = _Load(rt, "a", sizes.isolation_load, slow)
            time.sleep(0.05)
            loaded.extend(_call(rt, "b/echo", ECHO_ARGS) for _ in range(sizes.isolation_samples))
            load.stop()
            load_failures += load.failed

            async def sdk_round() -> tuple[list[float], list[float]]:
                quiet = await _sdk_batch(client_b, sizes.isolation_samples)
                running = True

                async def keep_busy() -> None:
                    while running:
                        await client_a.call_tool("sleep", {"seconds": slow})

                busy = [asyncio.ensure_future(keep_busy()) for _ in range(sizes.isolation_load)]
                await asyncio.sleep(0.05)
                busy_samples = await _sdk_batch(client_b, sizes.isolation_samples)
                running = False
                await asyncio.gather(*busy)
                return quiet, busy_samples

            quiet, busy = sdk.run(sdk_round())
            sdk_idle.extend(quiet)
            sdk_loaded.extend(busy)
    out: dict[str, Any] = {
        "load_calls": sizes.isolation_load,
        "load_failures": load_failures,
        "idle": {"samples_ms": ms(idle), **summary(ms(idle))},
        "loaded": {"samples_ms": ms(loaded), **summary(ms(loaded))},
        "sdk_idle": {"samples_ms": ms(sdk_idle), **summary(ms(sdk_idle))},
        "sdk_loaded": {"samples_ms": ms(sdk_loaded), **summary(ms(sdk_loaded))},
    }
    out["ratio"] = out["loaded"]["median"] / out["idle"]["median"]
    out["sdk_ratio"] = out["sdk_loaded"]["median"] / out["sdk_idle"]["median"]
    return out


# ---- fan-out --------------------------------------------------------------------------------


def fan_out(sizes: Sizes) -> dict[str, Any]:
    """Throughput of echo calls spread over N servers, 64 in flight: ours vs the SDK alone."""
    names = [f"f{i:02d}" for i in range(sizes.fanout_servers)]
    calls, inflight = sizes.fanout_calls, sizes.fanout_inflight
    ours: list[float] = []
    reference: list[float] = []
    ours_cpu: list[float] = []
    sdk_cpu: list[float] = []
    ours_threads: list[dict[str, float]] = []
    with SDKLoop() as sdk, Runtime.start(runtime_config(names)) as rt:
        _start_all(rt, names)
        clients = sdk.connect(len(names), timeout=180)

        def ours_run() -> float:
            gate = threading.BoundedSemaphore(inflight)
            replies = []
            cpu = time.process_time()
            threads = thread_cpu_seconds()
            start = time.perf_counter()
            for i in range(calls):
                gate.acquire()
                message = CallTool(names[i % len(names)], "echo", ECHO_ARGS)
                message.reply.add_done_callback(lambda _: gate.release())
                rt.registry.tell(message)
                replies.append(message.reply)
            for result in wait_all(replies, 120):
                _ok(result)
            rate = calls / (time.perf_counter() - start)
            ours_cpu.append((time.process_time() - cpu) / calls * 1e6)
            after = thread_cpu_seconds()
            ours_threads.append({k: (v - threads.get(k, 0.0)) / calls * 1e6 for k, v in after.items()})
            return rate

        async def sdk_run() -> float:
            gate = asyncio.Semaphore(inflight)

            async def one(i: int) -> None:
                async with gate:
                    result = await clients[i % len(clients)].call_tool("echo", ECHO_ARGS)
                if result.is_error:
                    raise RuntimeError("an SDK reference call failed")

            cpu = time.process_time()
            start = time.perf_counter()
            await asyncio.gather(*[one(i) for i in range(calls)])
            rate = calls / (time.perf_counter() - start)
            sdk_cpu.append((time.process_time() - cpu) / calls * 1e6)
            return rate

        # Warm both sides (first calls pay for imports and caches).
        ours_run()
        sdk.run(sdk_run())
        for kept in (ours_cpu, sdk_cpu, ours_threads):
            kept.clear()
        for rep in range(sizes.fanout_reps):
            for side in ("ours", "sdk") if rep % 2 == 0 else ("sdk", "ours"):
                if side == "ours":
                    ours.append(ours_run())
                else:
                    reference.append(sdk.run(sdk_run()))
    out: dict[str, Any] = {"servers": len(names), "calls": calls, "inflight": inflight}
    out.update(_fan_out_summary(ours, reference, ours_cpu, sdk_cpu, ours_threads))
    return out


def _fan_out_summary(
    ours: list[float],
    reference: list[float],
    ours_cpu: list[float],
    sdk_cpu: list[float],
    ours_threads: list[dict[str, float]],
) -> dict[str, Any]:
    kinds = sorted({k for row in ours_threads for k in row})
    out: dict[str, Any] = {
        "ours": {"samples_per_s": ours, **summary(ours)},
        "sdk": {"samples_per_s": reference, **summary(reference)},
        "cpu_us_per_call": {"ours": summary(ours_cpu)["median"], "sdk": summary(sdk_cpu)["median"]},
        "ours_thread_cpu_us_per_call": {
            k: summary([row.get(k, 0.0) for row in ours_threads])["median"] for k in kinds
        },
    }
    out["ratio"] = out["ours"]["median"] / out["sdk"]["median"]
    return out


# ---- cold start -----------------------------------------------------------------------------


def cold_start(sizes: Sizes) -> dict[str, Any]:
    """First call on a lazy server vs the SDK's spawn + handshake + first call of the same server."""
    ours: list[float] = []
    reference: list[float] = []

    async def sdk_cold() -> float:
        from mcp import Client

        start = time.perf_counter()
        async with Client(sdk_parameters()) as client:
            result = await client.call_tool("echo", ECHO_ARGS)
            elapsed = time.perf_counter() - start
        if result.is_error:
            raise RuntimeError("the SDK reference call failed")
        return elapsed

    with SDKLoop() as sdk, Runtime.start(runtime_config([])) as rt:
        # Warm imports on both sides with one server each (not counted).
        rt.register_server(server_entry(), name="warm")
        _call(rt, "warm/echo", ECHO_ARGS)
        rt.stop_server("warm")
        sdk.run(sdk_cold())
        for rep in range(sizes.cold_reps):
            name = f"cold{rep}"
            rt.register_server(server_entry(), name=name)

            def ours_cold(name: str = name) -> float:
                # A fresh host: no protocol era remembered from an earlier connection.
                SDKTransport.default_protocol_memo.clear()
                return _call(rt, f"{name}/echo", ECHO_ARGS)

            if rep % 2:
                reference.append(sdk.run(sdk_cold()))
                ours.append(ours_cold())
            else:
                ours.append(ours_cold())
                reference.append(sdk.run(sdk_cold()))
            rt.stop_server(name)
    out: dict[str, Any] = {
        "ours": {"samples_ms": ms(ours), **summary(ms(ours))},
        "sdk": {"samples_ms": ms(reference), **summary(ms(reference))},
    }
    out["delta_ms"] = out["ours"]["median"] - out["sdk"]["median"]
    deltas = [(o - r) * 1000.0 for o, r in zip(ours, reference, strict=True)]
    out["paired_delta_ms"] = summary(deltas)
    out["wrapper"] = _wrapper_start(sizes.wrapper_reps)
    return out


def _wrapper_start(reps: int) -> dict[str, Any]:
    """What setting the parent-death signal adds to a spawn: setpriv and a shell where the
    runtime finds them (`parent_death_launcher`), else the Python wrapper's interpreter start."""
    script = PDEATHSIG_SCRIPT
    if os.name != "posix":
        return {}
    cases = {
        "bare_interpreter": [sys.executable, "-I", "-S", "-c", "pass"],
        "wrapper_exec_true": [sys.executable, "-I", "-S", str(script), f"--ppid={os.getpid()}", "/bin/true"],
        "exec_true": ["/bin/true"],
    }
    if launcher := parent_death_launcher():
        cases["launcher_exec_true"] = [*launcher, str(os.getpid()), "/bin/true"]
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(reps):
        for name, argv in cases.items():
            start = time.perf_counter()
            subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            samples[name].append((time.perf_counter() - start) * 1000.0)
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    out["wrapper_cost_ms"] = out["wrapper_exec_true"]["median"] - out["exec_true"]["median"]
    if "launcher_exec_true" in out:
        out["launcher_cost_ms"] = out["launcher_exec_true"]["median"] - out["exec_true"]["median"]
    return out
