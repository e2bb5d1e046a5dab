"""How fast a fresh gateway answers ``tools/list`` for 20 servers from a warm schema cache.

``python -m benchmarks.gateway_lists [--servers N] [--rounds R]`` prints one JSON object and a
line of text. A first ``mcp-actors serve --http`` lists every server once (starting each, so
the cache on disk is written) and exits; a fresh one is then started on the same cache, and
``tools/list`` is timed through the SDK's `mcp.Client` over Streamable HTTP: the first answer
(a client's first look), then R more, on one session. No server process may start meanwhile
(the gateway's children are counted). The issue's claim: under 100 ms on this machine class.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from actors.testing import procfs
from benchmarks.common import ROOT, SERVER_SCRIPT, answers_healthz, free_port, load_average, stop_process

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
WAIT = 60.0


def _gateway(config: Path, cache: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    process = subprocess.Popen(
        [str(MCP_ACTORS), "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env={**os.environ, "MCP_ACTORS_CACHE_DIR": str(cache)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + WAIT
    while not answers_healthz(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    return process, port


async def _time_lists(url: str, rounds: int) -> tuple[float, list[float], int]:
    from mcp import Client

    async with Client(url, mode="legacy") as client:
        start = time.perf_counter()
        tools = (await client.list_tools()).tools
        first = time.perf_counter() - start
        again = []
        for _ in range(rounds):
            start = time.perf_counter()
            await client.list_tools()
            again.append(time.perf_counter() - start)
    return first, again, len(tools)


def measure(servers: int, rounds: int) -> dict[str, Any]:
    import anyio

    with tempfile.TemporaryDirectory(prefix="gateway-lists-") as folder:
        config = Path(folder) / "gateway.json"
        entries = {
            # An argument the server ignores gives each one its own identity (its own cache entry).
            f"s{i:02d}": {"command": sys.executable, "args": [str(SERVER_SCRIPT), f"--id=s{i:02d}"]}
            for i in range(servers)
        }
        config.write_text(json.dumps({"mcpServers": entries, "builtin": {"enabled": False}}))
        cache = Path(folder) / "cache"
        warm, port = _gateway(config, cache)
        try:
            anyio.run(_time_lists, f"http://127.0.0.1:{port}/mcp", 0)
            deadline = time.monotonic() + WAIT
            while len(list(cache.glob("*.json"))) < servers and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop_process(warm)
        fresh, port = _gateway(config, cache)
        try:
            first, again, tools = anyio.run(_time_lists, f"http://127.0.0.1:{port}/mcp", rounds)
            started = len(procfs.child_pids(fresh.pid))
        finally:
            stop_process(fresh)
    return {
        "servers": servers,
        "tools": tools,
        "first_list_ms": round(first * 1000, 1),
        "list_median_ms": round(statistics.median(again) * 1000, 1) if again else None,
        "list_max_ms": round(max(again) * 1000, 1) if again else None,
        "rounds": rounds,
        "server_processes_started": started,
        "load_average": load_average(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    # The warming session ends while the gateway still tells it that lists changed (each server
    # learned): the SDK client logs that stream's end as an error. It is not one here.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    result = measure(args.servers, args.rounds)
    print(json.dumps(result))
    print(
        f"tools/list through a fresh gateway, {result['servers']} servers ({result['tools']} tools) "
        f"from a warm cache: first {result['first_list_ms']} ms, then median {result['list_median_ms']} ms; "
        f"server processes started: {result['server_processes_started']}"
    )


if __name__ == "__main__":
    main()
