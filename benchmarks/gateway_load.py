"""Direct against proxied under load: 1, 8 and 32 concurrent HTTP clients.

``python -m benchmarks.gateway_load [--seconds S] [--levels 1,8,32]`` prints one JSON object
and a table. Three targets, each its own process on loopback, all serving ``echo`` of
benchmarks/servers/bench_server.py:

- ``direct``: the bench server itself over Streamable HTTP (the SDK's server, no proxy);
- ``ours``: ``mcp-actors serve --http`` in front of the bench server over stdio;
- ``fastmcp``: fastmcp's ``create_proxy`` over HTTP in front of the same stdio server.

For each level, targets in an order that rotates, this process opens that many sessions of
the SDK's ``mcp.Client`` (handshake era, as most hosts are today) on one event loop; each
session calls ``echo`` back to back for S seconds. Read per level and target: latency p50/p99,
throughput, the target process's CPU per call (all its threads; its backend apart), the CPU of
its whole process tree per call, the tree's processes, and its resident memory per session
(growth of the tree's RSS from before the sessions opened to while they are all open, over the
number of sessions). The load generator's own CPU per call is reported too: when it nears one
core, the throughput is the generator's, not the target's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import SERVER_SCRIPT, free_port, load_average, percentile
from benchmarks.gateway_calls import MCP_ACTORS, PROXY_SCRIPT, _http_server

TARGETS = {
    "direct": "SDK server direct (HTTP)",
    "ours": "`mcp-actors serve --http`",
    "fastmcp": "fastmcp `create_proxy` (HTTP)",
}
LEVELS = (1, 8, 32)
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TreeUsage:
    """One reading of a process and its descendants."""

    process_cpu_s: float
    tree_cpu_s: float
    tree_rss_mib: float
    processes: int


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents[int(entry)] = int(stat[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def tree_usage(root: int) -> TreeUsage:
    """CPU so far and resident memory now of ``root`` and every process below it (Linux /proc)."""
    process_cpu = tree_cpu = 0.0
    rss_pages = count = 0
    for pid in _descendants(root):
        stat = _stat(pid)
        if stat is None:
            continue
        cpu = (int(stat[11]) + int(stat[12])) / TICK
        tree_cpu += cpu
        rss_pages += int(stat[21])
        count += 1
        if pid == root:
            process_cpu = cpu
    return TreeUsage(process_cpu, tree_cpu, rss_pages * PAGE / 2**20, count)


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


@contextlib.contextmanager
def _targets(folder: Path) -> Iterator[dict[str, tuple[str, int]]]:
    """Each target's URL and process id, all three listening."""
    config = folder / "gateway.json"
    backend = {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}
    config.write_text(json.dumps({"mcpServers": {"bench": backend}, "builtin": {"enabled": False}}))
    env = {**os.environ, "MCP_ACTORS_CACHE_DIR": str(folder / "cache"), "FASTMCP_SHOW_SERVER_BANNER": "false"}
    ports = {key: free_port() for key in TARGETS}
    argv = {
        "direct": [sys.executable, str(SERVER_SCRIPT), "http", str(ports["direct"])],
        "ours": [str(MCP_ACTORS), "serve", "--config", str(config), "--http", f"127.0.0.1:{ports['ours']}"],
        "fastmcp": [sys.executable, str(PROXY_SCRIPT), "http", str(ports["fastmcp"])],
    }
    pids: dict[str, int | None] = {}
    with contextlib.ExitStack() as stack:
        urls = {
            key: stack.enter_context(_http_server(argv[key], ports[key], env, pids, key)) for key in TARGETS
        }
        yield {key: (urls[key], pids[key] or 0) for key in TARGETS}


@contextlib.asynccontextmanager
async def _sessions(url: str, count: int) -> AsyncIterator[list[tuple[Any, str]]]:
    """``count`` connected clients and each one's echo tool name."""
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        # Opened one by one: contexts entered from sibling tasks would be closed from another
        # task than the one that opened them.
        opened = [await stack.enter_async_context(Client(url, mode="legacy")) for _ in range(count)]
        names: list[str] = []
        for client in opened:
            tools = (await client.list_tools()).tools
            names.append(next(t.name for t in tools if t.name == "echo" or t.name.endswith("_echo")))
        yield list(zip(opened, names, strict=True))


