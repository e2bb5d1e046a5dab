"""`classify`: the `ErrorType` of an exception from a transport, and a message led by its label."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from actors.mcp.transport import ServerReplyError, stray_text
from actors.tools import ErrorType, ToolError, error_label

__all__ = ["classify", "connect_failure", "labelled"]


def classify(exc: BaseException) -> tuple[ErrorType, str]:
    """The `ErrorType` of an exception from a transport, and a message that starts with its label."""
    kind: ErrorType
    if isinstance(exc, ToolError):
        known = {member.value for member in ErrorType}
        kind = ErrorType(exc.error_type) if exc.error_type in known else ErrorType.SERVER_ERROR
        text = exc.details or str(exc)
    elif isinstance(exc, TimeoutError):
        kind, text = ErrorType.TIMEOUT, str(exc)
    elif isinstance(exc, ServerReplyError):
        kind, text = ErrorType.SERVER_ERROR, str(exc)
    elif isinstance(
        exc,
        ConnectionError | OSError | anyio.BrokenResourceError | anyio.ClosedResourceError | anyio.EndOfStream,
    ):
        kind, text = ErrorType.CONNECTION, str(exc) or type(exc).__name__
    else:
        kind, text = ErrorType.SERVER_ERROR, f"{type(exc).__name__}: {exc}"
    return kind, labelled(kind, text)


def labelled(kind: ErrorType, text: str) -> str:
    """``text`` led by ``kind``'s label, once."""
    label = error_label(kind)
    if not text or text == label:
        return label
    return text if text.startswith(f"{label}:") else f"{label}: {text}"


def connect_failure(
    exc: BaseException,
    server: str,
    timeout: float,
    redact: Callable[[str], str],
    stray: Sequence[str] = (),
) -> ToolError:
    """What a failed connect raises: ``auth`` as it came (a login is needed, or was refused),
    anything else a ``connection`` failure (a timeout says so, and quotes ``stray``: what the
    server wrote to stdout that is not MCP, `actors.mcp.transport.StrayOutput`)."""
    if isinstance(exc, ToolError) and exc.error_type == ErrorType.AUTH:
        return exc
    if isinstance(exc, TimeoutError):
        quoted = f"; {redact(stray_text(stray))}" if stray else ""
        return ToolError(server, ErrorType.CONNECTION, f"connection timed out after {timeout}s{quoted}")
    reason = redact(str(exc) or type(exc).__name__)
    return ToolError(server, ErrorType.CONNECTION, f"connection failed: {reason}")
