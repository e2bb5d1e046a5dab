"""What OpenTelemetry costs per call: as shipped with no provider configured, against the same
runtime with its telemetry taken out, in the same process, interleaved.

``python -m benchmarks.telemetry_overhead [--calls N] [--rounds R]`` prints one JSON object.

"Taken out" replaces the code of the runtime's telemetry functions (`actors.runtime.telemetry`:
`current_context`, `request_span`, `end_span`, `run_in`) with bodies that return None, and its
instruments with ones whose ``add``/``record`` do nothing, so every call site (the messages'
default factory, the server actor, the adapter's context attach) skips its telemetry work; the
only cost left is a Python call per site. Phase 1 alternates shipped / taken out on one
runtime (the issue's target: the difference under 2% of a call); phase 2 sets the SDK's
tracer and meter providers with in-memory exporters and alternates recording / taken out
(for information: what a host that traces pays). A micro-benchmark of the telemetry calls
alone (the same sequence one call makes, in a tight loop) gives the low-noise estimate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from types import CodeType
from typing import Any

from benchmarks.common import load_average, runtime_config

TARGET_PERCENT = 2.0


class _NoInstrument:
    def add(self, *_: Any) -> None:
        pass

    def record(self, *_: Any) -> None:
        pass


class _NoInstruments:
    def __getattr__(self, _: str) -> _NoInstrument:
        return _NoInstrument()


def _current_context() -> None:
    return None


def _request_span(name: str, parent: Any, attributes: Any) -> None:
    return None


def _end_span(span: Any, error_type: Any, error: Any, duration_ms: Any) -> None:
    return None


def _run_in(span: Any) -> None:
    return None


class TelemetrySwitch:
    """Takes the runtime's telemetry out (and puts it back) for every call site at once."""

    def __init__(self) -> None:
        from actors.runtime import telemetry

        self._module = telemetry
        self._stubs: dict[str, Callable[..., Any]] = {
            "current_context": _current_context,
            "request_span": _request_span,
            "end_span": _end_span,
            "run_in": _run_in,
        }
        self._codes: dict[str, CodeType] = {n: getattr(telemetry, n).__code__ for n in self._stubs}
        self._off = False
        self._instruments: Any = None

    def off(self) -> None:
        if self._off:
            return
        for name, stub in self._stubs.items():
            # The code, not the name: the messages bound the function as their default factory.
            getattr(self._module, name).__code__ = stub.__code__
        self._instruments = self._module._instruments
        self._module._instruments = _NoInstruments()  # type: ignore[assignment]
        self._off = True

    def on(self) -> None:
        if not self._off:
            return
        for name, code in self._codes.items():
            getattr(self._module, name).__code__ = code
        self._module._instruments = self._instruments
        self._off = False


def _one_call_telemetry(telemetry: Any) -> None:
    """The telemetry work of one successful call, as the runtime does it."""
    context = telemetry.current_context()
    span = telemetry.request_span(
        "mcp.call_tool bench/echo",
        context,
        {
            "mcp_actors.namespace": "bench",
            "mcp_actors.target": "echo",
            "mcp_actors.server.pid": 1,
            "mcp_actors.server.restarts": 0,
        },
    )
    metrics = telemetry.instruments()
    labels = {"namespace": "bench", "target": "echo"}
    metrics.in_flight.add(1, labels)
    telemetry.run_in(span)
    telemetry.end_span(span, None, None, 1.0)
    outcome = {**labels, "outcome": "ok"}
    metrics.in_flight.add(-1, labels)
    metrics.calls.add(1, outcome)
    metrics.latency.record(1.0, outcome)


def _micro_us(iterations: int) -> float:
    from actors.runtime import telemetry

    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(iterations):
            _one_call_telemetry(telemetry)
        best = min(best, (time.perf_counter() - start) / iterations * 1e6)
    return best


