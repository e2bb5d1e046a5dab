"""mcp-actors: an actor-model runtime (Pykka) for MCP servers."""

import logging as _logging

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.mcp.config import ServerConfig
from actors.runtime import Runtime, ServerState, ServerStatus
from actors.tools import (
    ErrorType,
    ToolCapabilities,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    ToolSpec,
)

__all__ = [
    "ConfigError",
    "ErrorType",
    "Runtime",
    "RuntimeConfig",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "ToolCapabilities",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "load_config",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
