"""The Pykka actor runtime: the `Runtime` facade, the public messages and server status.

The actors themselves (`actors.runtime.server`, `.registry`, `.supervisor`) are reached
through the `Runtime` and its registry actor, not constructed by hosts.

Names load on first access (PEP 562 ``__getattr__``), so importing one submodule (the
messages, the schema cache) does not import the facade, the event loop or the actors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.exports import lazy_exports

if TYPE_CHECKING:
    from actors.runtime.async_facade import AsyncRuntime
    from actors.runtime.facade import Runtime
    from actors.runtime.handlers import HostHandlers, LoginHandlers
    from actors.runtime.messages import (
        CallTool,
        CancelTask,
        Complete,
        GetPrompt,
        GetStatus,
        GetTask,
        ListPrompts,
        ListResources,
        ListResourceTemplates,
        ListTools,
        ReadResource,
        RegisterServer,
        ResourceSubscription,
        ServerStatus,
        ShutdownAll,
        SkillRequest,
        StartServer,
        StartTask,
        StopServer,
        SubscribeResource,
        UnregisterServer,
        UnsubscribeResource,
        UpdateTask,
    )
    from actors.runtime.schema_cache import SchemaCache
    from actors.runtime.skills import ListedSkill, SkillListing
    from actors.runtime.state import ServerState
    from actors.runtime.task_handles import AsyncTaskHandle, TaskHandle

__all__ = [
    "AsyncRuntime",
    "AsyncTaskHandle",
    "CallTool",
    "CancelTask",
    "Complete",
    "GetPrompt",
    "GetStatus",
    "GetTask",
    "HostHandlers",
    "ListPrompts",
    "ListResourceTemplates",
    "ListResources",
    "ListTools",
    "ListedSkill",
    "LoginHandlers",
    "ReadResource",
    "RegisterServer",
    "ResourceSubscription",
    "Runtime",
    "SchemaCache",
    "ServerState",
    "ServerStatus",
    "ShutdownAll",
    "SkillListing",
    "SkillRequest",
    "StartServer",
    "StartTask",
    "StopServer",
    "SubscribeResource",
    "TaskHandle",
    "UnregisterServer",
    "UnsubscribeResource",
    "UpdateTask",
]

# Where each public name lives; the rest of `__all__` are the messages.
_HOMES = {
    "AsyncRuntime": "actors.runtime.async_facade",
    "Runtime": "actors.runtime.facade",
    "HostHandlers": "actors.runtime.handlers",
    "LoginHandlers": "actors.runtime.handlers",
    "SchemaCache": "actors.runtime.schema_cache",
    "ListedSkill": "actors.runtime.skills",
    "SkillListing": "actors.runtime.skills",
    "ServerState": "actors.runtime.state",
    "AsyncTaskHandle": "actors.runtime.task_handles",
    "TaskHandle": "actors.runtime.task_handles",
}


if not TYPE_CHECKING:  # mypy sees the imports above; an unknown name stays an error for it
    __getattr__, __dir__ = lazy_exports(__name__, __all__, _HOMES, default="actors.runtime.messages")
