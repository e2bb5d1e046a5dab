"""What every benchmark shares: the server, statistics, the SDK reference loop, process readings."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http.client
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
SERVER_SCRIPT = BENCH_DIR / "servers" / "bench_server.py"
RESULTS_DIR = BENCH_DIR / "results"
VENVS_DIR = BENCH_DIR / ".venvs"

_T = TypeVar("_T")


# ---- the server ---------------------------------------------------------------------------


def server_command() -> tuple[str, list[str]]:
    """The command that starts the benchmark server: this interpreter and the script."""
    return sys.executable, [str(SERVER_SCRIPT)]


def server_entry(**lifecycle: Any) -> dict[str, Any]:
    """One ``mcpServers`` entry for the benchmark server, with optional lifecycle keys."""
    command, args = server_command()
    return {"command": command, "args": args, **lifecycle}


def runtime_config(names: Sequence[str], **lifecycle: Any) -> dict[str, Any]:
    """An ``mcpServers`` config with one benchmark server per name (default lifecycle keys,
    as a user gets them), built-in tools off."""
    return {
        "mcpServers": {name: server_entry(**lifecycle) for name in names},
        "builtin": {"enabled": False},
    }


def _sdk_client() -> Any:
    from mcp import Client

    return Client(sdk_parameters())


def fastmcp_client() -> Any:
    """fastmcp's ``Client`` over stdio to the benchmark server (entered on a loop by the caller)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    command, args = server_command()
    return Client(StdioTransport(command=command, args=args))


def sdk_parameters() -> Any:
    from mcp.client.stdio import StdioServerParameters

    command, args = server_command()
    return StdioServerParameters(command=command, args=args)


# ---- statistics ---------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, p95, mean, min, max and count of ``values``."""
    if not values:
        return {
            "n": 0,
            "median": math.nan,
            "p95": math.nan,
            "mean": math.nan,
            "min": math.nan,
            "max": math.nan,
        }
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p95": percentile(values, 95),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


def ms(seconds: Sequence[float]) -> list[float]:
    return [s * 1000.0 for s in seconds]


# ---- the process --------------------------------------------------------------------------


def rss_mib() -> float:
    """This process's resident set size in MiB (Linux ``/proc``; ``ru_maxrss`` elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def os_threads() -> int:
    """Threads of this process as the OS counts them."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        pass
    return threading.active_count()


def thread_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) of this process's threads, summed by kind of thread (Linux)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(tid), "other")
        kind = _thread_kind(name)
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def _thread_kind(name: str) -> str:
    for prefix, kind in (
        ("ServerActor", "server actors"),
        ("RegistryActor", "registry actor"),
        ("SupervisorActor", "supervisor actor"),
        ("mcp-actors-loop", "event loop"),
        ("MainThread", "caller"),
        ("bench-", "benchmark"),
    ):
        if name.startswith(prefix):
            return kind
    return "other"


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def wait_all(futures: Sequence[concurrent.futures.Future[Any]], timeout: float) -> list[Any]:
    _, pending = concurrent.futures.wait(futures, timeout=timeout)
    if pending:
        raise TimeoutError(f"{len(pending)} of {len(futures)} calls did not finish within {timeout}s")
    return [f.result() for f in futures]


# ---- the SDK reference: mcp.Client on its own asyncio loop ---------------------------------


class SDKLoop:
    """A plain asyncio loop on its own thread, driving ``mcp.Client`` sessions directly.

    Each session is entered and left by one holder task (the SDK's cancel scopes demand it);
    measurements run as coroutines on the loop and time themselves there, so they show the
    SDK's own cost with no thread hop.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="bench-sdk-loop", daemon=True)
        self._thread.start()
        self._stops: list[asyncio.Event] = []
        self._holders: list[asyncio.Task[None]] = []

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 300.0) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def connect(
        self, count: int = 1, timeout: float = 60.0, *, client: Callable[[], Any] | None = None
    ) -> list[Any]:
        """Start ``count`` benchmark servers and return their connected clients: ``mcp.Client``s,
        or what ``client()`` makes (an async context manager entered on the loop)."""

        async def open_all() -> list[Any]:
            clients: list[Any] = []
            readies = []
            for _ in range(count):
                ready: asyncio.Future[Any] = self.loop.create_future()
                stop = asyncio.Event()
                self._stops.append(stop)
                task = asyncio.ensure_future(self._hold(ready, stop, client or _sdk_client))
                self._holders.append(task)
                readies.append(ready)
            for ready in readies:
                clients.append(await ready)
            return clients

        return self.run(open_all(), timeout)

    async def _hold(self, ready: asyncio.Future[Any], stop: asyncio.Event, make: Callable[[], Any]) -> None:
        try:
            async with make() as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def close_sessions(self, timeout: float = 30.0) -> float:
        """Close every session at once; return the seconds it took."""

        async def close_all() -> float:
            start = time.perf_counter()
            for stop in self._stops:
                stop.set()
            await asyncio.gather(*self._holders, return_exceptions=True)
            return time.perf_counter() - start

        seconds = self.run(close_all(), timeout)
        self._stops.clear()
        self._holders.clear()
        return seconds

    def stop(self) -> None:
        if self._stops:
            with contextlib.suppress(Exception):  # the report goes on without it
                self.close_sessions()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self) -> SDKLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


# ---- processes the benchmarks start ---------------------------------------------------------


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers_healthz(port: int) -> bool:
    """Whether a gateway on ``port`` answers ``/healthz`` with 200."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def stop_process(process: subprocess.Popen[Any], wait: float = 60.0) -> None:
    """SIGTERM (a gateway stops its servers), then SIGKILL if it does not exit within ``wait``."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(wait)
