"""OpenTelemetry: a span per request and the runtime's metrics, through the OpenTelemetry API.

Nothing is recorded unless the host configures a tracer or meter provider (the API's default
providers do nothing, cheaply). A request's span starts on the server actor, as a child of
the context its caller had when it made the message (`CallTool.trace_context`: the context
crosses threads inside the message), and ends when the answer is settled. The SDK's own
client span for the JSON-RPC request nests under it, and carries the W3C trace context to
the server in the request's ``_meta`` (``traceparent``), so a server that traces joins the
trace.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

__all__ = [
    "Instruments",
    "current_context",
    "end_span",
    "instruments",
    "refused_span",
    "request_span",
    "run_in",
]

_NAME = "mcp-actors"

_tracer = trace.get_tracer(_NAME)


def current_context() -> otel_context.Context:
    """The caller's OpenTelemetry context (captured when a request message is made)."""
    return otel_context.get_current()


def request_span(name: str, parent: otel_context.Context | None, attributes: dict[str, Any]) -> Span:
    """Start (not enter) the span of one request, as a child of ``parent``."""
    return _tracer.start_span(name, context=parent, kind=SpanKind.CLIENT, attributes=attributes)


def end_span(span: Span, error_type: str | None, error: str | None, duration_ms: float) -> None:
    """End a request's span with its outcome."""
    if not span.is_recording():
        span.end()
        return
    span.set_attribute("mcp_actors.duration_ms", duration_ms)
    if error_type is not None:
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, (error or error_type)[:200]))
    span.end()


def refused_span(
    name: str, parent: otel_context.Context | None, attributes: dict[str, Any], error_type: str, error: str
) -> None:
    """The span of a request refused before it was sent: started and ended at once, with its
    error type, so a refused call is in the trace as it is in the metrics."""
    end_span(request_span(name, parent, attributes), error_type, error, 0.0)


def run_in(span: Span) -> otel_context.Context:
    """The context in which the request's own work (the SDK round trip) runs: the span's."""
    return trace.set_span_in_context(span)


class Instruments:
    """The runtime's metrics (no-ops until the host sets a meter provider)."""

    def __init__(self) -> None:
        meter = metrics.get_meter(_NAME)
        self.calls = meter.create_counter("mcp_actors.calls", description="Requests answered, by outcome")
        self.errors = meter.create_counter(
            "mcp_actors.errors", description="Requests that failed, by error type"
        )
        self.latency = meter.create_histogram(
            "mcp_actors.call.duration", unit="ms", description="Time from dispatch to answer"
        )
        self.in_flight = meter.create_up_down_counter(
            "mcp_actors.calls.in_flight", description="Requests sent and not yet answered"
        )
        self.restarts = meter.create_counter("mcp_actors.restarts", description="Server restarts")
        self.health_failures = meter.create_counter(
            "mcp_actors.health_check.failures", description="Failed health probes"
        )
        self.start_time = meter.create_histogram(
            "mcp_actors.server.start.duration", unit="ms", description="Time to connect and list"
        )
        self.state_changes = meter.create_counter(
            "mcp_actors.server.state_changes", description="Lifecycle state changes, by new state"
        )


_instruments: Instruments | None = None


def instruments() -> Instruments:
    """The process's instruments, made on first use (after the host set its providers)."""
    global _instruments
    if _instruments is None:
        _instruments = Instruments()
    return _instruments
