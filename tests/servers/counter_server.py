"""A stateful stdio MCP server (its state lives in the process, like a memory or browser server),
for the single-affinity tests: two copies of it would count apart.

Tools: ``increment`` (adds one; answers the new count and this process's pid), ``sleep`` (waits,
then answers: a call that can be in flight when its replica dies). Resource ``counter://value``
and prompt ``count`` read the count without changing it.

``sleep`` writes ``sleep.started`` into the folder named by ``FIXTURE_MARKER_DIR`` (when set).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("counter")
_count = 0


@server.tool()
def increment() -> dict[str, Any]:
    """Add one to the count; the new count and the pid of the process that holds it."""
    global _count
    _count += 1
    return {"count": _count, "pid": os.getpid()}


@server.tool()
async def sleep(seconds: float) -> str:
    """Wait ``seconds``, then answer."""
    folder = os.environ.get("FIXTURE_MARKER_DIR")
    if folder:
        partial = Path(folder, f".sleep.started.{os.getpid()}")
        partial.write_text(str(os.getpid()))
        os.replace(partial, Path(folder, "sleep.started"))  # whole or not at all
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.resource("counter://value")
def value() -> str:
    """The count, as text."""
    return str(_count)


@server.prompt()
def count() -> str:
    """A prompt that says the count."""
    return f"the count is {_count}"


if __name__ == "__main__":
    server.run("stdio")
