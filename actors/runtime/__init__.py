"""The Pykka actor runtime: the `Runtime` facade, the public messages and server status.

The actors themselves (`actors.runtime.server`, `.registry`, `.supervisor`) are reached
through the `Runtime` and its registry actor, not constructed by hosts.
"""

from actors.runtime.client import MCPClient, MCPRegistry
from actors.runtime.facade import Runtime
from actors.runtime.messages import (
    CallTool,
    GetStatus,
    ListTools,
    RegisterServer,
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    UnregisterServer,
)
from actors.runtime.state import ServerState

__all__ = [
    "CallTool",
    "GetStatus",
    "ListTools",
    "MCPClient",
    "MCPRegistry",
    "RegisterServer",
    "Runtime",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "UnregisterServer",
]
