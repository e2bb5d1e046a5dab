"""mcp-actors: an actor-model runtime (Pykka) for MCP servers.

The public names are loaded on first access (PEP 562 ``__getattr__``): ``import actors``
alone costs little, and a program that only loads a configuration or reads the schema cache
(the command's ``tools`` with a warm cache) never imports the actors, the event loop,
OpenTelemetry or the SDK. ``from actors import Runtime`` imports them on the caller's thread.
"""

from __future__ import annotations

import logging as _logging
from typing import TYPE_CHECKING

from actors.exports import lazy_exports

if TYPE_CHECKING:
    from actors.config import ConfigError, RuntimeConfig, load_config
    from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
    from actors.mcp.config import ServerConfig
    from actors.mcp.inputs import CallInputs, InputRefused
    from actors.mcp.skills import Skill, SkillFault
    from actors.mcp.tasks import TaskState, TaskStatus
    from actors.pins import FilePinStore, PinStore
    from actors.runtime import (
        AsyncRuntime,
        AsyncTaskHandle,
        CallTool,
        CancelTask,
        Complete,
        GetPrompt,
        GetStatus,
        GetTask,
        HostHandlers,
        ListPrompts,
        ListResources,
        ListResourceTemplates,
        ListTools,
        LoginHandlers,
        ReadResource,
        RegisterServer,
        ResourceSubscription,
        Runtime,
        SchemaCache,
        ServerState,
        ServerStatus,
        ShutdownAll,
        SkillListing,
        SkillRequest,
        StartServer,
        StartTask,
        StopServer,
        SubscribeResource,
        TaskHandle,
        UnregisterServer,
        UnsubscribeResource,
        UpdateTask,
    )
    from actors.testing import MockTransport
    from actors.tools import (
        ErrorType,
        Refusal,
        RefusalReason,
        ToolCapabilities,
        ToolError,
        ToolRegistry,
        ToolResult,
        ToolRunner,
        ToolSpec,
    )

__all__ = [
    "AsyncRuntime",
    "AsyncTaskHandle",
    "CallInputs",
    "CallTool",
    "CancelTask",
    "Complete",
    "ConfigError",
    "ErrorType",
    "FilePinStore",
    "GetPrompt",
    "GetStatus",
    "GetTask",
    "HostHandlers",
    "InputRefused",
    "ListPrompts",
    "ListResourceTemplates",
    "ListResources",
    "ListTools",
    "LoginHandlers",
    "MockTransport",
    "PinStore",
    "PromptSpec",
    "ReadResource",
    "Refusal",
    "RefusalReason",
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
    "Skill",
    "SkillFault",
    "SkillListing",
    "SkillRequest",
    "StartServer",
    "StartTask",
    "StopServer",
    "SubscribeResource",
    "TaskHandle",
    "TaskState",
    "TaskStatus",
    "ToolCapabilities",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "UnregisterServer",
    "UnsubscribeResource",
    "UpdateTask",
    "load_config",
]

# Where each public name lives; the rest of `__all__` comes from `actors.runtime`.
_HOMES = {
    "ConfigError": "actors.config",
    "RuntimeConfig": "actors.config",
    "load_config": "actors.config",
    "PromptSpec": "actors.mcp.catalog",
    "ResourceSpec": "actors.mcp.catalog",
    "ResourceTemplateSpec": "actors.mcp.catalog",
    "ServerConfig": "actors.mcp.config",
    "CallInputs": "actors.mcp.inputs",
    "InputRefused": "actors.mcp.inputs",
    "Skill": "actors.mcp.skills",
    "SkillFault": "actors.mcp.skills",
    "TaskState": "actors.mcp.tasks",
    "TaskStatus": "actors.mcp.tasks",
    "FilePinStore": "actors.pins",
    "PinStore": "actors.pins",
    "ErrorType": "actors.tools",
    "Refusal": "actors.tools",
    "RefusalReason": "actors.tools",
    "MockTransport": "actors.testing",
    "ToolCapabilities": "actors.tools",
    "ToolError": "actors.tools",
    "ToolRegistry": "actors.tools",
    "ToolResult": "actors.tools",
    "ToolRunner": "actors.tools",
    "ToolSpec": "actors.tools",
}


if not TYPE_CHECKING:  # mypy sees the imports above; an unknown name stays an error for it
    __getattr__, __dir__ = lazy_exports(__name__, __all__, _HOMES, default="actors.runtime")


_logging.getLogger(__name__).addHandler(_logging.NullHandler())
