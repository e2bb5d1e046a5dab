"""How the SDK's failures read, and the one test of a request cut off by the connection.

Pure functions over exceptions; safe on any thread. Task groups (the SDK's and ours) wrap what
goes wrong in ``ExceptionGroup``s, so each helper looks inside them.
"""

from __future__ import annotations

from typing import TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError

__all__ = ["exc_text", "first_in", "is_connection_error", "unreadable_text", "validation_text"]

# The SDK's own wording for a request cut off by the connection (code -32000 is also a common
# server error code, so the code alone does not prove the connection is gone).
_SDK_CLOSED_MESSAGES = ("Connection closed", "SSE stream ended without a response", "SSE stream failed")

_E = TypeVar("_E", bound=BaseException)

_QUOTED_CHARS = 200


def is_connection_error(exc: MCPError) -> bool:
    """Whether the SDK failed ``exc``'s request because the connection went, not the server."""
    return exc.code == types.CONNECTION_CLOSED and exc.message.startswith(_SDK_CLOSED_MESSAGES)


def first_in(failure: BaseException, kind: type[_E]) -> _E | None:
    """``failure`` if it is a ``kind``, else the first ``kind`` in it (task groups wrap errors)."""
    if isinstance(failure, kind):
        return failure
    if isinstance(failure, BaseExceptionGroup):
        for inner in failure.exceptions:
            if (found := first_in(inner, kind)) is not None:
                return found
    return None


def _leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside ``exc``, skipping cancellations."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def exc_text(exc: BaseException | None) -> str:
    """One line that says what went wrong: the type and first line, or an MCP error's code."""
    if exc is None:
        return "unknown error"
    leaf = _leaf(exc)
    text = str(leaf).strip().splitlines()[0] if str(leaf).strip() else ""
    if isinstance(leaf, MCPError):
        return f"{leaf.message} (code {leaf.code})"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def unreadable_text(exc: Exception) -> str:
    """What the server sent that is not JSON-RPC, quoted and cut to about 200 characters (for
    diagnostics); for what cannot be quoted (not UTF-8), the error."""
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors()
        if errors and "input" in errors[0]:
            found = errors[0]["input"]
            if isinstance(found, str):  # a line that is not JSON: cut before it is quoted
                return repr(_cut(found))
            return _cut(repr(found))
    return _cut(exc_text(exc))


def _cut(text: str) -> str:
    return text if len(text) <= _QUOTED_CHARS else text[: _QUOTED_CHARS - 1] + "…"


def validation_text(exc: pydantic.ValidationError) -> str:
    """The first validation error with where it is, and how many more there are."""
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', '')}{more}" if where else f"{first.get('msg', '')}{more}"
