"""`ToolResult`: the one result type for built-in and MCP tools."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from actors.tools.errors import ErrorType, RefusalReason, error_label

__all__ = ["REFUSAL_KEY", "ToolResult"]

REFUSAL_KEY = "refused"
"""The `metadata` key of a refused call's `RefusalReason` (read it as `ToolResult.refusal`)."""

_KNOWN = frozenset(member.value for member in ErrorType)
_REASONS = frozenset(member.value for member in RefusalReason)


class ToolResult(BaseModel):
    """The outcome of one tool call.

    A failure is a result too (``success=False`` with a classified ``error_type``), never an
    exception out of the runner, the registry actor or the `Runtime`.
    """

    model_config = ConfigDict(frozen=True)

    success: bool
    output: dict[str, Any] | None = None
    error: str | None = None
    error_type: ErrorType | None = None
    """How the failure is classified; a `str` enum, so ``result.error_type == "timeout"`` works."""
    duration_ms: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("error_type", mode="before")
    @classmethod
    def _known_error_type(cls, value: Any) -> Any:
        # A handler may raise a `ToolError` of its own type ("RegistrationError"): the result
        # is classified as an execution failure (its message keeps the handler's type).
        if isinstance(value, str) and not isinstance(value, ErrorType) and value not in _KNOWN:
            return ErrorType.EXECUTION
        return value

    @classmethod
    def ok(cls, output: dict[str, Any], *, duration_ms: float = 0.0, **metadata: Any) -> ToolResult:
        """A successful result."""
        return cls(success=True, output=output, duration_ms=duration_ms, metadata=metadata)

    @classmethod
    def fail(
        cls, error_type: ErrorType | str, error: str, *, duration_ms: float = 0.0, **metadata: Any
    ) -> ToolResult:
        """A failed result of the given `ErrorType`; ``error`` is prefixed with the type's label
        (``"timeout: ..."``) unless it already starts with it."""
        kind = ErrorType(error_type) if error_type in _KNOWN else ErrorType.EXECUTION
        label = error_label(error_type)
        if error != label and not error.startswith(f"{label}:"):
            error = f"{label}: {error}"
        return cls(
            success=False,
            error=error,
            error_type=kind,
            duration_ms=duration_ms,
            metadata=metadata,
        )

    @property
    def refusal(self) -> RefusalReason | None:
        """Why the call was refused before anything was sent (`RefusalReason`), or None.

        For example ``result.refusal is RefusalReason.NOT_OFFERED``: the server does not offer
        the tool (``error_type`` ``not_found``).
        """
        reason = self.metadata.get(REFUSAL_KEY)
        return RefusalReason(reason) if reason in _REASONS else None

    @property
    def text(self) -> str:
        """The output as text: MCP text content joined, else the output as JSON."""
        if not self.success:
            return self.error or ""
        if self.output is None:
            return ""
        content = self.output.get("content")
        if isinstance(content, list):
            texts = [
                str(block.get("text", ""))
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            ]
            if texts:
                return "\n".join(texts)
        return json.dumps(self.output, ensure_ascii=False)
