"""`ToolRunner`: discover, activate, execute and deactivate tools of a registry."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from actors.tools.check import check_call
from actors.tools.errors import ErrorType, ToolError
from actors.tools.json_check import check_json
from actors.tools.registry import ToolRegistry
from actors.tools.result import ToolResult
from actors.tools.spec import ToolSpec

__all__ = ["LifecycleHook", "LifecycleStage", "ToolRunner"]

logger = logging.getLogger(__name__)

LifecycleStage = Literal["discover", "activate", "execute", "deactivate"]
LifecycleHook = Callable[[LifecycleStage, str], None]
"""Called with the stage and the tool name (``"*"`` for discover) after each stage."""


class ToolRunner:
    """Runs the tools of one `ToolRegistry`.

    ``execute`` never raises for a failing tool: invalid inputs, a raising handler or a bad
    output all give a failed `ToolResult`. It raises `ToolError` only for a tool that does not
    exist, which is the caller's mistake rather than the tool's.
    """

    def __init__(self, registry: ToolRegistry, hooks: list[LifecycleHook] | None = None) -> None:
        self.registry = registry
        self.hooks: list[LifecycleHook] = list(hooks or [])
        self._lock = threading.Lock()
        self._active: dict[str, ToolSpec] = {}

    def discover(self, registry: ToolRegistry | None = None) -> list[ToolSpec]:
        """The tools of ``registry`` (this runner's own by default)."""
        tools = (registry or self.registry).list()
        self._emit("discover", "*")
        return tools

    def activate(self, name: str) -> ToolSpec:
        """Mark a tool active; a missing tool raises `ToolError` ``ActivationError``."""
        spec = self.registry.get(name)
        if spec is None:
            raise ToolError(name, "ActivationError", "no such tool in the registry")
        with self._lock:
            self._active[name] = spec
        self._emit("activate", name)
        return spec

    def is_active(self, name: str) -> bool:
        with self._lock:
            return name in self._active

    def deactivate(self, name: str) -> bool:
        """Mark a tool inactive; false when it was not active."""
        with self._lock:
            was_active = self._active.pop(name, None) is not None
        if was_active:
            self._emit("deactivate", name)
        return was_active

    def execute(self, name: str, inputs: dict[str, Any], *, shape_checked: bool = False) -> ToolResult:
        """Validate ``inputs`` (`actors.tools.check.check_call`), run the tool's handler and time it.

        ``shape_checked``: the caller already checked the inputs' shape and size (the built-in
        tools' actor does), so only the input schema is left to check.
        """
        with self._lock:
            spec = self._active.get(name)
        if spec is None:
            spec = self.registry.get(name)
        if spec is None:
            raise ToolError(name, "ExecutionError", "no such tool in the registry")
        start = time.monotonic()
        result = self._run(spec, inputs, shape_checked)
        result = result.model_copy(update={"duration_ms": (time.monotonic() - start) * 1000.0})
        self._emit("execute", name)
        return result

    def _run(self, spec: ToolSpec, inputs: dict[str, Any], shape_checked: bool) -> ToolResult:
        refusal = check_call(
            inputs,
            tool=spec.tool_name,
            offered={spec.tool_name: spec},
            server=spec.namespace,
            shape=not shape_checked,
        )
        if refusal is not None:
            return refusal.result()
        if spec.handler is None:
            return ToolResult.fail(ErrorType.EXECUTION, f"{spec.name} has no handler")
        try:
            value = spec.handler(inputs)
        except ToolError as exc:
            return ToolResult.fail(exc.error_type, str(exc))
        except Exception as exc:
            logger.debug("tool %s raised", spec.name, exc_info=True)
            return ToolResult.fail(ErrorType.EXECUTION, f"{type(exc).__name__}: {exc}")
        if isinstance(value, ToolResult):
            return value
        output = value if isinstance(value, dict) else {"result": value}
        # Outputs have no size limit: what a local tool returns is the host's own to judge.
        if (problem := check_json(output, "outputs", max_bytes=None)) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, problem)
        return ToolResult.ok(output)

    def _emit(self, stage: LifecycleStage, name: str) -> None:
        for hook in self.hooks:
            hook(stage, name)
