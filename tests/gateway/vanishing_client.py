"""A client that calls ``fx__sleep`` through the gateway and waits: the test kills it mid-call.

``python -m tests.gateway.vanishing_client URL ERA MARKER``
"""

from __future__ import annotations

import sys

import anyio
from mcp import Client


async def main(url: str, era: str, marker: str) -> None:
    async with Client(url, mode=era) as client:
        await client.call_tool("fx__sleep", {"seconds": 120, "marker": marker})


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
