"""A stdio server that prints to stdout before it speaks MCP, as a first ``npx -y`` or a chatty
start script does: ``python -m tests.servers.banner_server [--serve]``.

It writes the `BANNER` lines (not JSON-RPC; the second one long) to stdout, then, with
``--serve``, serves like ``fixture_server`` (``echo`` and the rest); without it, it reads stdin
and never answers anything, not even the handshake.
"""

from __future__ import annotations

import sys

from tests.servers.fixture_server import build

BANNER = (
    "Downloading package mcp-banner@1.0.0...",
    "npm warn deprecated left-pad@1.3.0: " + "use String.prototype.padStart() instead; " * 10,
    "Installed 3 packages in 12ms",
)


def main() -> None:
    for line in BANNER:
        print(line, flush=True)
    if "--serve" in sys.argv[1:]:
        build("banner").run("stdio")
        return
    for _line in sys.stdin:
        pass


if __name__ == "__main__":
    main()
