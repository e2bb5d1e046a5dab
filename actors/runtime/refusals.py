"""Answering a request that `actors.tools.check` refused: a failed result, a span, the metrics.

A refused call is sent nowhere, yet it is a call: its caller gets a `ToolResult` whose
`ToolResult.refusal` says why, the trace gets a span with its error type, and the metrics
count it, wherever it was refused (the facade, the built-in tools' actor, a server actor).
"""

from __future__ import annotations

from actors.runtime.messages import ServerRequest
from actors.runtime.reply import settle
from actors.runtime.semconv import request_attributes, span_name
from actors.runtime.telemetry import instruments, refused_span
from actors.tools import ToolResult
from actors.tools.check import Refusal

__all__ = ["answer_refusal"]


def answer_refusal(call: ServerRequest, refusal: Refusal, namespace: str | None = None) -> ToolResult:
    """Answer ``call`` with ``refusal``'s result, record its span and count it; the result."""
    ns = namespace if namespace is not None else str(call.namespace)
    result = refusal.result()
    target = str(call.target)
    labels = {"namespace": ns, "target": target}
    refused_span(
        span_name(call),
        call.trace_context,
        {**request_attributes(call, ns), "mcp_actors.refused": refusal.reason.value},
        refusal.error_type,
        result.error or refusal.message,
    )
    metrics = instruments()
    outcome = {**labels, "outcome": refusal.error_type.value}
    metrics.calls.add(1, outcome)
    metrics.errors.add(1, outcome)
    settle(call.reply, result)
    return result
