"""The request messages a facade builds from its caller's arguments (`Runtime`, `AsyncRuntime`).

Pure functions: a name that is not ``namespace/name`` is answered at once (a `ToolResult`),
everything else goes to the actors as the caller gave it, to be refused there the one way
(`actors.tools.check`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.runtime.messages import CallTool, Complete, GetPrompt, OnProgress
from actors.tools import ErrorType, ToolResult

__all__ = ["completion", "prompt_request", "tool_call"]


def tool_call(
    name: str, arguments: Mapping[str, Any] | None, timeout: float | None, progress: OnProgress | None
) -> CallTool | ToolResult:
    """The `CallTool` of ``namespace/tool``, or why there is none."""
    namespace, sep, tool = name.partition("/") if isinstance(name, str) else ("", "", "")
    if not sep or not namespace or not tool:
        return ToolResult.fail(ErrorType.NOT_FOUND, _not_namespaced(name, "tool"))
    return CallTool(
        namespace=namespace, tool=tool, arguments=_copied(arguments), timeout=timeout, progress=progress
    )


def prompt_request(
    name: str, arguments: Mapping[str, str] | None, timeout: float | None
) -> GetPrompt | ToolResult:
    """The `GetPrompt` of ``namespace/prompt``, or why there is none."""
    namespace, sep, prompt = name.partition("/") if isinstance(name, str) else ("", "", "")
    if not sep or not namespace or not prompt:
        return ToolResult.fail(ErrorType.NOT_FOUND, _not_namespaced(name, "prompt"))
    return GetPrompt(namespace, prompt, _copied(arguments), timeout)


def _not_namespaced(name: object, kind: str) -> str:
    """Why ``name`` names nothing; for ``ns__tool``, the gateway's name of ``ns/tool`` (what a
    host shows), the name to use instead."""
    said = f"{name!r} is not 'namespace/{kind}'"
    if isinstance(name, str) and "__" in name.strip("_"):
        namespace, _, rest = name.partition("__")
        if namespace and rest:
            return f"{said}: did you mean '{namespace}/{rest}'? ({name!r} is the gateway's name for it)"
    return said


def completion(
    namespace: str,
    ref: str | Mapping[str, Any],
    argument: Mapping[str, str] | tuple[str, str],
    context: Mapping[str, str] | None,
    timeout: float | None,
) -> Complete:
    """The `Complete` request: ``ref`` a prompt name, a resource template URI or the MCP
    reference object; ``argument`` ``(name, value so far)`` or ``{"name": ..., "value": ...}``."""
    if isinstance(ref, str):
        ref = {"type": "ref/resource", "uri": ref} if "://" in ref else {"type": "ref/prompt", "name": ref}
    if isinstance(argument, tuple) and len(argument) == 2:
        argument = {"name": argument[0], "value": argument[1]}
    return Complete(
        namespace,
        dict(ref) if isinstance(ref, Mapping) else ref,
        dict(argument) if isinstance(argument, Mapping) else argument,
        dict(context) if context is not None else None,
        timeout,
    )


def _copied(arguments: Any) -> Any:
    """The caller's arguments, copied when they are a mapping (whatever else goes as it is)."""
    given: Any = {} if arguments is None else arguments
    return dict(given) if isinstance(given, Mapping) else given
