"""`ToolRunner`: discover, activate, execute and deactivate tools of a registry."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import jsonschema

from actors.tools.errors import ErrorType, ToolError
from actors.tools.registry import ToolRegistry
from actors.tools.result import ToolResult
from actors.tools.spec import ToolSpec

__all__ = ["LifecycleHook", "LifecycleStage", "ToolRunner", "check_json", "validate_inputs"]

logger = logging.getLogger(__name__)

LifecycleStage = Literal["discover", "activate", "execute", "deactivate"]
LifecycleHook = Callable[[LifecycleStage, str], None]
"""Called with the stage and the tool name (``"*"`` for discover) after each stage."""


def check_json(value: Any, what: str) -> str | None:
    """Return why ``value`` is not strict JSON, or None if it is.

    Strict: no NaN or infinity, object keys that are strings (``json`` would quietly turn
    ``1`` into ``"1"``), and text that encodes as UTF-8 (no lone surrogates).
    """
    try:
        # First: it also refuses circular structures, which the key walk below would not end on.
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        if (key := _non_string_key(value)) is not None:
            return f"{what} are not JSON-serialisable: object key {key!r} is not a string"
    except RecursionError:
        return f"{what} are not JSON-serialisable: nested too deeply"
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        return f"{what} are not JSON-serialisable: {exc}"
    return None


def _non_string_key(value: Any) -> Any:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return key
                stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


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

    def execute(self, name: str, inputs: dict[str, Any]) -> ToolResult:
        """Validate ``inputs``, run the tool's handler and time it."""
        with self._lock:
            spec = self._active.get(name)
        if spec is None:
            spec = self.registry.get(name)
        if spec is None:
            raise ToolError(name, "ExecutionError", "no such tool in the registry")
        start = time.monotonic()
        result = self._run(spec, inputs)
        result = result.model_copy(update={"duration_ms": (time.monotonic() - start) * 1000.0})
        self._emit("execute", name)
        return result

    def _run(self, spec: ToolSpec, inputs: dict[str, Any]) -> ToolResult:
        if (problem := check_json(inputs, "inputs")) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, problem)
        if (problem := validate_inputs(spec, inputs)) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, problem)
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
        if (problem := check_json(output, "outputs")) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, problem)
        return ToolResult.ok(output)

    def _emit(self, stage: LifecycleStage, name: str) -> None:
        for hook in self.hooks:
            hook(stage, name)


def validate_inputs(spec: ToolSpec, inputs: dict[str, Any]) -> str | None:
    """Return why ``inputs`` break ``spec.input_schema`` (every error, briefly), or None."""
    try:
        validator = spec.input_validator
    except jsonschema.SchemaError as exc:
        return f"validation error: the tool's input schema is invalid: {exc.message}"
    try:
        errors = sorted(validator.iter_errors(inputs), key=lambda e: list(e.absolute_path))
    except RecursionError:
        return f"validation error for {spec.name}: the arguments are nested too deeply"
    if not errors:
        return None
    parts = []
    for error in errors[:5]:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        parts.append(f"{where}: {error.message}")
    more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"validation error for {spec.name}: " + "; ".join(parts) + more