def _alternate(
    rt: Any, switch: TelemetrySwitch, modes: tuple[str, str], calls: int, rounds: int
) -> dict[str, list[float]]:
    """Per-call seconds of each mode; ``modes[0]`` is telemetry on, ``modes[1]`` taken out."""
    samples: dict[str, list[float]] = {modes[0]: [], modes[1]: []}
    round_medians: dict[str, list[float]] = {modes[0]: [], modes[1]: []}
    for r in range(rounds):
        order = modes if r % 2 == 0 else modes[::-1]
        for mode in order:
            switch.on() if mode == modes[0] else switch.off()
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                result = rt.call_tool("bench/echo", {"text": "hello"}, timeout=30)
                times.append(time.perf_counter() - start)
                if not result.success:
                    raise RuntimeError(f"echo failed: {result.error}")
            samples[mode] += times
            round_medians[mode].append(statistics.median(times))
    switch.on()
    return {**samples, **{f"{m}_rounds": v for m, v in round_medians.items()}}


def _compare(data: dict[str, list[float]], on: str, off: str) -> dict[str, Any]:
    on_ms = statistics.median(data[on]) * 1000
    off_ms = statistics.median(data[off]) * 1000
    paired = [(a - b) / b * 100 for a, b in zip(data[f"{on}_rounds"], data[f"{off}_rounds"], strict=True)]
    return {
        f"{on}_ms": on_ms,
        f"{off}_ms": off_ms,
        "overhead_percent": (on_ms - off_ms) / off_ms * 100,
        "round_overhead_percent_median": statistics.median(paired),
        "calls_each": len(data[on]),
    }


def telemetry_overhead(calls: int = 300, rounds: int = 8, sdk_rounds: int = 4) -> dict[str, Any]:
    """Both phases and the micro-benchmark; the JSON the report reads."""
    from actors import Runtime

    switch = TelemetrySwitch()
    result: dict[str, Any] = {"target_percent": TARGET_PERCENT, "load_start": load_average()}
    with Runtime.start(runtime_config(["bench"])) as rt:
        for _ in range(50):  # start the server, warm the paths
            rt.call_tool("bench/echo", {"text": "warm"}, timeout=60)
        micro_none = _micro_us(20_000)
        result["no_provider"] = _compare(
            _alternate(rt, switch, ("shipped", "off"), calls, rounds), "shipped", "off"
        )
        result["no_provider"]["micro_us"] = micro_none

        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        data = _alternate(rt, switch, ("sdk", "off"), calls, sdk_rounds)
        spans = len(exporter.get_finished_spans())
        result["sdk_in_memory"] = _compare(data, "sdk", "off")
        result["sdk_in_memory"]["spans_recorded"] = spans
        result["sdk_in_memory"]["micro_us"] = _micro_us(5_000)
        provider.shutdown()
    none = result["no_provider"]
    none["micro_percent"] = none["micro_us"] / (none["off_ms"] * 1000) * 100
    sdk = result["sdk_in_memory"]
    sdk["micro_percent"] = sdk["micro_us"] / (sdk["off_ms"] * 1000) * 100
    result["load_end"] = load_average()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per mode per round")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    result = telemetry_overhead(args.calls, args.rounds, max(args.rounds // 2, 1))
    print(json.dumps(result))
    none, sdk = result["no_provider"], result["sdk_in_memory"]
    print(
        f"no provider: {none['shipped_ms']:.3f} ms vs taken out {none['off_ms']:.3f} ms "
        f"({none['overhead_percent']:+.2f}%, per round {none['round_overhead_percent_median']:+.2f}%); "
        f"the telemetry calls alone {none['micro_us']:.2f} µs ({none['micro_percent']:.2f}% of a call)"
    )
    print(
        f"SDK + in-memory exporters: {sdk['sdk_ms']:.3f} ms vs {sdk['off_ms']:.3f} ms "
        f"({sdk['overhead_percent']:+.2f}%); alone {sdk['micro_us']:.2f} µs; spans {sdk['spans_recorded']}"
    )


if __name__ == "__main__":
    main()
