"""The one exception type of the tool runtime, and the classification of failures."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ErrorType", "RefusalReason", "ToolError", "duration_text", "error_label"]


class ErrorType(StrEnum):
    """How a failed tool call is classified in `ToolResult.error_type`.

    Members are strings, so ``result.error_type == "timeout"`` works.
    """

    VALIDATION = "validation"
    """The arguments (or the output) broke the tool's contract; nothing was sent."""
    NOT_FOUND = "not_found"
    """No such namespace or tool."""
    NOT_STARTED = "not_started"
    """The server is not running and may not be started lazily."""
    CONNECTION = "connection"
    """The transport could not connect, or the peer died."""
    TIMEOUT = "timeout"
    """The call did not finish within its timeout; it was cancelled."""
    SERVER_ERROR = "server_error"
    """The server answered with an error (a JSON-RPC error or ``isError``)."""
    EXECUTION = "execution"
    """A local handler raised."""
    FAILED = "failed"
    """The server exhausted its restarts and waits for an explicit start."""
    CANCELLED = "cancelled"
    """The caller or a shutdown cancelled the call."""
    AUTH = "auth"
    """A remote server needs a login, or refused the token."""

    @property
    def label(self) -> str:
        """The words a message of this type starts with (``"server error"``, ``"timeout"`` ...)."""
        return _LABELS.get(self.value, self.value.replace("_", " "))


class RefusalReason(StrEnum):
    """Why a request was refused before anything was sent (`actors.tools.check.check_call`).

    A refused call's `ToolResult` carries it as ``result.refusal``, beside its `ErrorType`:
    decide on it, never on the message's text.
    """

    MALFORMED = "malformed"
    """The request's own shape: a name that is not text, arguments that are not an object."""
    BAD_TIMEOUT = "bad_timeout"
    """The timeout is not a positive, finite number of seconds (a bool is not a number)."""
    NOT_JSON = "not_json"
    """The arguments are not strict JSON."""
    TOO_LARGE = "too_large"
    """The arguments are over the server's ``maxArgumentBytes``."""
    NOT_OFFERED = "not_offered"
    """The server (or the built-in tools) does not offer that tool or prompt (``not_found``)."""
    TASK_ONLY = "task_only"
    """The tool can only run as a task, which mcp-actors does not support."""
    SCHEMA = "schema"
    """The arguments break the tool's input schema, or the schema cannot be applied."""
    NOT_APPROVED = "not_approved"
    """The tool's (or prompt's) definition changed since it was pinned, and waits for an approval
    (``mcp-actors approve``, `actors.pins`): hidden and refused meanwhile (``not_found``, as a
    tool not offered)."""


_LABELS = {
    "validation": "validation error",
    "connection": "connection error",
    "execution": "execution error",
    "auth": "auth error",
}


def duration_text(seconds: float) -> str:
    """Seconds for a message, rounded to what a reader needs: ``30 s``, ``0.25 s``, ``12.3 s``."""
    return f"{seconds:.3g} s" if seconds < 1000 else f"{seconds:.0f} s"


def error_label(error_type: str) -> str:
    """The label of ``error_type``: an `ErrorType`'s `label`, or free text as it is."""
    try:
        return ErrorType(error_type).label
    except ValueError:
        return str(error_type)


class ToolError(Exception):
    """A structured tool-runtime error: which tool, what kind of failure, and why.

    ``error_type`` is free text for runtime-level errors (``RegistrationError``,
    ``ActivationError``, ``ExecutionError``) or an `ErrorType` value for call failures.
    """

    def __init__(self, tool_name: str, error_type: str, details: str = "") -> None:
        self.tool_name = tool_name
        self.error_type = str(error_type)
        self.details = details
        message = f"{self.error_type}: {tool_name}"
        if details:
            message += f": {details}"
        super().__init__(message)

    def __reduce__(self) -> tuple[type[ToolError], tuple[str, str, str]]:
        return (type(self), (self.tool_name, self.error_type, self.details))
