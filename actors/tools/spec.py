"""`ToolSpec` and what it declares: capabilities and resource slots."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

import jsonschema
from jsonschema.protocols import Validator
from pydantic import BaseModel, ConfigDict, Field, field_validator

from actors.tools.schema import input_validator_for

__all__ = ["ResourceSlot", "ToolCapabilities", "ToolHandler", "ToolSpec", "split_name"]

ToolHandler = Callable[[dict[str, Any]], Any]
"""Takes the validated inputs, returns a dict (or a value wrapped as ``{"result": value}``)."""


def split_name(name: str) -> tuple[str, str]:
    """Split ``"ns/tool"`` into ``("ns", "tool")``; a name without ``/`` has namespace ``""``."""
    namespace, sep, tool = name.partition("/")
    return (namespace, tool) if sep else ("", name)


class ToolCapabilities(BaseModel):
    """What a tool does to the world, as far as the runtime can tell."""

    model_config = ConfigDict(frozen=True)

    read_only: bool = False
    writes: bool = False
    checkpointable: bool = True
    """Whether the effects can be captured and rolled back by the host (false for remote tools)."""


class ResourceSlot(BaseModel):
    """A resource a tool touches, bound from one of its parameters or from context."""

    model_config = ConfigDict(frozen=True)

    name: str
    resource_type: str
    access: Literal["read_only", "read_write"]
    binding: Literal["parameter", "contextual"]
    parameter: str | None = None
    """The input property the slot was inferred from, when it has one."""


class ToolSpec(BaseModel):
    """A tool as the runtime knows it, whatever its source."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    """Namespaced, ``namespace/tool``."""
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    capabilities: ToolCapabilities = Field(default_factory=ToolCapabilities)
    source: str = "builtin"
    tool_type: str = "tool"
    resource_slots: tuple[ResourceSlot, ...] = ()
    handler: ToolHandler | None = Field(default=None, exclude=True, repr=False)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name_is_not_empty(cls, value: str) -> str:
        if not value or value.startswith("/") or value.endswith("/"):
            raise ValueError(f"tool name must be 'namespace/tool' or 'tool', got {value!r}")
        return value

    @property
    def namespace(self) -> str:
        return split_name(self.name)[0]

    @property
    def tool_name(self) -> str:
        """The name without its namespace."""
        return split_name(self.name)[1]

    @functools.cached_property
    def compiled_input_schema(self) -> Validator | str:
        """A validator for ``input_schema``, compiled once, or why the schema is not valid.

        Its regular expressions run with a timeout (see `actors.tools.schema`).
        """
        try:
            return input_validator_for(self.input_schema)
        except jsonschema.SchemaError as exc:
            return exc.message

    @property
    def input_validator(self) -> Validator:
        """The validator of `compiled_input_schema`; `jsonschema.SchemaError` if there is none."""
        validator = self.compiled_input_schema
        if isinstance(validator, str):
            raise jsonschema.SchemaError(validator)
        return validator
