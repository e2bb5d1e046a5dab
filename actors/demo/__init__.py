"""The servers shipped with mcp-actors and the built-in default configuration.

They exist so that every command works out of the box (``make demo``, ``mcp-actors tools``),
and they are written with the official SDK like any other MCP server.
"""

from actors.demo.defaults import default_config

__all__ = ["default_config"]
