"""`refusal`: why a request cannot go to its server, decided without waking the server.

The request's own shape and size, then what the server is known to offer (once it ran, or the
schema cache knew): an unknown tool or prompt, a task-only tool, arguments that do not fit the
tool's schema, a prompt's missing arguments. Pure: called on the server actor's thread with
what it owns.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from actors.mcp.catalog import Catalog
from actors.runtime.messages import CallTool, GetPrompt, ServerRequest
from actors.tools import ErrorType, ToolResult, ToolSpec, validate_inputs

__all__ = ["refusal", "unknown"]

# How many of a server's names a "not found" answer lists.
_LISTED_NAMES = 20


def refusal(
    call: ServerRequest,
    namespace: str,
    max_argument_bytes: int | None,
    tools: Mapping[str, ToolSpec] | None,
    catalog: Catalog,
) -> ToolResult | None:
    """The failure to answer ``call`` with now, or None if it may go to the server."""
    if (problem := call.problem(max_argument_bytes)) is not None:
        return ToolResult.fail(ErrorType.VALIDATION, problem)
    if tools is None:
        return None  # nothing known yet: the server decides
    match call:
        case CallTool():
            spec = tools.get(call.tool)
            if spec is None:
                return ToolResult.fail(ErrorType.NOT_FOUND, unknown("tool", call.tool, tools, namespace))
            if spec.metadata.get("taskSupport") == "required":
                return ToolResult.fail(
                    ErrorType.VALIDATION,
                    f"tool {call.tool!r} of {namespace!r} can only run as a task "
                    '(execution.taskSupport "required"), which mcp-actors does not support',
                )
            if (problem := validate_inputs(spec, call.arguments)) is not None:
                return ToolResult.fail(ErrorType.VALIDATION, problem)
        case GetPrompt():
            prompts = {p.prompt_name: p for p in catalog.prompts}
            prompt = prompts.get(call.prompt)
            if prompt is None:
                return ToolResult.fail(
                    ErrorType.NOT_FOUND, unknown("prompt", call.prompt, prompts, namespace)
                )
            missing = [name for name in prompt.required if name not in call.arguments]
            if missing:
                return ToolResult.fail(
                    ErrorType.VALIDATION,
                    f"prompt {call.prompt!r} needs the argument{'s' if len(missing) > 1 else ''} "
                    + ", ".join(repr(m) for m in missing),
                )
    return None


def unknown(kind: str, name: str, known: Iterable[str], namespace: str) -> str:
    """``kind`` ``name`` is not offered: say so, with the nearest name and the known ones."""
    names = sorted(known)
    near = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    listed = ", ".join(names[:_LISTED_NAMES]) + (", ..." if len(names) > _LISTED_NAMES else "")
    offered = listed or "none"
    return f"{kind} {name!r} is not offered by server {namespace!r}{hint} (its {kind}s: {offered})"
