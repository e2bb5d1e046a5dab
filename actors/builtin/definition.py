"""`BuiltinTool`: how a built-in tool is declared, and how it becomes a `ToolSpec`.

A tool's code takes a `BuiltinContext` and the validated inputs and returns a JSON dict. It
signals failures with the exceptions of `actors.builtin.errors` (or `TimeoutError`); the handler
made by `BuiltinTool.spec` turns them into `ToolError` carrying the tool's namespaced name, which
the `ToolRunner` reports as a failed `ToolResult`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.builtin.errors import ExecutionFailure, InvalidInput
from actors.builtin.git import GitRepository
from actors.builtin.plans import PlanStore
from actors.builtin.workspace import Workspace
from actors.tools import ErrorType, ResourceSlot, ToolCapabilities, ToolError, ToolHandler, ToolSpec

__all__ = ["JSON_SCHEMA_DIALECT", "BuiltinContext", "BuiltinTool", "ToolCode", "object_schema"]

logger = logging.getLogger(__name__)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class BuiltinContext:
    """What built-in tools act on: the workspace, its git repository and its plans."""

    workspace: Workspace
    git: GitRepository
    plans: PlanStore


ToolCode = Callable[[BuiltinContext, dict[str, Any]], dict[str, Any]]
"""A built-in tool's body: the context and the validated inputs in, a JSON dict out."""


@dataclass(frozen=True)
class BuiltinTool:
    """A built-in tool's declaration: name (without namespace), schema, capabilities, slots, code."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    capabilities: ToolCapabilities
    resource_slots: tuple[ResourceSlot, ...]
    code: ToolCode

    def spec(self, namespace: str, context: BuiltinContext) -> ToolSpec:
        """The `ToolSpec` of this tool in ``namespace``, its handler bound to ``context``."""
        full_name = f"{namespace}/{self.name}"
        return ToolSpec(
            name=full_name,
            description=self.description,
            input_schema=dict(self.input_schema),
            capabilities=self.capabilities,
            source="builtin",
            tool_type="tool",
            resource_slots=self.resource_slots,
            handler=_handler(full_name, self.code, context),
        )


def object_schema(
    properties: Mapping[str, Any], required: tuple[str, ...] = (), **keywords: Any
) -> dict[str, Any]:
    """A closed draft 2020-12 object schema (no properties beyond ``properties``)."""
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    schema.update(keywords)
    return schema


def _handler(full_name: str, code: ToolCode, context: BuiltinContext) -> ToolHandler:
    def handle(inputs: dict[str, Any]) -> dict[str, Any]:
        try:
            return code(context, inputs)
        except InvalidInput as exc:
            raise ToolError(full_name, ErrorType.VALIDATION, str(exc)) from None
        except TimeoutError as exc:
            raise ToolError(full_name, ErrorType.TIMEOUT, str(exc)) from None
        except ExecutionFailure as exc:
            raise ToolError(full_name, ErrorType.EXECUTION, str(exc)) from None
        except OSError as exc:
            logger.debug("%s failed", full_name, exc_info=True)
            raise ToolError(full_name, ErrorType.EXECUTION, f"{type(exc).__name__}: {exc}") from None

    handle.__name__ = handle.__qualname__ = f"builtin_handler[{full_name}]"
    return handle
