"""`check_call`: the one check of a call before it is sent, and the `Refusal` it returns.

Every path that sends a call checks it here, the same way: the `Runtime` facade, the request
messages (`CallTool.refusal`), the built-in tools' actor, the MCP adapter and the gateway. A
refusal is a classified value (an `ErrorType` and a `RefusalReason`), never text to match.

The steps, cheapest first: the request's shape (arguments an object, a timeout that is a
positive number of seconds, and a bool is not one), its size and strictness as JSON
(``maxArgumentBytes``), whether the tool is offered, and its arguments against the tool's input
schema. Only the last can take long (up to `actors.tools.schema.PATTERN_BUDGET` of regular
expression matching): a thread that must stay responsive (an actor's mailbox, the event loop)
checks with ``schema=False`` and leaves the schema to a worker thread (the adapter does it with
``anyio.to_thread``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from actors.tools.errors import ErrorType, RefusalReason
from actors.tools.json_check import DEFAULT_MAX_ARGUMENT_BYTES, json_problem
from actors.tools.result import REFUSAL_KEY, ToolResult
from actors.tools.schema import validate_inputs
from actors.tools.spec import ToolSpec

__all__ = ["Refusal", "check_call", "check_timeout", "is_seconds", "not_offered"]

# How many of a server's names a "not offered" message lists.
_LISTED_NAMES = 20
# SEP-2243: the property keyword that mirrors an argument into an ``Mcp-Param-*`` header.
_HEADER_KEYWORD = "x-mcp-header"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call is not sent: its classification, the reason, and a message for people."""

    error_type: ErrorType
    reason: RefusalReason
    message: str

    def result(self, **metadata: Any) -> ToolResult:
        """The failed `ToolResult` of the refused call; its `ToolResult.refusal` is `reason`."""
        details: dict[str, Any] = {**metadata, REFUSAL_KEY: self.reason.value}
        return ToolResult.fail(self.error_type, self.message, **details)


def is_seconds(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a positive, finite number of seconds (``True`` is not a number)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


def check_timeout(timeout: object) -> Refusal | None:
    """Why ``timeout`` (None: the server's own) is no timeout, or None."""
    if timeout is None or is_seconds(timeout):
        return None
    return Refusal(
        ErrorType.VALIDATION,
        RefusalReason.BAD_TIMEOUT,
        f"timeout must be a positive number of seconds, got {timeout!r}",
    )


def check_call(
    arguments: object,
    *,
    timeout: object = None,
    max_argument_bytes: int | None = DEFAULT_MAX_ARGUMENT_BYTES,
    tool: str | None = None,
    offered: Mapping[str, ToolSpec] | None = None,
    server: str = "",
    shape: bool = True,
    schema: bool = True,
) -> Refusal | None:
    """Why a call of ``tool`` with ``arguments`` must not be sent, or None if it may.

    ``max_argument_bytes``: the server's ``maxArgumentBytes`` (None: no limit).
    ``offered``: the tools the server offers, by their name without namespace, when known
    (None: unknown, the tool and its schema are not checked). ``server`` names it in messages.
    ``schema=False`` leaves out the input schema, the one step that may take long;
    ``shape=False`` leaves out what an earlier check of the same call did (shape and size).
    """
    if shape and (refusal := _shape(arguments, timeout, max_argument_bytes)) is not None:
        return refusal
    if offered is None or tool is None or not isinstance(arguments, Mapping):
        return None
    spec = offered.get(tool)
    if spec is None:
        return not_offered("tool", tool, offered, server)
    if spec.metadata.get("taskSupport") == "required":
        return Refusal(
            ErrorType.VALIDATION,
            RefusalReason.TASK_ONLY,
            f"tool {tool!r} of {server!r} can only run as a task "
            '(execution.taskSupport "required"), which mcp-actors does not support',
        )
    if schema and (problem := validate_inputs(spec, _as_given(spec, arguments))) is not None:
        return Refusal(ErrorType.VALIDATION, RefusalReason.SCHEMA, problem)
    return None


def _as_given(spec: ToolSpec, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """``arguments`` without the nulls that SEP-2243 reads as "not given": a top-level property
    the schema mirrors into a header (``x-mcp-header``) and does not require, passed as null,
    has its header omitted, so it is checked as omitted (and sent as the caller gave it)."""
    if None not in arguments.values():
        return arguments
    properties = spec.input_schema.get("properties")
    required = spec.input_schema.get("required")
    if not isinstance(properties, Mapping):
        return arguments
    needed = set(required) if isinstance(required, list) else set()

    def omitted(name: str, value: object) -> bool:
        declared = properties.get(name)
        return (
            value is None
            and name not in needed
            and isinstance(declared, Mapping)
            and declared.get(_HEADER_KEYWORD) is not None
        )

    return {name: value for name, value in arguments.items() if not omitted(name, value)}


def _shape(arguments: object, timeout: object, max_argument_bytes: int | None) -> Refusal | None:
    if not isinstance(arguments, Mapping):
        return Refusal(
            ErrorType.VALIDATION,
            RefusalReason.MALFORMED,
            f"arguments must be an object, got {type(arguments).__name__}",
        )
    if (refusal := check_timeout(timeout)) is not None:
        return refusal
    if (problem := json_problem(arguments, "arguments", max_bytes=max_argument_bytes)) is not None:
        too_large, why = problem
        return Refusal(
            ErrorType.VALIDATION, RefusalReason.TOO_LARGE if too_large else RefusalReason.NOT_JSON, why
        )
    return None


def not_offered(kind: str, name: str, known: Iterable[str], server: str) -> Refusal:
    """The refusal of a ``kind`` (``tool``, ``prompt``) that ``server`` does not offer; ``known``
    (names, or a mapping by name) are what it offers, for a hint."""
    names = sorted(known)
    near = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    listed = ", ".join(names[:_LISTED_NAMES]) + (", ..." if len(names) > _LISTED_NAMES else "")
    offered = listed or "none"
    return Refusal(
        ErrorType.NOT_FOUND,
        RefusalReason.NOT_OFFERED,
        f"{kind} {name!r} is not offered by server {server!r}{hint} (its {kind}s: {offered})",
    )
