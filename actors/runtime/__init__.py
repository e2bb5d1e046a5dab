"""The Pykka actors: server, registry and supervisor actors, their messages, the `Runtime` facade."""

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
from actors.runtime.registry import RegistryActor
from actors.runtime.server import ServerActor
from actors.runtime.state import ServerState
from actors.runtime.supervisor import SupervisorActor
from actors.runtime.timers import TimerService

__all__ = [
    "CallTool",
    "GetStatus",
    "ListTools",
    "MCPClient",
    "MCPRegistry",
    "RegisterServer",
    "RegistryActor",
    "Runtime",
    "ServerActor",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "SupervisorActor",
    "TimerService",
    "UnregisterServer",
]
