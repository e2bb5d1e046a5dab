"""The suite as ASV (airspeed velocity) benchmark classes, to track it over the history.

From the repository root: ``asv run --config benchmarks/asv.conf.json`` (or, against the
project's own environment, ``asv run --config benchmarks/asv.conf.json --python=same`` from an
interpreter that has both ``asv`` and this project installed).

``time_*`` methods are timed by ASV itself; ``track_*`` methods return the same-run ratios and
absolute values that ``python -m benchmarks`` reports (computed once per class in
``setup_cache``, at reduced sizes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from typing import Any

from benchmarks import per_call, suite
from benchmarks.common import ROOT, SDKLoop, runtime_config

ECHO_ARGS = suite.ECHO_ARGS

# Smaller than the full run, larger than --quick: ratios stay meaningful, ASV stays bearable.
ASV_SIZES = replace(
    suite.FULL,
    overhead_rounds=10,
    concurrency_reps=3,
    isolation_samples=60,
    isolation_rounds=2,
    fanout_reps=2,
    cold_reps=3,
)


class PerCall:
    """Latency of one echo call through each API (ASV times them)."""

    timeout = 120.0
    warmup_time = 0.2

    def setup(self) -> None:
        from actors import Runtime

        self.rt = Runtime.start(runtime_config(["echo"]))
        for _ in range(20):
            self.rt.call_tool("echo/echo", ECHO_ARGS, timeout=30)
        self.sdk = SDKLoop()
        (self.client,) = self.sdk.connect(1)

    def teardown(self) -> None:
        self.rt.shutdown()
        self.sdk.stop()

    def time_call_tool(self) -> None:
        self.rt.call_tool("echo/echo", ECHO_ARGS, timeout=30)

    def time_message_api(self) -> None:
        from actors.runtime.messages import CallTool

        message = CallTool("echo", "echo", ECHO_ARGS)
        self.rt.registry.tell(message)
        message.reply.result(timeout=30)

    def time_sdk_from_a_thread(self) -> None:
        self.sdk.run(self.client.call_tool("echo", ECHO_ARGS))


class Concurrency:
    """64 concurrent calls of a 0.2 s tool on one server (target: <= 0.30 s)."""

    timeout = 120.0
    number = 1
    repeat = 5
    warmup_time = 0.0

    def setup(self) -> None:
        from actors import Runtime

        self.rt = Runtime.start(runtime_config(["slow"]))
        self.rt.call_tool("slow/echo", ECHO_ARGS, timeout=30)

    def teardown(self) -> None:
        self.rt.shutdown()

    def time_64_sleep_calls(self) -> None:
        from actors.runtime.messages import CallTool

        messages = [CallTool("slow", "sleep", {"seconds": 0.2}) for _ in range(64)]
        for message in messages:
            self.rt.registry.tell(message)
        for message in messages:
            message.reply.result(timeout=60)


class Targets:
    """The same-run ratios of the report, tracked over history."""

    timeout = 600.0

    def setup_cache(self) -> dict[str, Any]:
        return {
            "overhead": per_call.per_call_overhead(ASV_SIZES),
            "isolation": suite.isolation(ASV_SIZES),
            "fan_out": suite.fan_out(ASV_SIZES),
            "cold_start": suite.cold_start(ASV_SIZES),
        }

    def track_overhead_ratio_call_tool(self, cache: dict[str, Any]) -> float:
        return float(cache["overhead"]["call_tool"]["ratio"])

    track_overhead_ratio_call_tool.unit = "ratio"  # type: ignore[attr-defined]

    def track_overhead_ratio_message_api(self, cache: dict[str, Any]) -> float:
        return float(cache["overhead"]["message"]["ratio"])

    track_overhead_ratio_message_api.unit = "ratio"  # type: ignore[attr-defined]

    def track_isolation_ratio(self, cache: dict[str, Any]) -> float:
        return float(cache["isolation"]["ratio"])

    track_isolation_ratio.unit = "ratio"  # type: ignore[attr-defined]

    def track_fan_out_throughput_ratio(self, cache: dict[str, Any]) -> float:
        return float(cache["fan_out"]["ratio"])

    track_fan_out_throughput_ratio.unit = "ratio"  # type: ignore[attr-defined]

    def track_cold_start_delta_ms(self, cache: dict[str, Any]) -> float:
        return float(cache["cold_start"]["delta_ms"])

    track_cold_start_delta_ms.unit = "ms"  # type: ignore[attr-defined]


class Scale:
    """1,000 lazy servers and 20 running ones, measured in a process of their own."""

    timeout = 300.0

    def setup_cache(self) -> dict[str, Any]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.scale_probe", "1000", "20"],
            capture_output=True,
            text=True,
            timeout=280,
            cwd=ROOT,
            env=env,
            check=True,
        )
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    def track_start_seconds(self, cache: dict[str, Any]) -> float:
        return float(cache["lazy"]["start_s"])

    track_start_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_rss_growth_mib(self, cache: dict[str, Any]) -> float:
        return float(cache["lazy"]["rss_growth_mib"])

    track_rss_growth_mib.unit = "MiB"  # type: ignore[attr-defined]

    def track_threads_lazy(self, cache: dict[str, Any]) -> int:
        return int(cache["lazy"]["threads_after"])

    track_threads_lazy.unit = "threads"  # type: ignore[attr-defined]

    def track_shutdown_20_running_seconds(self, cache: dict[str, Any]) -> float:
        return float(cache["running"]["shutdown_s"])

    track_shutdown_20_running_seconds.unit = "seconds"  # type: ignore[attr-defined]