async def _level(url: str, pid: int, count: int, seconds: float, warmup: int) -> dict[str, Any]:
    import anyio

    before_open = tree_usage(pid)
    async with _sessions(url, count) as sessions:

        async def warm(client: Any, name: str) -> None:
            for _ in range(warmup):
                await client.call_tool(name, {"text": "warm"})

        async with anyio.create_task_group() as group:
            for client, name in sessions:
                group.start_soon(warm, client, name)
        opened = tree_usage(pid)
        latencies: list[float] = []
        failures = 0
        deadline = time.perf_counter() + seconds

        async def drive(client: Any, name: str) -> None:
            nonlocal failures
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                result = await client.call_tool(name, {"text": "hello"})
                latencies.append(time.perf_counter() - start)
                failures += bool(result.is_error)

        own_before, start = _own_cpu(), time.perf_counter()
        async with anyio.create_task_group() as group:
            for client, name in sessions:
                group.start_soon(drive, client, name)
        wall, own = time.perf_counter() - start, _own_cpu() - own_before
        after = tree_usage(pid)
    calls = len(latencies)
    if failures or not calls:
        raise RuntimeError(f"{url}: {failures} of {calls} echo calls failed")
    ms = [s * 1000 for s in latencies]
    return {
        "clients": count,
        "calls": calls,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "throughput": calls / wall,
        "process_cpu_us_per_call": (after.process_cpu_s - opened.process_cpu_s) / calls * 1e6,
        "tree_cpu_us_per_call": (after.tree_cpu_s - opened.tree_cpu_s) / calls * 1e6,
        "generator_cpu_us_per_call": own / calls * 1e6,
        "generator_cpu_share": own / wall,
        "processes": after.processes,
        "rss_mib_before": before_open.tree_rss_mib,
        "rss_mib_open": opened.tree_rss_mib,
        "rss_kib_per_session": max(opened.tree_rss_mib - before_open.tree_rss_mib, 0.0) * 1024 / count,
    }


async def _measure(levels: Sequence[int], seconds: float, warmup: int) -> dict[str, Any]:
    out: dict[str, Any] = {"levels": {}, "seconds_per_level": seconds}
    with tempfile.TemporaryDirectory(prefix="gateway-load-") as folder, _targets(Path(folder)) as targets:
        for url, pid in targets.values():  # every backend started, every import done
            await _level(url, pid, 1, 0.2, warmup)
        order = list(TARGETS)
        for i, count in enumerate(levels):
            row: dict[str, Any] = {}
            for key in order[i % len(order) :] + order[: i % len(order)]:
                row[key] = await _level(*targets[key], count, seconds, warmup)
            out["levels"][str(count)] = {key: row[key] for key in TARGETS}
    return out


def gateway_load(levels: Sequence[int] = LEVELS, seconds: float = 6.0, warmup: int = 5) -> dict[str, Any]:
    """Run every level against every target; the JSON the report reads."""
    import anyio

    # Sessions closed while a server still talks: the SDK logs that as an error.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    result: dict[str, Any] = anyio.run(_measure, levels, seconds, warmup)
    result["labels"] = TARGETS
    result["load_average"] = load_average()
    with contextlib.suppress(Exception):  # versions are for the report only
        import importlib.metadata

        result["versions"] = {name: importlib.metadata.version(name) for name in ("fastmcp", "mcp")}
    return result


def table(result: dict[str, Any]) -> list[str]:
    """The markdown table of a run: a row per level and target."""
    lines = [
        "| clients | target | p50 ms | p99 ms | calls/s | target CPU µs/call | tree CPU µs/call "
        "| processes | RSS KiB/session | generator CPU |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for count, row in result["levels"].items():
        for key, m in row.items():
            lines.append(
                f"| {count} | {result['labels'][key]} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} "
                f"| {m['throughput']:.0f} | {m['process_cpu_us_per_call']:.0f} "
                f"| {m['tree_cpu_us_per_call']:.0f} "
                f"| {m['processes']} | {m['rss_kib_per_session']:.0f} | {m['generator_cpu_share']:.0%} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds of calls per level and target")
    parser.add_argument(
        "--levels", default=",".join(map(str, LEVELS)), help="concurrent clients, comma-separated"
    )
    args = parser.parse_args(argv)
    result = gateway_load([int(n) for n in args.levels.split(",")], args.seconds)
    print(json.dumps(result))
    print("\n".join(table(result)))


if __name__ == "__main__":
    main()
