"""Per call through a gateway: ``mcp-actors serve`` (stdio, HTTP) and fastmcp's proxy against
the SDK direct to the same server.

``python -m benchmarks.gateway_calls [--calls N] [--rounds R]`` prints one JSON object. Every
client is the SDK's `mcp.Client` in this process, on one event loop; it calls ``echo`` of
benchmarks/servers/bench_server.py directly, through ``mcp-actors serve`` over stdio and over
Streamable HTTP, and through ``fastmcp.server.create_proxy`` (benchmarks/servers/fastmcp_proxy.py)
over stdio and HTTP. Rounds are interleaved: in each round every client makes N sequential
calls, in an order that rotates from round to round. The target (issue 40): a gateway call at most
0.8 times fastmcp's proxy's, over stdio and over HTTP (the median of per-round ratios).

``floor_stdio`` is benchmarks/servers/floor_gateway.py: the SDK's server handing each call
straight to the runtime, no gateway code at all. Its ratio to fastmcp's proxy is the least any
gateway on this runtime could reach over stdio.

Beside the latencies, each gateway process's CPU time (all its threads, not its backend's) and
context switches per call, read from /proc around every round: on a loaded machine, where wall
times swing with the load, these show what the gateway itself costs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, ROOT, SERVER_SCRIPT, free_port, load_average, stop_process, summary

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
PROXY_SCRIPT = BENCH_DIR / "servers" / "fastmcp_proxy.py"
FLOOR_SCRIPT = BENCH_DIR / "servers" / "floor_gateway.py"
WAIT = 60.0
TARGET = 0.8
"""At most this many times fastmcp's proxy, per call (the median of per-round ratios)."""

CLIENTS = {
    "sdk": "SDK direct (`mcp.Client` → server)",
    "ours_stdio": "`mcp-actors serve` (stdio)",
    "ours_http": "`mcp-actors serve --http`",
    "fastmcp_stdio": "fastmcp `create_proxy` (stdio)",
    "fastmcp_http": "fastmcp `create_proxy` (HTTP)",
    "floor_stdio": "the floor: the SDK's server straight to the runtime (stdio)",
}
PEER_OF = {"ours_stdio": "fastmcp_stdio", "ours_http": "fastmcp_http", "floor_stdio": "fastmcp_stdio"}
"""Each of ours and the peer it is held against."""


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _children() -> set[int]:
    """This process's child processes (Linux /proc; empty elsewhere)."""
    found = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    if int(stat[1]) == os.getpid():
                        found.add(int(entry))
    return found


def _usage(pid: int | None) -> tuple[float, int] | None:
    """CPU seconds and context switches so far of process ``pid`` (all its threads), if known."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        switches = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
                    if "ctxt_switches" in line:
                        switches += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return cpu, switches


@contextlib.contextmanager
def _http_server(
    argv: list[str], port: int, env: dict[str, str], pids: dict[str, int | None] | None = None, key: str = ""
) -> Iterator[str]:
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    if pids is not None:
        pids[key] = process.pid
    try:
        deadline = time.monotonic() + WAIT
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[1]} did not listen on port {port}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process, WAIT)


async def _echo_name(client: Any) -> str:
    names = [t.name for t in (await client.list_tools()).tools]
    return str(next(n for n in names if n == "echo" or n.endswith("_echo")))


@contextlib.asynccontextmanager
async def _clients(folder: Path, pids: dict[str, int | None]) -> AsyncIterator[dict[str, tuple[Any, str]]]:
    """A connected client per `CLIENTS` key, and its echo tool's name; ``pids`` gets the gateway
    processes' ids."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    config = folder / "gateway.json"
    backend = {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}
    config.write_text(json.dumps({"mcpServers": {"bench": backend}, "builtin": {"enabled": False}}))
    env = {**os.environ, "MCP_ACTORS_CACHE_DIR": str(folder / "cache"), "FASTMCP_SHOW_SERVER_BANNER": "false"}
    ours_port, fastmcp_port = free_port(), free_port()
    targets: dict[str, Any] = {
        "sdk": StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)]),
        "ours_stdio": StdioServerParameters(
            command=str(MCP_ACTORS), args=["serve", "--config", str(config)], env=env, cwd=str(ROOT)
        ),
        "fastmcp_stdio": StdioServerParameters(
            command=sys.executable, args=[str(PROXY_SCRIPT), "stdio"], env=env, cwd=str(ROOT)
        ),
        "floor_stdio": StdioServerParameters(
            command=sys.executable, args=[str(FLOOR_SCRIPT), str(config)], env=env, cwd=str(ROOT)
        ),
    }
    with contextlib.ExitStack() as servers:
        targets["ours_http"] = servers.enter_context(
            _http_server(
                [str(MCP_ACTORS), "serve", "--config", str(config), "--http", f"127.0.0.1:{ours_port}"],
                ours_port,
                env,
                pids,
                "ours_http",
            )
        )
        targets["fastmcp_http"] = servers.enter_context(
            _http_server(
                [sys.executable, str(PROXY_SCRIPT), "http", str(fastmcp_port)],
                fastmcp_port,
                env,
                pids,
                "fastmcp_http",
            )
        )
        async with contextlib.AsyncExitStack() as stack:
            clients: dict[str, tuple[Any, str]] = {}
            for key in CLIENTS:
                before = _children()
                client = await stack.enter_async_context(Client(targets[key], mode="legacy"))
                clients[key] = (client, await _echo_name(client))
                if key.endswith("_stdio"):
                    started = _children() - before
                    pids[key] = started.pop() if len(started) == 1 else None
            yield clients


