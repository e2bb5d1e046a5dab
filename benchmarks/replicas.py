"""Gateway replicas on one Redis: throughput with 1, 2 and 3 replicas, memory, Redis load.

``python -m benchmarks.replicas [--replicas 1,2,3] [--clients 10] [--calls 100] [--quick]``
prints one JSON object and a table. Everything runs on this machine, on loopback: a real
``redis-server`` (no persistence) on a free port, and for each count N, N ``mcp-actors serve
--http 127.0.0.1:<free> --cluster redis://...`` processes with the same five benchmark servers
(benchmarks/servers/bench_server.py, stdio). The client spreads calls round-robin across the
replicas, as a stateless load balancer would: each of ``--clients`` clients holds one SDK session
per replica and sends its calls (``echo`` of a text of its own, on the five servers in turn) to
the replicas in turn; every answer is checked against its request. Before timing, every server
is called through every replica, so each replica runs its five server processes.

Measured for each N: calls/s (the median of ``--rounds`` timed rounds), the latency of a
call, the resident memory (RSS and PSS) of each replica process and of each server process, and
Redis's side: commands per call during the timed phase, commands per second while the replicas
sit idle (heartbeats), its memory and key count. ``--standalone`` adds a row for one gateway
without ``--cluster`` (no Redis) as the baseline; ``--single`` runs the counts again with every
server ``"affinity": "single"`` (each runs on one replica; the others forward its calls there).

The client runs in this process, on the same two cores as the replicas and servers: it is part
of what is measured. The numbers are reported, never asserted (docs/scaling.md records them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.testing import procfs
from benchmarks.common import (
    ROOT,
    SERVER_SCRIPT,
    answers_healthz,
    free_port,
    load_average,
    percentile,
    stop_process,
)

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
SERVERS = 5
WAIT = 60.0
IDLE_WINDOW = 5.0
"""Seconds the replicas sit idle while Redis's command count is read (their background load)."""


# ---- processes and their memory --------------------------------------------------------------


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in KiB; PSS shares each shared page among the processes mapping it."""
    rss = pss = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def _descendants(pid: int) -> list[int]:
    found = []
    for child in procfs.child_pids(pid):
        found.append(child)
        found.extend(_descendants(child))
    return found


def _tree_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` and every process under it, in KiB."""
    total_rss = total_pss = 0
    for each in (pid, *_descendants(pid)):
        rss, pss = _memory_kib(each)
        total_rss += rss
        total_pss += pss
    return total_rss, total_pss


@dataclass
class RedisProcess:
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisProcess:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + WAIT
        while True:
            try:
                if self.client().ping():
                    return self
            except Exception:  # redis.RedisError, or the port not open yet
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
            time.sleep(0.05)

    def client(self) -> Any:
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    def stats(self) -> dict[str, Any]:
        with self.client() as client:
            info = client.info()
            return {
                "commands": int(info["total_commands_processed"]),
                "used_memory_kib": round(int(info["used_memory"]) / 1024),
                "used_memory_dataset_kib": round(int(client.memory_stats().get("dataset.bytes", 0)) / 1024),
                "keys": int(client.dbsize()),
                "clients": int(info["connected_clients"]),
                "pubsub_channels": len(client.pubsub_channels()),
            }

    def keys(self) -> dict[str, dict[str, int]]:
        """For each kind of key (``mcp-actors:<kind>:...``): how many, and the largest one's
        memory in Redis (``MEMORY USAGE``, bytes)."""
        kinds: dict[str, dict[str, int]] = {}
        with self.client() as client:
            for key in client.scan_iter(count=1000):
                text = key.decode(errors="replace")
                kind = text.split(":")[1] if text.count(":") >= 1 else text
                entry = kinds.setdefault(kind, {"count": 0, "max_bytes": 0})
                entry["count"] += 1
                entry["max_bytes"] = max(entry["max_bytes"], int(client.memory_usage(key) or 0))
        return kinds

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)


