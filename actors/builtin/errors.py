"""The exceptions built-in tools raise, and how each maps to an `ErrorType`.

Tool code raises these without knowing its own namespaced name; the adapter's handler
wrapper turns them into `ToolError` with the tool's name (see `BuiltinTool.handler`).
"""

from __future__ import annotations

__all__ = ["ExecutionFailure", "InvalidInput", "SandboxViolation"]


class InvalidInput(ValueError):
    """The arguments cannot be acted on; nothing was changed. Maps to ``validation``."""


class SandboxViolation(InvalidInput):
    """A path that would leave the workspace (or a write into ``.git``); nothing was touched."""


class ExecutionFailure(RuntimeError):
    """The tool was asked something sensible and failed doing it. Maps to ``execution``."""
