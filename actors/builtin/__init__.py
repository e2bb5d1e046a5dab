"""The built-in tools: file, git and plan tools confined to a workspace folder.

`BuiltinAdapter` discovers and registers them (namespace ``builtin``); `Workspace` holds the
sandbox rules every path goes through.
"""

from actors.builtin.adapter import BUILTIN_TOOLS, BuiltinAdapter
from actors.builtin.definition import BuiltinContext, BuiltinTool
from actors.builtin.errors import ExecutionFailure, InvalidInput, SandboxViolation
from actors.builtin.git import GitRepository
from actors.builtin.pathmatch import PathPattern
from actors.builtin.plans import Plan, PlanStep, PlanStore
from actors.builtin.workspace import DEFAULT_MAX_READ_BYTES, Workspace

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_MAX_READ_BYTES",
    "BuiltinAdapter",
    "BuiltinContext",
    "BuiltinTool",
    "ExecutionFailure",
    "GitRepository",
    "InvalidInput",
    "PathPattern",
    "Plan",
    "PlanStep",
    "PlanStore",
    "SandboxViolation",
    "Workspace",
]
