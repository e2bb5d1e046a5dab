"""A stdio MCP server that says who it runs for, for the per-user tests (issue 23, item 5).

Run by the gateway once per caller (``"affinity": "user"``), with an environment filled in from
the caller's claims. Tools: ``whoami`` (this process's pid, the variables ``GITHUB_USER``,
``TEAM``, ``CALLER`` and ``HOME_DIR`` as it got them, and its count), ``increment`` (adds one to
the count this process holds: a session's state; answers the new count and the pid). Resource
``whoami://user`` and prompt ``greeting`` say whom this process runs for, so that a read or a
prompt shows which process answered.
"""

from __future__ import annotations

import os
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("per-user")
_count = 0
_SHOWN = ("GITHUB_USER", "TEAM", "CALLER", "HOME_DIR")


@server.tool()
def whoami() -> dict[str, Any]:
    """This process's pid, the environment it was given, and its count."""
    return {"pid": os.getpid(), "env": {name: os.environ.get(name) for name in _SHOWN}, "count": _count}


@server.tool()
def increment() -> dict[str, Any]:
    """Add one to this process's count; the new count and the pid."""
    global _count
    _count += 1
    return {"count": _count, "pid": os.getpid()}


@server.resource("whoami://user")
def user() -> str:
    """Whom this process runs for."""
    return f"{os.environ.get('GITHUB_USER')} (pid {os.getpid()})"


@server.prompt()
def greeting() -> str:
    """A greeting for the user this process runs for."""
    return f"hello {os.environ.get('GITHUB_USER')}"


if __name__ == "__main__":
    server.run("stdio")