@contextlib.contextmanager
def _replicas(
    count: int, config: Path, folder: Path, cluster: str | None
) -> Iterator[list[tuple[subprocess.Popen[bytes], int]]]:
    """``count`` gateway processes (started side by side), each with its own schema cache folder."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for index in range(count):
            port = free_port()
            args = [str(MCP_ACTORS), "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"]
            if cluster is not None:
                args += ["--cluster", cluster]
            log = (folder / f"replica-{count}-{index}.log").open("wb")
            with log:
                process = subprocess.Popen(
                    args,
                    cwd=ROOT,
                    env={**os.environ, "MCP_ACTORS_CACHE_DIR": str(folder / f"cache-{count}-{index}")},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            started.append((process, port))
        deadline = time.monotonic() + WAIT
        for process, port in started:
            while not answers_healthz(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"a replica did not start (see {folder})")
                time.sleep(0.05)
        yield started
    finally:
        for process, _ in started:
            stop_process(process)


# ---- the client ------------------------------------------------------------------------------


async def _clients_run(
    urls: Sequence[str], clients: int, calls: int, rounds: int, mark: Callable[[], int]
) -> dict[str, Any]:
    """Warm every server on every replica, then time ``rounds`` rounds of ``clients`` x ``calls``
    calls; ``mark()`` (Redis's command count) is read right before and after the timed rounds."""
    import anyio.to_thread
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            [await stack.enter_async_context(Client(url, mode="legacy")) for url in urls]
            for _ in range(clients)
        ]
        for session in sessions[0]:
            for server in range(SERVERS):
                result = await session.call_tool(f"s{server}__echo", {"text": "warm"})
                if result.is_error:
                    raise RuntimeError(f"warm-up call failed: {result.content}")
        latencies: list[float] = []
        wrong = 0

        async def one_client(index: int) -> None:
            nonlocal wrong
            own = sessions[index]
            for call in range(calls):
                text = f"c{index}-{call}"
                session = own[(index + call) % len(own)]
                begin = time.perf_counter()
                result = await session.call_tool(f"s{call % SERVERS}__echo", {"text": text})
                latencies.append(time.perf_counter() - begin)
                got = getattr(result.content[0], "text", None) if result.content else None
                if result.is_error or got != text:
                    wrong += 1

        commands_before = await anyio.to_thread.run_sync(mark)
        walls = []
        for _ in range(rounds):
            begin = time.perf_counter()
            await asyncio.gather(*(one_client(i) for i in range(clients)))
            walls.append(time.perf_counter() - begin)
        commands = await anyio.to_thread.run_sync(mark) - commands_before
    total = clients * calls
    return {
        "calls": total * rounds,
        "wrong_or_failed": wrong,
        "wall_s": round(sum(walls), 3),
        # The median round: the machine is shared, one round may meet a busy moment.
        "calls_per_s": round(statistics.median(total / wall for wall in walls), 1),
        "calls_per_s_rounds": [round(total / wall, 1) for wall in walls],
        "redis_commands": commands,
        "latency_ms": {
            "median": round(statistics.median(latencies) * 1000, 2),
            "p95": round(percentile(latencies, 95) * 1000, 2),
            "max": round(max(latencies) * 1000, 2),
        },
    }


def _run_count(
    count: int,
    config: Path,
    folder: Path,
    redis: RedisProcess | None,
    sizes: tuple[int, int, int],
    affinity: str = "any",
) -> dict[str, Any]:
    clients, calls, rounds = sizes
    if redis is not None:
        with redis.client() as client:
            client.flushdb()
    with _replicas(count, config, folder, redis.url if redis else None) as started:
        urls = [f"http://127.0.0.1:{port}/mcp" for _, port in started]
        begin = time.monotonic()
        timed = _time_calls(urls, clients, calls, rounds, redis)
        memory = _memory(started)
        row: dict[str, Any] = {
            "replicas": count,
            "cluster": redis is not None,
            "affinity": affinity,
            **timed,
            **memory,
        }
        if redis is not None:
            # The replicas now sit idle: what they ask of Redis in the background (heartbeats).
            idle_from = redis.stats()
            time.sleep(IDLE_WINDOW)
            idle_to = redis.stats()
            redis_rss, _ = _memory_kib(redis.process.pid) if redis.process else (0, 0)
            row["redis"] = {
                "commands_during_run": timed["redis_commands"],
                "commands_per_call": round(timed["redis_commands"] / timed["calls"], 2),
                "idle_commands_per_s": round((idle_to["commands"] - idle_from["commands"]) / IDLE_WINDOW, 1),
                "idle_commands_per_s_per_replica": round(
                    (idle_to["commands"] - idle_from["commands"]) / IDLE_WINDOW / count, 1
                ),
                "used_memory_kib": idle_to["used_memory_kib"],
                "dataset_kib": idle_to["used_memory_dataset_kib"],
                "keys": idle_to["keys"],
                "keys_by_kind": redis.keys(),
                "clients": idle_to["clients"],
                "rss_mib": round(redis_rss / 1024, 1),
                "run_seconds": round(time.monotonic() - begin, 1),
            }
        row.pop("redis_commands", None)
    return row


