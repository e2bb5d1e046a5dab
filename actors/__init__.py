"""mcp-actors: an actor-model runtime (Pykka) for MCP servers."""

import logging as _logging

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.mcp.config import ServerConfig
from actors.runtime import (
    CallTool,
    GetStatus,
    ListTools,
    RegisterServer,
    Runtime,
    ServerState,
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    UnregisterServer,
)
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
    "CallTool",
    "ConfigError",
    "ErrorType",
    "GetStatus",
    "ListTools",
    "RegisterServer",
    "Runtime",
    "RuntimeConfig",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "ToolCapabilities",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "UnregisterServer",
    "load_config",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
