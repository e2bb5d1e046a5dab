"""Answering a request that `actors.tools.check` refused: a failed result, a span, the metrics.

A refused call is sent nowhere, yet it is a call: its caller gets a `ToolResult` whose
`ToolResult.refusal` says why, the trace gets a span with its error type, and the metrics
count it, wherever it was refused (the facade, the built-in tools' actor, a server actor).
"""

from __future__ import annotations

from actors.runtime.messages import CallTool, Complete, GetPrompt, ReadResource, ServerRequest
from actors.runtime.reply import settle
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, UpdateTask
from actors.runtime.telemetry import instruments, refused_span
from actors.tools import ToolResult
from actors.tools.check import Refusal

__all__ = ["answer_refusal", "span_name"]


def span_name(call: ServerRequest, namespace: str) -> str:
    """The name of ``call``'s span: ``mcp.call_tool ns/tool`` and the like."""
    match call:
        case CallTool():
            return f"mcp.call_tool {namespace}/{call.tool}"
        case ReadResource():
            return f"mcp.read_resource {namespace}"
        case GetPrompt():
            return f"mcp.get_prompt {namespace}/{call.prompt}"
        case Complete():
            return f"mcp.complete {namespace}"
        case StartTask():
            return f"mcp.start_task {namespace}/{call.tool}"
        case GetTask() | UpdateTask() | CancelTask():
            return f"mcp.{type(call).__name__.removesuffix('Task').lower()}_task {namespace}"


def answer_refusal(call: ServerRequest, refusal: Refusal, namespace: str | None = None) -> ToolResult:
    """Answer ``call`` with ``refusal``'s result, record its span and count it; the result."""
    ns = namespace if namespace is not None else str(call.namespace)
    result = refusal.result()
    target = str(call.target)
    labels = {"namespace": ns, "target": target}
    refused_span(
        span_name(call, ns),
        call.trace_context,
        {"mcp_actors.namespace": ns, "mcp_actors.target": target, "mcp_actors.refused": refusal.reason.value},
        refusal.error_type,
        result.error or refusal.message,
    )
    metrics = instruments()
    outcome = {**labels, "outcome": refusal.error_type.value}
    metrics.calls.add(1, outcome)
    metrics.errors.add(1, outcome)
    settle(call.reply, result)
    return result