def _time_calls(
    urls: list[str], clients: int, calls: int, rounds: int, redis: RedisProcess | None
) -> dict[str, Any]:
    import anyio

    def mark() -> int:
        return int(redis.stats()["commands"]) if redis else 0

    result: dict[str, Any] = anyio.run(_clients_run, urls, clients, calls, rounds, mark)
    return result


def _memory(started: list[tuple[subprocess.Popen[bytes], int]]) -> dict[str, Any]:
    replicas = []
    servers = []
    for process, _ in started:
        rss, pss = _memory_kib(process.pid)
        replicas.append({"rss_mib": round(rss / 1024, 1), "pss_mib": round(pss / 1024, 1)})
        for child in sorted(procfs.child_pids(process.pid)):
            child_rss, child_pss = _tree_kib(child)
            servers.append({"rss_mib": round(child_rss / 1024, 1), "pss_mib": round(child_pss / 1024, 1)})
    return {
        "replica_memory": replicas,
        "server_processes": len(servers),
        "server_rss_mib_median": round(statistics.median(s["rss_mib"] for s in servers), 1)
        if servers
        else None,
        "server_pss_mib_median": round(statistics.median(s["pss_mib"] for s in servers), 1)
        if servers
        else None,
    }


def _config(folder: Path, affinity: str) -> Path:
    config = folder / f"gateway-{affinity}.json"
    entries = {
        # An argument the server ignores gives each one its own identity (its own cache entry).
        f"s{i}": {"command": sys.executable, "args": [str(SERVER_SCRIPT), f"--id=s{i}"], "affinity": affinity}
        for i in range(SERVERS)
    }
    config.write_text(json.dumps({"mcpServers": entries, "builtin": {"enabled": False}}))
    return config


def measure(
    counts: Sequence[int], sizes: tuple[int, int, int], standalone: bool, single: bool
) -> dict[str, Any]:
    clients, calls, rounds = sizes
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as name:
        folder = Path(name)
        rows = []
        if standalone:
            rows.append(_run_count(1, _config(folder, "any"), folder, None, sizes))
        redis = RedisProcess(folder).start()
        try:
            for count in counts:
                rows.append(_run_count(count, _config(folder, "any"), folder, redis, sizes))
            for count in counts if single else ():
                rows.append(_run_count(count, _config(folder, "single"), folder, redis, sizes, "single"))
        finally:
            redis.stop()
    return {
        "servers": SERVERS,
        "clients": clients,
        "calls_per_client": calls,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "rows": rows,
        "load_average": load_average(),
    }


def _table(result: dict[str, Any]) -> str:
    lines = [
        "replicas  redis  affinity  calls/s  median ms  p95 ms  wrong  replica RSS MiB  server RSS MiB  "
        "Redis cmds/call  idle cmds/s/replica"
    ]
    for row in result["rows"]:
        redis = row.get("redis") or {}
        rss = "/".join(str(m["rss_mib"]) for m in row["replica_memory"])
        lines.append(
            f"{row['replicas']:>8}  {'yes' if row['cluster'] else 'no':>5}  {row['affinity']:>8}  "
            f"{row['calls_per_s']:>7}  "
            f"{row['latency_ms']['median']:>9}  {row['latency_ms']['p95']:>6}  {row['wrong_or_failed']:>5}  "
            f"{rss:>15}  {row['server_rss_mib_median']!s:>14}  {redis.get('commands_per_call', '-')!s:>15}  "
            f"{redis.get('idle_commands_per_s_per_replica', '-')!s:>19}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", default="1,2,3", help="comma-separated replica counts")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100, help="calls per client")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per replica count")
    parser.add_argument("--standalone", action="store_true", help="add one gateway without Redis")
    parser.add_argument(
        "--single", action="store_true", help='the same counts again with every server "affinity": "single"'
    )
    parser.add_argument("--quick", action="store_true", help="3 clients x 20 calls (a smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.calls, args.rounds = 3, 20, 1
    # A session that ends while the gateway still streams to it is logged by the SDK client as
    # an error; it is not one here.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    counts = [int(n) for n in args.replicas.split(",") if n]
    result = measure(counts, (args.clients, args.calls, args.rounds), args.standalone, args.single)
    print(json.dumps(result))
    print(_table(result))


if __name__ == "__main__":
    main()
