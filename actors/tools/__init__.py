"""The tool runtime core: specs, results, errors, the registry and the runner.

Nothing here knows about MCP or actors.
"""

from actors.tools.check import Refusal, check_call
from actors.tools.errors import ErrorType, RefusalReason, ToolError, duration_text, error_label
from actors.tools.json_check import DEFAULT_MAX_ARGUMENT_BYTES, check_json
from actors.tools.registry import ToolRegistry
from actors.tools.result import ToolResult
from actors.tools.runner import LifecycleHook, LifecycleStage, ToolRunner
from actors.tools.schema import validate_inputs
from actors.tools.spec import ResourceSlot, ToolCapabilities, ToolHandler, ToolSpec, split_name

__all__ = [
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "ErrorType",
    "LifecycleHook",
    "LifecycleStage",
    "Refusal",
    "RefusalReason",
    "ResourceSlot",
    "ToolCapabilities",
    "ToolError",
    "ToolHandler",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "check_call",
    "check_json",
    "duration_text",
    "error_label",
    "split_name",
    "validate_inputs",
]
