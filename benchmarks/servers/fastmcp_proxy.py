"""fastmcp's proxy (`fastmcp.server.create_proxy`) in front of the benchmark server.

``python benchmarks/servers/fastmcp_proxy.py stdio`` or ``... http PORT``: the peer of
``mcp-actors serve`` in benchmarks/gateway_calls.py, fronting the very same server script.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp.server import create_proxy

SERVER_SCRIPT = Path(__file__).resolve().parent / "bench_server.py"


def main() -> None:
    backend = {"mcpServers": {"bench": {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}}}
    proxy = create_proxy(backend, name="fastmcp-proxy")
    if sys.argv[1] == "stdio":
        proxy.run("stdio", show_banner=False)
    else:
        proxy.run("http", show_banner=False, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
