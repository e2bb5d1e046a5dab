"""mcp-actors: an actor-model runtime (Pykka) for MCP servers."""

import logging as _logging

from actors.tools import ToolCapabilities, ToolError, ToolRegistry, ToolResult, ToolRunner, ToolSpec

__all__ = [
    "ToolCapabilities",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
