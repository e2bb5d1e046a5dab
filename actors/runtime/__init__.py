"""The Pykka actor runtime: the `Runtime` facade, the public messages and server status.

The actors themselves (`actors.runtime.server`, `.registry`, `.supervisor`) are reached
through the `Runtime` and its registry actor, not constructed by hosts.
"""

from actors.runtime.client import MCPClient, MCPRegistry
from actors.runtime.facade import Runtime
from actors.runtime.handlers import HostHandlers, LoginHandlers
from actors.runtime.messages import (
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
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    SubscribeResource,
    UnregisterServer,
    UnsubscribeResource,
)
from actors.runtime.schema_cache import SchemaCache
from actors.runtime.state import ServerState

__all__ = [
    "CallTool",
    "Complete",
    "GetPrompt",
    "GetStatus",
    "HostHandlers",
    "ListPrompts",
    "ListResourceTemplates",
    "ListResources",
    "ListTools",
    "LoginHandlers",
    "MCPClient",
    "MCPRegistry",
    "ReadResource",
    "RegisterServer",
    "ResourceSubscription",
    "Runtime",
    "SchemaCache",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "SubscribeResource",
    "UnregisterServer",
    "UnsubscribeResource",
]
