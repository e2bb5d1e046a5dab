"""mcp-actors: an actor-model runtime (Pykka) for MCP servers."""

import logging as _logging

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.runtime import (
    CallTool,
    Complete,
    GetPrompt,
    GetStatus,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListTools,
    ReadResource,
    RegisterServer,
    ResourceSubscription,
    Runtime,
    SchemaCache,
    ServerState,
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    SubscribeResource,
    UnregisterServer,
    UnsubscribeResource,
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
    "Complete",
    "ConfigError",
    "ErrorType",
    "GetPrompt",
    "GetStatus",
    "ListPrompts",
    "ListResourceTemplates",
    "ListResources",
    "ListTools",
    "PromptSpec",
    "ReadResource",
    "RegisterServer",
    "ResourceSpec",
    "ResourceSubscription",
    "ResourceTemplateSpec",
    "Runtime",
    "RuntimeConfig",
    "SchemaCache",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "SubscribeResource",
    "ToolCapabilities",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "UnregisterServer",
    "UnsubscribeResource",
    "load_config",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
