"""`ToolResult`: the one result type for built-in and MCP tools."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from actors.tools.errors import error_label

__all__ = ["ToolResult"]


class ToolResult(BaseModel):
    """The outcome of one tool call.

    A failure is a result too (``success=False`` with a classified ``error_type``), never an
    exception out of the runner, the registry actor or the `Runtime`.
    """

    model_config = ConfigDict(frozen=True)

    success: bool
    output: dict[str, Any] | None = None
    error: str | None = None
    error_type: str | None = None
    duration_ms: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def ok(cls, output: dict[str, Any], *, duration_ms: float = 0.0, **metadata: Any) -> ToolResult:
        """A successful result."""
        return cls(success=True, output=output, duration_ms=duration_ms, metadata=metadata)

    @classmethod
    def fail(cls, error_type: str, error: str, *, duration_ms: float = 0.0, **metadata: Any) -> ToolResult:
        """A failed result of the given `ErrorType`; ``error`` is prefixed with the type's label
        (``"timeout: ..."``) unless it already starts with it."""
        label = error_label(error_type)
        if error != label and not error.startswith(f"{label}:"):
            error = f"{label}: {error}"
        return cls(
            success=False,
            error=error,
            error_type=str(error_type),
            duration_ms=duration_ms,
            metadata=metadata,
        )

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
