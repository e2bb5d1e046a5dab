"""Big messages over stdio: one 20 MB tool result against twenty 1 MB results.

A reader linear in the size of a message takes about as long for both (ratio near 1; the
target is at most 2). The same calls through the SDK's own ``stdio_client`` are the reference:
its reader re-splits the whole buffer for every 64 KB chunk, so one big message costs far more
than many small ones.

The server is this module (``python -m benchmarks.big_messages serve``): hand-written JSON-RPC
that answers ``blob(size)`` with ``size`` bytes of text at once, so that the time measured is
the client's reading, parsing and validating, not the server's serializing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from benchmarks.common import ROOT, summary
from benchmarks.suite import Sizes

MB = 1024 * 1024
BIG = 20 * MB
SMALL = 1 * MB
SMALL_COUNT = 20
CURVE_MB = (1, 5, 10, 20)
CALL_TIMEOUT = 300.0

_TOOL = {
    "name": "blob",
    "description": "Return size bytes of text.",
    "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
}


def server_argv() -> tuple[str, tuple[str, ...]]:
    """The command that starts the blob server."""
    return sys.executable, ("-m", "benchmarks.big_messages", "serve")


def big_messages(sizes: Sizes) -> dict[str, Any]:
    """Milliseconds for one 20 MB result and for twenty 1 MB results, ours and the SDK's
    interleaved round by round; and milliseconds per MB of single results of growing size."""
    from mcp.client.stdio import StdioServerParameters

    from actors.mcp.loop import EventLoop
    from actors.mcp.sdk_transport import SDKOptions, SDKTransport, StdioCommand
    from benchmarks.common import SDKLoop

    command, args = server_argv()
    transport = SDKTransport(
        StdioCommand(command, args, cwd=str(ROOT)), SDKOptions(server_name="blob", protocol="legacy")
    )
    parameters = StdioServerParameters(command=command, args=list(args), cwd=ROOT)
    samples: dict[str, dict[str, list[float]]] = {"ours": {}, "sdk": {}}
    with EventLoop() as loop, SDKLoop() as sdk:
        loop.run(transport.connect, None, timeout=60)
        client, stop, holder = sdk.run(_open_sdk_client(parameters))
        try:

            def ours(size: int, count: int) -> float:
                start = time.perf_counter()
                for _ in range(count):
                    outcome = loop.run(
                        transport.call_tool, "blob", {"size": size}, CALL_TIMEOUT, timeout=CALL_TIMEOUT
                    )
                    if len(outcome.content[0]["text"]) != size:
                        raise RuntimeError("the blob came back with the wrong size")
                return (time.perf_counter() - start) * 1000.0

            def reference(size: int, count: int) -> float:
                return sdk.run(_sdk_calls(client, size, count), timeout=CALL_TIMEOUT)

            sides = {"ours": ours, "sdk": reference}
            for side in sides.values():
                side(SMALL, 1)  # warm-up
            cases = {"one_big": (BIG, 1), "many_small": (SMALL, SMALL_COUNT)}
            cases.update({f"single_{mb}mb": (mb * MB, 1) for mb in CURVE_MB})
            for rep in range(sizes.big_reps):
                for case, (size, count) in cases.items():
                    order = list(sides.items()) if rep % 2 == 0 else list(reversed(sides.items()))
                    for name, side in order:
                        samples[name].setdefault(case, []).append(side(size, count))
        finally:
            sdk.run(_close_sdk_client(stop, holder))
            loop.run(transport.close, timeout=30)
    out: dict[str, Any] = {"big_mb": BIG // MB, "small_mb": SMALL // MB, "small_count": SMALL_COUNT}
    for name, cases_ms in samples.items():
        row: dict[str, Any] = {
            case: {"samples_ms": values, **summary(values)}
            for case, values in cases_ms.items()
            if not case.startswith("single_")
        }
        row["ratio"] = row["one_big"]["median"] / row["many_small"]["median"]
        row["ms_per_mb"] = {mb: summary(cases_ms[f"single_{mb}mb"])["median"] / mb for mb in CURVE_MB}
        out[name] = row
    return out


async def _open_sdk_client(parameters: Any) -> tuple[Any, asyncio.Event, asyncio.Task[None]]:
    """An ``mcp.Client`` held open by a task of its own (the SDK enters and leaves in one task)."""
    from mcp import Client

    ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        try:
            async with Client(parameters, mode="legacy", cache=None) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    holder = asyncio.ensure_future(hold())
    return await ready, stop, holder


async def _close_sdk_client(stop: asyncio.Event, holder: asyncio.Task[None]) -> None:
    stop.set()
    await asyncio.gather(holder, return_exceptions=True)


async def _sdk_calls(client: Any, size: int, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        result = await client.call_tool("blob", {"size": size})
        if len(getattr(result.content[0], "text", "")) != size:
            raise RuntimeError("the blob came back with the wrong size")
    return (time.perf_counter() - start) * 1000.0


# ---- the server -----------------------------------------------------------------------------


def _reply(request_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def _blob_reply(request_id: Any, size: int) -> bytes:
    # Built from pieces: the text is plain ASCII and needs no escaping.
    head = b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": {"content": '
    return head + b'[{"type": "text", "text": "' + b"x" * size + b'"}], "isError": false}}\n'


def serve() -> None:
    """Answer the legacy handshake, ``ping``, ``tools/list`` and ``tools/call blob`` on stdio."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(request, dict) or "id" not in request:
            continue  # a notification
        method, params = request.get("method"), request.get("params") or {}
        if method == "initialize":
            reply = _reply(
                request["id"],
                {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "blob", "version": "1.0.0"},
                },
            )
        elif method == "ping":
            reply = _reply(request["id"], {})
        elif method == "tools/list":
            reply = _reply(request["id"], {"tools": [_TOOL]})
        elif method == "tools/call":
            reply = _blob_reply(request["id"], int((params.get("arguments") or {}).get("size", 0)))
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode() + b"\n"
        out.write(reply)
        out.flush()


def main() -> None:
    if sys.argv[1:] == ["serve"]:
        serve()
        return
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.big_messages", description=__doc__)
    parser.add_argument("--reps", type=int, default=Sizes().big_reps)
    options = parser.parse_args()
    print(json.dumps(big_messages(Sizes(big_reps=options.reps)), indent=1))


if __name__ == "__main__":
    main()
