"""OpenTelemetry: a call's spans form one trace across threads; crashes and restarts are recorded;
nothing is recorded when the host configures no provider.

The global providers can be set once per process: this module sets them once, and collects
only while a test asks it to, so the rest of the run is not slowed or filled with spans.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import StatusCode

from actors import CallTool, Runtime
from actors.runtime.semconv import CONTENT_LIMIT
from tests.conftest import wait_until
from tests.runtime.conftest import ROOT, config, stdio_server

WAIT = 30.0


class _Collector(SpanProcessor):
    """Keeps ended spans while `collecting` is set."""

    def __init__(self) -> None:
        self.collecting = False
        self.spans: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if self.collecting:
            with self._lock:
                self.spans.append(span)

    def named(self, prefix: str) -> list[ReadableSpan]:
        with self._lock:
            return [s for s in self.spans if s.name.startswith(prefix)]


_collector = _Collector()
_reader = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def _providers() -> None:
    provider = TracerProvider()
    provider.add_span_processor(_collector)
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_reader]))


@pytest.fixture
def spans() -> Iterator[_Collector]:
    _collector.spans.clear()
    _collector.collecting = True
    try:
        yield _collector
    finally:
        _collector.collecting = False
        _collector.spans.clear()


def metric_total(name: str, namespace: str) -> float:
    data = _reader.get_metrics_data()
    total = 0.0
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    if point.attributes.get("namespace") == namespace:
                        total += getattr(point, "value", 0) or 0
    return total


def trace_ids(found: Sequence[ReadableSpan]) -> set[int]:
    return {span.context.trace_id for span in found if span.context is not None}


def test_a_calls_spans_form_one_trace_across_threads(spans: _Collector) -> None:
    tracer = trace.get_tracer("the host")
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        with tracer.start_as_current_span("the host's request") as root:
            result = rt.call_tool("fx/echo", {"text": "traced"}, timeout=WAIT)
        assert result.success, result
        assert wait_until(lambda: spans.named("MCP send tools/call"), WAIT)
        negotiated = rt.status("fx")[0].protocol_version
    (call,) = spans.named("tools/call echo")
    (sent,) = spans.named("MCP send tools/call echo")
    host_trace = root.get_span_context().trace_id
    assert trace_ids([call, sent]) == {host_trace}
    assert call.parent is not None and call.parent.span_id == root.get_span_context().span_id
    assert sent.parent is not None and call.context is not None
    assert sent.parent.span_id == call.context.span_id
    assert call.attributes is not None
    assert call.attributes["mcp_actors.namespace"] == "fx"
    assert call.attributes["mcp_actors.target"] == "echo"
    assert call.attributes["mcp_actors.server.pid"] > 0
    assert call.status.status_code != StatusCode.ERROR
    # The OpenTelemetry semantic conventions for MCP (an mcp.client span).
    assert call.kind == trace.SpanKind.CLIENT
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call.attributes["gen_ai.tool.name"] == "echo"
    assert call.attributes["network.transport"] == "pipe"
    assert negotiated and call.attributes["mcp.protocol.version"] == negotiated
    # Arguments and results only when the host opts in.
    assert "gen_ai.tool.call.arguments" not in call.attributes
    assert "gen_ai.tool.call.result" not in call.attributes


def test_arguments_and_results_are_recorded_only_when_opted_in_and_cut(
    spans: _Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with Runtime.start(config({"fx": stdio_server("fixture_server", "--surface")})) as rt:
        assert rt.call_tool("fx/echo", {"text": "seen"}, timeout=WAIT).success
        assert rt.call_tool("fx/echo", {"text": "y" * 100_000}, timeout=WAIT).success
        assert rt.read_resource("fx", "fixture://greeting", timeout=WAIT).success
        assert wait_until(lambda: len(spans.named("tools/call echo")) == 2, WAIT)
        assert wait_until(lambda: spans.named("resources/read"), WAIT)
    small, big = sorted(spans.named("tools/call echo"), key=lambda span: span.start_time or 0)
    assert small.attributes is not None and big.attributes is not None
    assert json.loads(str(small.attributes["gen_ai.tool.call.arguments"])) == {"text": "seen"}
    assert "seen" in str(small.attributes["gen_ai.tool.call.result"])
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        recorded = str(big.attributes[key])
        assert len(recorded) <= CONTENT_LIMIT + len("…(cut)") and recorded.endswith("…(cut)")
    (read,) = spans.named("resources/read")
    assert read.attributes is not None
    assert read.attributes["mcp.method.name"] == "resources/read"
    assert read.attributes["mcp.resource.uri"] == "fixture://greeting"


def test_a_message_api_call_carries_the_senders_context(spans: _Collector) -> None:
    tracer = trace.get_tracer("the host")
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        with tracer.start_as_current_span("sender") as root:
            message = CallTool("fx", "add", {"a": 1, "b": 2})
        rt.registry.tell(message)  # sent outside the span: the message remembers it
        assert message.reply.result(timeout=WAIT).success
        assert wait_until(lambda: spans.named("tools/call add"), WAIT)
    (call,) = spans.named("tools/call add")
    assert call.context is not None and call.context.trace_id == root.get_span_context().trace_id


def test_a_crash_shows_as_an_error_span_and_a_restart_metric(spans: _Collector) -> None:
    restarts_before = metric_total("mcp_actors.restarts", "fx")
    with Runtime.start(config({"fx": stdio_server(restartBackoff=0.05)})) as rt:
        assert rt.call_tool("fx/echo", {"text": "up"}, timeout=WAIT).success
        pid = rt.status("fx")[0].pid
        assert pid is not None
        slow = CallTool("fx", "sleep", {"seconds": 30}, timeout=60)
        rt.registry.tell(slow)
        assert wait_until(lambda: rt.status("fx")[0].in_flight == 1, WAIT)
        os.kill(pid, signal.SIGKILL)
        assert slow.reply.result(timeout=WAIT).error_type == "connection"
        assert wait_until(lambda: rt.status("fx")[0].restarts == 1, WAIT)
        assert wait_until(lambda: spans.named("tools/call sleep"), WAIT)
    (failed,) = spans.named("tools/call sleep")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "connection"
    assert spans.named("mcp.server.crash fx")
    assert metric_total("mcp_actors.restarts", "fx") == restarts_before + 1
    assert metric_total("mcp_actors.errors", "fx") >= 1


def test_nothing_is_recorded_without_a_provider() -> None:
    # A fresh interpreter: this module has set global providers in this one.
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from opentelemetry import trace
        from actors import Runtime
        from actors.runtime import telemetry
        from tests.runtime.conftest import config, stdio_server
        with Runtime.start(config({{"fx": stdio_server(real_process=True)}})) as rt:
            assert rt.call_tool("fx/echo", {{"text": "x"}}, timeout=30).success
        span = telemetry.request_span("probe", None, {{}})
        assert not span.is_recording(), span
        assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
        print("nothing recorded")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "nothing recorded" in done.stdout


def test_a_call_refused_by_the_check_is_a_span_with_its_error_type(spans: _Collector) -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/echo", {"text": "up"}, timeout=WAIT).success
        # Refused by the adapter (the input schema, off the loop), by the server actor (the
        # message's timeout), by the facade (the same timeout, before anything is sent).
        assert rt.call_tool("fx/echo", {"text": 1}, timeout=WAIT).error_type == "validation"
        message = CallTool("fx", "add", {"a": 1, "b": 2}, timeout=True)  # type: ignore[arg-type]
        rt.registry.tell(message)
        assert message.reply.result(timeout=WAIT).error_type == "validation"
        facade = rt.call_tool("fx/sleep", {"seconds": 0}, timeout=True)  # type: ignore[arg-type]
        assert facade.error_type == "validation", facade
        assert wait_until(lambda: len(spans.named("tools/call echo")) == 2, WAIT)
    echo = [s for s in spans.named("tools/call echo") if s.status.status_code == StatusCode.ERROR]
    (add,) = spans.named("tools/call add")
    (sleep,) = spans.named("tools/call sleep")
    for span in (echo[0], add, sleep):
        assert span.attributes is not None
        assert span.attributes["error.type"] == "validation"
    for span in (add, sleep):
        assert span.attributes is not None and span.attributes["mcp_actors.refused"] == "bad_timeout"