async def _measure(calls: int, rounds: int, warmup: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {key: [] for key in CLIENTS}
    round_medians: dict[str, list[float]] = {key: [] for key in CLIENTS}
    pids: dict[str, int | None] = {}
    used: dict[str, list[float]] = {key: [0.0, 0.0] for key in CLIENTS}  # CPU s, switches
    with tempfile.TemporaryDirectory(prefix="gateway-calls-") as folder:
        async with _clients(Path(folder), pids) as clients:
            for client, name in clients.values():
                for _ in range(warmup):
                    await client.call_tool(name, {"text": "warm"})
            order = list(CLIENTS)
            for r in range(rounds):
                for key in order[r % len(order) :] + order[: r % len(order)]:
                    client, name = clients[key]
                    times = []
                    before = _usage(pids.get(key))
                    for _ in range(calls):
                        start = time.perf_counter()
                        result = await client.call_tool(name, {"text": "hello"})
                        times.append(time.perf_counter() - start)
                        if result.is_error:
                            raise RuntimeError(f"{key}: echo failed: {result.content}")
                    after = _usage(pids.get(key))
                    if before is not None and after is not None:
                        used[key][0] += after[0] - before[0]
                        used[key][1] += after[1] - before[1]
                    samples[key] += times
                    round_medians[key].append(statistics.median(times))
    out: dict[str, Any] = {"calls_per_round": calls, "rounds": rounds, "clients": {}}
    sdk = statistics.median(samples["sdk"])
    for key, label in CLIENTS.items():
        ms = [s * 1000 for s in samples[key]]
        stats = summary(ms)
        ratios = [m / s for m, s in zip(round_medians[key], round_medians["sdk"], strict=True)]
        out["clients"][key] = {
            "label": label,
            **{k: v for k, v in stats.items()},
            "ratio": statistics.median(samples[key]) / sdk,
            "round_ratio_median": statistics.median(ratios),
        }
        peer = PEER_OF.get(key)
        if peer is not None:
            to_peer = [m / p for m, p in zip(round_medians[key], round_medians[peer], strict=True)]
            out["clients"][key]["peer"] = peer
            out["clients"][key]["round_ratio_to_peer"] = statistics.median(to_peer)
        out["clients"][key]["round_medians_ms"] = [m * 1000 for m in round_medians[key]]
        if pids.get(key) is not None:
            out["clients"][key]["process_cpu_us_per_call"] = used[key][0] / len(ms) * 1e6
            out["clients"][key]["context_switches_per_call"] = used[key][1] / len(ms)
    return out


def gateway_calls(calls: int = 200, rounds: int = 5, warmup: int = 20) -> dict[str, Any]:
    """Run the comparison; the JSON the report reads (``clients``: latency in ms and ratios)."""
    import anyio

    # The HTTP sessions' streams end while the servers still talk: the SDK logs that as an error.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    result = anyio.run(_measure, calls, rounds, warmup)
    result["target"] = TARGET
    result["load_average"] = load_average()
    with contextlib.suppress(Exception):  # versions are for the report only
        import importlib.metadata

        result["versions"] = {"fastmcp": importlib.metadata.version("fastmcp")}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="sequential calls per client per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    result = gateway_calls(args.calls, args.rounds)
    print(json.dumps(result))
    for row in result["clients"].values():
        print(
            f"{row['label']:40} median {row['median']:.3f} ms  p95 {row['p95']:.3f} ms  "
            f"ratio to SDK {row['ratio']:.2f} (per round {row['round_ratio_median']:.2f})"
            + (
                f"  process CPU {row['process_cpu_us_per_call']:.0f} µs/call, "
                f"{row['context_switches_per_call']:.1f} switches/call"
                if "process_cpu_us_per_call" in row
                else ""
            )
        )


if __name__ == "__main__":
    main()
