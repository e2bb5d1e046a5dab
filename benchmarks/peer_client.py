"""One client under test, in its own process (and, for peers, its own virtual environment).

Standalone on purpose: it runs in environments that have only the peer installed (some pin an
older ``mcp``), so it imports nothing from this repository except in the ``mcp-actors`` mode.

    python peer_client.py MODE --command PY --args '["server.py"]' [--calls N] [--reps N] ...

prints one JSON object: per-call latencies (ms), 64-way concurrency wall times (s), versions.

Modes:
- ``sdk``: ``mcp.Client`` (or ``ClientSession`` on mcp 1.x) alone.
- ``mcp-actors``: `Runtime.call_tool` (latency) and the message API from an asyncio host
  (``asyncio.wrap_future`` on each reply, for the concurrency run).
- ``langchain-session``: ``MultiServerMCPClient.session()`` + ``load_mcp_tools``, tools invoked
  with ``ainvoke`` (the docs' "explicitly starting a session").
- ``langchain-per-call``: ``MultiServerMCPClient.get_tools()`` (the docs' basic usage: a new
  session, so a new server process, on each tool call).
- ``fastmcp``: ``fastmcp.Client(StdioTransport(...))`` inside ``async with client``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

ECHO_ARGS = {"text": "hello, benchmark"}

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


@asynccontextmanager
async def _sdk(command: str, args: list[str]) -> AsyncIterator[Call]:
    import mcp

    if hasattr(mcp, "Client"):
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        async with Client(StdioServerParameters(command=command, args=args)) as client:

            async def call(tool: str, arguments: dict[str, Any]) -> Any:
                return await client.call_tool(tool, arguments)

            yield call
        return
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(StdioServerParameters(command=command, args=args)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            return await session.call_tool(tool, arguments)

        yield call


@asynccontextmanager
async def _langchain_session(command: str, args: list[str]) -> AsyncIterator[Call]:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    client = MultiServerMCPClient({"bench": {"command": command, "args": args, "transport": "stdio"}})
    async with client.session("bench") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            return await tools[tool].ainvoke(arguments)

        yield call


@asynccontextmanager
async def _langchain_per_call(command: str, args: list[str]) -> AsyncIterator[Call]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"bench": {"command": command, "args": args, "transport": "stdio"}})
    tools = {tool.name: tool for tool in await client.get_tools()}

    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        return await tools[tool].ainvoke(arguments)

    yield call


@asynccontextmanager
async def _fastmcp(command: str, args: list[str]) -> AsyncIterator[Call]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    client = Client(StdioTransport(command=command, args=args))
    async with client:

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            return await client.call_tool(tool, arguments)

        yield call


@asynccontextmanager
async def _mcp_actors(command: str, args: list[str]) -> AsyncIterator[Call]:
    from actors import Runtime
    from actors.runtime.messages import CallTool

    config = {"mcpServers": {"bench": {"command": command, "args": args}}, "builtin": {"enabled": False}}
    rt = Runtime.start(config)
    try:

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            message = CallTool("bench", tool, arguments)
            rt.registry.tell(message)
            result = await asyncio.wait_for(asyncio.wrap_future(message.reply), 60)
            if not result.success:
                raise RuntimeError(result.error)
            return result

        call.runtime = rt  # type: ignore[attr-defined]
        yield call
    finally:
        await asyncio.to_thread(rt.shutdown)


MODES = {
    "sdk": _sdk,
    "mcp-actors": _mcp_actors,
    "langchain-session": _langchain_session,
    "langchain-per-call": _langchain_per_call,
    "fastmcp": _fastmcp,
}


async def _latency(call: Call, count: int, sync_call: Callable[[], Any] | None) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        if sync_call is not None:
            sync_call()
        else:
            await call("echo", ECHO_ARGS)
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


async def run(options: argparse.Namespace) -> dict[str, Any]:
    command, args = options.command, json.loads(options.args)
    out: dict[str, Any] = {
        "mode": options.mode,
        "python": sys.version.split()[0],
        "versions": {
            name: _version(name)
            for name in ("mcp", "langchain-mcp-adapters", "langchain-core", "fastmcp", "mcp-actors", "anyio")
            if _version(name)
        },
    }
    async with MODES[options.mode](command, args) as call:
        sync_call = None
        runtime = getattr(call, "runtime", None)
        if runtime is not None:
            # The blocking facade, run on this thread as a sync host would (the loop waits).
            def sync_call() -> Any:
                result = runtime.call_tool("bench/echo", ECHO_ARGS, timeout=60)
                if not result.success:
                    raise RuntimeError(result.error)
                return result

        await _latency(call, options.warmup, sync_call)
        out["latency_ms"] = await _latency(call, options.calls, sync_call)
        if runtime is not None:
            out["latency_async_ms"] = await _latency(call, options.calls, None)
        walls = []
        for _ in range(options.reps):
            start = time.perf_counter()
            await asyncio.gather(
                *[call("sleep", {"seconds": options.sleep}) for _ in range(options.concurrency)]
            )
            walls.append(time.perf_counter() - start)
        out["concurrency_s"] = walls
        out["concurrency"] = options.concurrency
        out["sleep_s"] = options.sleep
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--command", required=True)
    parser.add_argument("--args", default="[]", help="the server's arguments, a JSON list")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--sleep", type=float, default=0.2)
    options = parser.parse_args()
    try:
        print(json.dumps(asyncio.run(run(options))))
    except BaseException as exc:
        print(json.dumps({"mode": options.mode, "error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(1)


if __name__ == "__main__":
    main()
