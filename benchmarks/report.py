"""Writes ``docs/performance.md`` and its plot from a results JSON.

``python -m benchmarks.report [benchmarks/results/latest.json]`` rewrites both from a saved run.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import agent_frameworks, gateway_load
from benchmarks.common import RESULTS_DIR, ROOT
from benchmarks.profiling import is_wait

DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "generated" / "performance.png"


@dataclass
class Row:
    id: str
    benchmark: str
    measure: str
    median: str
    p95: str
    reference: str
    ratio: str
    target: str
    met: bool | None
    value: float | None = None
    """The number compared with the target (for the plot: value / threshold)."""
    threshold: float | None = None
    higher_is_better: bool = False

    @property
    def met_text(self) -> str:
        return "—" if self.met is None else ("yes" if self.met else "**no**")


def _f(value: Any, digits: int = 2, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}{unit}"


def _at_most(
    id: str,
    benchmark: str,
    measure: str,
    median: str,
    p95: str,
    reference: str,
    ratio: float,
    limit: float,
    per_round: bool = True,
) -> Row:
    """A row whose target is a same-run ratio of at most ``limit``: the median of per-round
    ratios (``per_round``), else of the whole run's figures."""
    return Row(
        id=id,
        benchmark=benchmark,
        measure=measure,
        median=median,
        p95=p95,
        reference=reference,
        ratio=_f(ratio, 3),
        target=f"{'per-round ' if per_round else ''}ratio ≤ {limit:g}",
        met=ratio <= limit,
        value=ratio,
        threshold=limit,
    )


def target_rows(results: dict[str, Any]) -> list[Row]:
    b = results.get("benchmarks", {})
    rows: list[Row] = []

    over = b.get("overhead")
    if over and "error" not in over:
        sdk = over["sdk"]
        paired = over.get("round_ratio_median", {})
        for key, label in (("call_tool", "`rt.call_tool`"), ("message", "message API (`tell` + reply)")):
            data = over[key]
            # Issue 40: at most 1.1 times the SDK alone, as the median of per-round ratios.
            ratio = paired.get(key, data["ratio"])
            rows.append(
                _at_most(
                    f"overhead.{key}",
                    f"Per-call overhead: {label}",
                    "echo latency (ms)",
                    _f(data["median"], 3),
                    _f(data["p95"], 3),
                    f"{_f(sdk['median'], 3)} (`mcp.Client` alone)",
                    ratio,
                    1.1,
                )
            )
    rows += _peer_rows(b.get("peers"), over)

    conc = b.get("concurrency")
    if conc and "error" not in conc:
        ours, sdk = conc["message"], conc["sdk"]
        rows.append(
            Row(
                id="concurrency",
                benchmark=(
                    f"Concurrency: {conc['calls']} calls of a {conc['tool_seconds']} s tool, one server"
                ),
                measure="wall time (s)",
                median=_f(ours["median"], 3),
                p95=_f(ours["p95"], 3),
                reference=f"{_f(sdk['median'], 3)} (SDK, `asyncio.gather`)",
                ratio=_f(ours["median"] / sdk["median"], 3),
                target="wall ≤ 0.30 s",
                met=ours["median"] <= 0.30,
                value=ours["median"],
                threshold=0.30,
            )
        )
        hosted = conc.get("asyncio_host")
        if hosted:
            rows.append(
                Row(
                    id="concurrency.asyncio_host",
                    benchmark=(
                        f"Concurrency from an asyncio host: {conc['calls']} calls (message API + "
                        "`asyncio.wrap_future`)"
                    ),
                    measure="wall time (s)",
                    median=_f(hosted["median"], 3),
                    p95=_f(hosted["p95"], 3),
                    reference=f"{_f(sdk['median'], 3)} (SDK, `asyncio.gather`)",
                    ratio=_f(hosted["ratio"], 3),
                    target="ratio ≤ 1.1",
                    met=hosted["ratio"] <= 1.1,
                    value=hosted["ratio"],
                    threshold=1.1,
                )
            )
        awaited = conc.get("async_runtime")
        if awaited:
            rows.append(
                Row(
                    id="concurrency.async_runtime",
                    benchmark=(
                        f"Concurrency from an asyncio host: {conc['calls']} calls (`AsyncRuntime.call_tool`)"
                    ),
                    measure="wall time (s)",
                    median=_f(awaited["median"], 3),
                    p95=_f(awaited["p95"], 3),
                    reference=f"{_f(sdk['median'], 3)} (SDK, `asyncio.gather`)",
                    ratio=_f(awaited["ratio"], 3),
                    target="ratio ≤ 1.05",
                    met=awaited["ratio"] <= 1.05,
                    value=awaited["ratio"],
                    threshold=1.05,
                )
            )

    iso = b.get("isolation")
    if iso and "error" not in iso:
        rows.append(
            Row(
                id="isolation",
                benchmark=f"Isolation: echo on B while {iso['load_calls']} slow calls run on A",
                measure="echo latency on B (ms)",
                median=_f(iso["loaded"]["median"], 3),
                p95=_f(iso["loaded"]["p95"], 3),
                reference=f"{_f(iso['idle']['median'], 3)} (B with A idle)",
                ratio=_f(iso["ratio"], 3),
                target="ratio ≤ 2",
                met=iso["ratio"] <= 2.0,
                value=iso["ratio"],
                threshold=2.0,
            )
        )

    fan = b.get("fan_out")
    cpu = (fan or {}).get("cpu_us_per_call") or {}
    if fan and "error" not in fan and cpu.get("ours") and cpu.get("sdk"):
        rows.append(
            _at_most(
                "fan_out.cpu",
                f"Fan-out: CPU per call of the client process, {fan['inflight']} in flight",
                "CPU (µs/call)",
                _f(cpu["ours"], 0),
                "—",
                f"{_f(cpu['sdk'], 0)} (SDK, one asyncio loop)",
                cpu["ours"] / cpu["sdk"],
                1.1,
                per_round=False,
            )
        )
    if fan and "error" not in fan:
        rows.append(
            Row(
                id="fan_out",
                benchmark=(
                    f"Fan-out: {fan['servers']} servers, {fan['calls']:,} echo calls, "
                    f"{fan['inflight']} in flight"
                ),
                measure="throughput (calls/s)",
                median=_f(fan["ours"]["median"], 0),
                p95="—",
                reference=f"{_f(fan['sdk']['median'], 0)} (SDK, one asyncio loop)",
                ratio=_f(fan["ratio"], 3),
                target="ratio ≥ 0.8",
                met=fan["ratio"] >= 0.8,
                value=fan["ratio"],
                threshold=0.8,
                higher_is_better=True,
            )
        )

    cold = b.get("cold_start")
    if cold and "error" not in cold:
        rows.append(
            Row(
                id="cold_start",
                benchmark="Cold start: first call on a lazy server",
                measure="first call (ms)",
                median=_f(cold["ours"]["median"], 1),
                p95=_f(cold["ours"]["p95"], 1),
                reference=f"{_f(cold['sdk']['median'], 1)} (SDK spawn + handshake + call)",
                ratio=f"Δ {cold['delta_ms']:+.1f} ms",
                target="Δ ≤ 30 ms",
                met=cold["delta_ms"] <= 30.0,
                value=cold["delta_ms"],
                threshold=30.0,
            )
        )

    rows += _sandbox_rows(b.get("sandbox"))
    big = b.get("big_messages")
    if big and "error" not in big:
        ours, sdk = big["ours"], big["sdk"]
        rows.append(
            Row(
                id="big_messages",
                benchmark=(
                    f"Big messages (stdio): one {big['big_mb']} MB tool result vs "
                    f"{big['small_count']} of {big['small_mb']} MB"
                ),
                measure=f"one {big['big_mb']} MB result (ms)",
                median=_f(ours["one_big"]["median"], 1),
                p95=_f(ours["one_big"]["p95"], 1),
                reference=(
                    f"{_f(ours['many_small']['median'], 1)} ({big['small_count']} x {big['small_mb']} MB); "
                    f"SDK `stdio_client` {_f(sdk['one_big']['median'], 0)} "
                    f"vs {_f(sdk['many_small']['median'], 0)}"
                ),
                ratio=_f(ours["ratio"], 2),
                target="ratio ≤ 2",
                met=ours["ratio"] <= 2.0,
                value=ours["ratio"],
                threshold=2.0,
            )
        )

    scale = b.get("scale")
    if scale and "error" not in scale:
        lazy, running = scale["lazy"], scale["running"]
        rows.append(
            Row(
                id="scale.start",
                benchmark=f"Scale: `Runtime.start`, {lazy['servers']:,} lazy servers",
                measure="seconds",
                median=_f(lazy["start_s"], 3),
                p95="—",
                reference=f"{_f(lazy['ready_s'], 3)} (until all registered)",
                ratio="—",
                target="≤ 2 s",
                met=lazy["start_s"] <= 2.0 and lazy["ready_s"] <= 2.0,
                value=max(lazy["start_s"], lazy["ready_s"]),
                threshold=2.0,
            )
        )
        rows.append(
            Row(
                id="scale.memory",
                benchmark=f"Scale: resident memory growth, {lazy['servers']:,} lazy servers",
                measure="MiB",
                median=_f(lazy["rss_growth_mib"], 1),
                p95="—",
                reference=f"{_f(lazy['rss_before_mib'], 1)} (before)",
                ratio="—",
                target="≤ 50 MiB",
                met=lazy["rss_growth_mib"] <= 50.0,
                value=lazy["rss_growth_mib"],
                threshold=50.0,
            )
        )
        rows.append(
            Row(
                id="scale.threads",
                benchmark=f"Scale: threads, {lazy['servers']:,} lazy servers / {running['running']} running",
                measure="OS threads",
                median=f"{lazy['threads_after']} / {running['threads_running']}",
                p95="—",
                reference=f"{lazy['threads_before']} (before)",
                ratio="—",
                target="reported",
                met=None,
            )
        )
        rows.append(
            Row(
                id="scale.shutdown",
                benchmark=f"Scale: shut down {running['running']} running servers",
                measure="seconds",
                median=_f(running["shutdown_s"], 3),
                p95="—",
                reference=f"{_f(running['sdk_close_s'], 3)} (SDK, sessions closed concurrently)",
                ratio=_f(running["shutdown_s"] / running["sdk_close_s"], 3)
                if running["sdk_close_s"]
                else "—",
                target="≤ 1 s",
                met=running["shutdown_s"] <= 1.0 and running["children_left"] == 0,
                value=running["shutdown_s"],
                threshold=1.0,
            )
        )
    rows += _startup_rows(b.get("startup"))
    rows += _gateway_rows(b.get("gateway_calls"))
    rows += _load_rows(b.get("gateway_load"))
    rows += _telemetry_rows(b.get("telemetry"))
    return rows


def _sandbox_rows(box: Any) -> list[Row]:
    """A sandboxed server beside the same server unsandboxed (benchmarks/sandbox.py)."""
    if not _usable(box):
        return []
    cold, call = box["cold"], box["per_call"]
    return [
        Row(
            id="sandbox.cold_start",
            benchmark="Sandboxed server (default profile): cold start",
            measure="first call (ms)",
            median=_f(cold["sandboxed"]["median"], 1),
            p95=_f(cold["sandboxed"]["p95"], 1),
            reference=f"{_f(cold['plain']['median'], 1)} (the same server unsandboxed)",
            ratio=f"Δ {box['cold_delta_ms']:+.1f} ms",
            target="reported",
            met=None,
            value=box["cold_delta_ms"],
        ),
        Row(
            id="sandbox.per_call",
            benchmark="Sandboxed server (default profile): per call",
            measure="per call (µs)",
            median=_f(call["sandboxed"]["median"], 0),
            p95=_f(call["sandboxed"]["p95"], 0),
            reference=f"{_f(call['plain']['median'], 0)} (the same server unsandboxed)",
            ratio=_f(box["per_call_ratio"], 3),
            target="ratio ≤ 1.05",
            met=box["per_call_ratio"] <= 1.05,
            value=box["per_call_ratio"],
            threshold=1.05,
        ),
    ]


def _startup_rows(start: Any) -> list[Row]:
    if not _usable(start):
        return []
    imp, listing = start["imports"], start["tools"]
    return [
        Row(
            id="startup.import",
            benchmark='Start-up: `python -c "import actors"`',
            measure="fresh interpreter (ms)",
            median=_f(imp["actors"]["median"], 0),
            p95=_f(imp["actors"]["p95"], 0),
            reference=f"{_f(imp['reference']['median'], 0)} (`import pydantic, jsonschema, pykka`)",
            ratio=f"Δ {imp['delta_ms']:+.0f} ms",
            target="Δ ≤ 80 ms",
            met=imp["delta_ms"] <= imp["target_ms"],
            value=imp["delta_ms"],
            threshold=imp["target_ms"],
        ),
        Row(
            id="startup.tools",
            benchmark="Start-up: `mcp-actors tools`, default config, warm schema cache",
            measure="seconds",
            median=_f(listing["warm"]["median"], 3),
            p95=_f(listing["warm"]["p95"], 3),
            reference=(
                f"{_f(listing['live']['median'], 3)} (`--no-cache`: live); cold {_f(listing['cold_s'], 3)}"
            ),
            ratio=_f(listing["warm"]["median"] / listing["live"]["median"], 3),
            target="< 0.5 s",
            met=listing["warm"]["median"] < listing["target_s"],
            value=listing["warm"]["median"],
            threshold=listing["target_s"],
        ),
    ]


def _gateway_rows(calls: Any) -> list[Row]:
    if not _usable(calls):
        return []
    clients = calls["clients"]
    sdk = clients["sdk"]
    rows = []
    for key, peer, label in (
        ("ours_stdio", "fastmcp_stdio", "stdio"),
        ("ours_http", "fastmcp_http", "Streamable HTTP"),
    ):
        ours, theirs = clients[key], clients[peer]
        if "round_ratio_to_peer" not in ours:
            continue  # a run from before the target was fastmcp's proxy
        ratio = ours["round_ratio_to_peer"]
        floor = clients.get("floor_stdio", {}).get("round_ratio_to_peer") if key == "ours_stdio" else None
        rows.append(
            _at_most(
                f"gateway.{key.split('_')[1]}",
                f"Gateway per call: `mcp-actors serve` ({label}) vs fastmcp's proxy",
                "echo latency (ms)",
                _f(ours["median"], 3),
                _f(ours["p95"], 3),
                f"{_f(theirs['median'], 3)} (fastmcp `create_proxy`, {label}); SDK direct "
                f"{_f(sdk['median'], 3)}" + ("" if floor is None else f"; the floor's ratio {_f(floor, 3)}"),
                ratio,
                calls["target"],
            )
        )
    return rows


def _peer_rows(peers: Any, over: Any) -> list[Row]:
    """Per call against fastmcp's `Client` (issue 40: at most 1.0, median of per-round ratios).

    From the per-call benchmark where it ran fastmcp (every client in one process, 60 alternating
    batches); else from the peers' rounds (a process per client and round, two rounds).
    """
    against = (over or {}).get("vs_fastmcp") if over and "error" not in over else None
    if against:
        ours, theirs = over["call_tool"], over["fastmcp"]
        return [
            _at_most(
                "peers.fastmcp",
                "Per call against the fastest peer: `Runtime.call_tool` vs fastmcp's `Client`",
                "echo latency (ms)",
                _f(ours["median"], 3),
                _f(ours["p95"], 3),
                f"{_f(theirs['median'], 3)} (fastmcp {over.get('fastmcp_version', '?')} `Client`, "
                "same process, alternating batches)",
                against["call_tool"],
                1.0,
            )
        ]
    clients = (peers or {}).get("clients") or {}
    mine_all, theirs_all = clients.get("mcp-actors") or {}, clients.get("fastmcp") or {}
    mine, their = mine_all.get("round_medians_ms"), theirs_all.get("round_medians_ms")
    if not mine or not their:
        return []
    ratio = statistics.median(m / t for m, t in zip(mine, their, strict=False))
    return [
        _at_most(
            "peers.fastmcp",
            "Per call against the fastest peer: `Runtime.call_tool` vs fastmcp's `Client`",
            "echo latency (ms)",
            _f(mine_all["latency_ms"]["median"], 3),
            _f(mine_all["latency_ms"]["p95"], 3),
            f"{_f(theirs_all['latency_ms']['median'], 3)} (fastmcp `Client`, a process of its own)",
            ratio,
            1.0,
        )
    ]


def _load_rows(load: Any) -> list[Row]:
    """The gateway against fastmcp's proxy at the most clients measured."""
    if not _usable(load) or not load.get("levels"):
        return []
    count = max(load["levels"], key=int)
    ours, theirs = load["levels"][count]["ours"], load["levels"][count]["fastmcp"]
    cpu = ours["process_cpu_us_per_call"] / theirs["process_cpu_us_per_call"]
    rate = ours["throughput"] / theirs["throughput"]
    return [
        Row(
            id="gateway_load.cpu",
            benchmark=f"Gateway under {count} HTTP clients: CPU per call vs fastmcp's proxy",
            measure="gateway process CPU (µs/call)",
            median=_f(ours["process_cpu_us_per_call"], 0),
            p95="—",
            reference=f"{_f(theirs['process_cpu_us_per_call'], 0)} (fastmcp `create_proxy`)",
            ratio=_f(cpu, 2),
            target="ratio ≤ 0.6",
            met=cpu <= 0.6,
            value=cpu,
            threshold=0.6,
        ),
        Row(
            id="gateway_load.throughput",
            benchmark=f"Gateway under {count} HTTP clients: throughput vs fastmcp's proxy",
            measure="calls/s",
            median=_f(ours["throughput"], 0),
            p95="—",
            reference=f"{_f(theirs['throughput'], 0)} (fastmcp `create_proxy`)",
            ratio=_f(rate, 2),
            target="ratio ≥ 1.5",
            met=rate >= 1.5,
            value=rate,
            threshold=1.5,
            higher_is_better=True,
        ),
    ]


def _telemetry_rows(tele: Any) -> list[Row]:
    if not _usable(tele):
        return []
    none, sdk = tele["no_provider"], tele["sdk_in_memory"]
    return [
        Row(
            id="telemetry.none",
            benchmark="Telemetry, no provider configured: cost per call",
            measure="% of a call",
            median=_f(none["micro_percent"], 2),
            p95="—",
            reference=(
                f"{_f(none['micro_us'], 1)} µs of a {_f(none['off_ms'], 3)} ms call taken out; "
                f"end to end {none['overhead_percent']:+.1f}% "
                f"(per round {none['round_overhead_percent_median']:+.1f}%)"
            ),
            ratio="—",
            target="< 2%",
            met=none["micro_percent"] < tele["target_percent"],
            value=none["micro_percent"],
            threshold=tele["target_percent"],
        ),
        Row(
            id="telemetry.sdk",
            benchmark="Telemetry, SDK providers + in-memory exporters: cost per call",
            measure="% of a call",
            median=_f(sdk["micro_percent"], 2),
            p95="—",
            reference=(
                f"{_f(sdk['micro_us'], 1)} µs; end to end {sdk['overhead_percent']:+.1f}% "
                f"(per round {sdk['round_overhead_percent_median']:+.1f}%)"
            ),
            ratio="—",
            target="reported",
            met=None,
        ),
    ]


# ---- why a target was missed ----------------------------------------------------------------


def _hops_text(profile: dict[str, Any]) -> str:
    timeline = profile.get("timeline") or {}
    rows = sorted(
        (r for r in timeline.get("rows", []) if r["hop"] != "sdk_end"), key=lambda r: -r["median_us"]
    )[:4]
    if not rows:
        return ""
    parts = ", ".join(f"`{r['hop']}` {r['median_us']:.0f} µs" for r in rows)
    return (
        f"Of a median {timeline['total_median_us']:.0f} µs call through the message API, "
        f"{timeline['outside_sdk_us']:.0f} µs are "
        "spent "
        f"outside the SDK; the largest hops (see the hop table below): {parts}."
    )


def _blocked_text(profile: dict[str, Any]) -> str:
    timeline = profile.get("timeline") or {}
    blocked = timeline.get("blocked_submit_us")
    if blocked is None or math.isnan(blocked) or blocked < 100:
        return ""
    return (
        f" The server actor is also blocked for a median {blocked:.0f} µs per call in "
        "`EventLoop.submit`: its write to the loop's wake-up pipe lets the GIL go, the woken loop "
        "thread takes it, and the actor waits for it back."
    )


def _floors_text(over: dict[str, Any]) -> str:
    floors = over.get("floor_ratio_median")
    if not floors:
        return ""
    return (
        "The SDK's own floors in the same rounds: driven from another thread "
        f"(`run_coroutine_threadsafe`, two crossings) {floors['sdk_from_thread']:.3f} times the SDK alone, "
        "relayed through one more thread (three crossings, the actor hop's shape) "
        f"{floors['sdk_relayed']:.3f}; `rt.call_tool` costs "
        f"{over['call_tool_vs_relayed']:.3f} times the relayed floor. "
    )


def why(row: Row, results: dict[str, Any]) -> str:
    b = results.get("benchmarks", {})
    profile = b.get("profile", {})
    if row.id.startswith("overhead"):
        over = b["overhead"]
        paired = over.get("round_ratio_median", {}).get(row.id.split(".", 1)[1])
        return (
            f"Measured ratio {row.ratio} (median {row.median} ms against {row.reference}; the median of "
            f"per-round ratios is {_f(paired, 3)}). The SDK alone runs the call on the thread that awaits "
            "it; through the runtime a call crosses the caller, the server actor (and, for the message "
            "API, the registry actor first) and the event-loop thread, and each crossing is a thread wake-up "
            "that must also win the GIL. The actor hop is the design: it is what keeps each server's state, "
            "counters and idle clock on one thread. "
            + _floors_text(over)
            + _hops_text(profile)
            + _blocked_text(profile)
        )
    if row.id == "concurrency":
        conc = b["concurrency"]
        return (
            f"Median wall {row.median} s; the SDK alone needs {conc['sdk']['median']:.3f} s for the same "
            f"64 calls (p95 {conc['sdk']['p95']:.3f} s). Above the 0.2 s of sleep, the time goes to the "
            "server process handling 64 requests on its own event loop and to the client side's per-call "
            "CPU (see fan-out)." + _blocked_text(profile)
        )
    if row.id == "isolation":
        iso = b["isolation"]
        return (
            f"B's p50 went from {iso['idle']['median']:.3f} ms to {iso['loaded']['median']:.3f} ms. Both "
            "servers share the one event-loop thread and the GIL: A's completions and refills are "
            f"processed on the same loop as B's calls (the SDK alone shows ratio {iso['sdk_ratio']:.2f} "
            "under the same load)."
        )
    if row.id == "fan_out":
        fan = b["fan_out"]
        cpu = fan.get("cpu_us_per_call", {})
        threads = ", ".join(
            f"{kind} {value:.0f}"
            for kind, value in sorted(fan.get("ours_thread_cpu_us_per_call", {}).items())
            if value >= 1
        )
        return (
            f"{fan['ours']['median']:.0f} calls/s against {fan['sdk']['median']:.0f} for the SDK alone. "
            f"With 64 calls in flight the client process is CPU-bound: it spends {_f(cpu.get('ours'), 0)} µs "
            f"of CPU per call against {_f(cpu.get('sdk'), 0)} µs for the SDK alone (per thread, µs/call: "
            f"{threads}). The loop thread does the same JSON-RPC work as the SDK, but each call also wakes "
            "the registry actor, a server actor and the caller, and every wake-up takes the GIL from the "
            "loop thread, which then waits to get it back after each pipe write to a server."
            + _blocked_text(profile)
        )
    if row.id == "cold_start":
        wrapper = b["cold_start"].get("wrapper") or {}
        cost = wrapper.get("wrapper_cost_ms")
        bare = (wrapper.get("bare_interpreter") or {}).get("median")
        text = (
            f"{row.ratio} (first call {row.median} ms against {row.reference}; cold starts vary by tens "
            "of ms on a shared machine). Beyond the SDK's own spawn and handshake, the runtime starts the "
            "server with a parent-death signal (`setpriv --pdeathsig` and a shell that checks the parent; "
            "where setpriv is missing, the Python wrapper `actors/mcp/pdeathsig.py`, an interpreter start), "
            "lists the tools before the first call (one more round trip) and spawns the server actor."
        )
        launched = wrapper.get("launcher_cost_ms")
        if launched is not None:
            text += f" Measured here: setpriv and the shell add {launched:.1f} ms per spawn"
            if cost is not None:
                text += f"; the Python wrapper would add {cost:.1f} ms"
            text += "."
        elif cost is not None:
            text += (
                f" Measured here: the wrapper adds {cost:.1f} ms per spawn (a bare `python -I -S -c pass` "
                f"takes {_f(bare, 1)} ms)."
            )
        return text
    if row.id == "big_messages":
        big = b["big_messages"]
        return (
            f"Ratio {row.ratio} ({row.median} ms against {row.reference}). The reader is linear (each "
            "chunk searched once, a line joined once); what grows faster than the size is the parse "
            "of one big JSON-RPC line (pydantic, one call) and the allocator: a buffer of a megabyte or "
            "more is fresh memory, paid in page faults, while megabyte messages reuse theirs. Per MB of "
            "single results: ours " + _per_mb(big["ours"]) + "; the SDK's " + _per_mb(big["sdk"]) + "."
        )
    if row.id.startswith("scale"):
        return f"Measured {row.median} {row.measure} against a target of {row.target}."
    if row.id.startswith("gateway_load"):
        return (
            f"Ratio {row.ratio} ({row.median} {row.measure} against {row.reference}). Most of the "
            "gateway's CPU per call is the SDK's Streamable HTTP server (h11, Starlette, the session's "
            "dispatcher) and its stdio client session to the backend; a handshake-era call that only "
            "replies is answered in one JSON body (actors/gateway/first_reply.py), not an SSE stream. "
            'The table under "The gateway under load" gives every level; at or near 100 % generator '
            "CPU the throughput is the load generator's, not the gateway's."
        )
    if row.id.startswith("gateway"):
        return (
            f"Median of per-round ratios {row.ratio} ({row.median} ms against {row.reference}). A call "
            "through the gateway is parsed and answered by the SDK's server on the gateway's loop, "
            "crosses to the server actor and to the runtime's loop (the actor hop, which stays), and its "
            "answer wakes the gateway's loop again; fastmcp's proxy does it all on one loop. The floor "
            "(benchmarks/servers/floor_gateway.py: the SDK's server handing each call straight to the "
            "runtime, no gateway code) measures what that architecture costs; the difference between "
            "the floor and ours is the gateway's own code (gate, audit, names, sessions)."
        )
    if row.id == "peers.fastmcp":
        over = b.get("overhead") or {}
        if "vs_fastmcp" not in over:
            return (
                f"Median of per-round ratios {row.ratio} ({row.median} ms against {row.reference}): each "
                "client runs in a process of its own against the same server script, alternating round by "
                "round. " + _hops_text(profile)
            )
        against = over["vs_fastmcp"]
        return (
            f"Median of per-round ratios {row.ratio} ({row.median} ms against {row.reference}): every "
            "client in one process, each against a server process of its own, in batches of "
            f"{over.get('batch', '?')} calls that "
            "alternate round by round. Against fastmcp's `Client` in the same rounds: the SDK alone "
            f"{against['sdk']:.3f}, the SDK relayed through one thread (the actor hop's three crossings, "
            f"no code of ours) {against['sdk_relayed']:.3f}, the message API {against['message']:.3f}. "
            + _floors_text(over)
            + "The peers table below runs each client in a process of its own (two rounds), where a slow "
            "spell of the machine lands on one client only."
        )
    if row.id == "fan_out.cpu":
        return why(replace(row, id="fan_out"), results)
    if row.id == "startup.import":
        return (
            f"{row.ratio} ({row.median} ms against {row.reference}): `import actors` loads its names on "
            "first use; what it still imports is listed by `python -X importtime -c 'import actors'`."
        )
    if row.id == "startup.tools":
        return (
            f"{row.median} s with a warm cache: the time is the interpreter, pydantic and jsonschema "
            "loading the configuration and cached specs (`python -X importtime -m actors tools`); "
            "no server starts."
        )
    if row.id.startswith("telemetry"):
        return (
            f"{row.median}% of a call ({row.reference}). The micro-benchmark times the telemetry calls "
            "of one call in a tight loop; the end-to-end figure is the difference of interleaved medians "
            "and carries the machine's noise."
        )
    return ""


def _per_mb(side: dict[str, Any]) -> str:
    return ", ".join(f"{mb} MB {ms:.1f} ms/MB" for mb, ms in side.get("ms_per_mb", {}).items())


# ---- the document ---------------------------------------------------------------------------


def _table(rows: list[Row]) -> list[str]:
    lines = [
        "| Benchmark | Measure | Median | p95 | Reference (median) | Ratio to reference | Target | Met? |",
        "|---|---|---:|---:|---|---:|---|:---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.benchmark} | {r.measure} | {r.median} | {r.p95} | {r.reference} | {r.ratio} | "
            f"{r.target} | {r.met_text} |"
        )
    return lines


def _peer_table(peers: dict[str, Any]) -> list[str]:
    lines = [
        "| Client | Versions | Per-call median (ms) | p95 (ms) | Ratio to ours | 64 x 0.2 s wall, median (s) "
        "| p95 (s) | Ratio to ours |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in peers.get("clients", {}).values():
        if "error" in row and "latency_ms" not in row:
            lines.append(f"| {row['label']} | not run: {row['error'][:120]} | | | | | | |")
            continue
        versions = ", ".join(f"{k} {v}" for k, v in sorted(row.get("versions", {}).items()) if k != "anyio")
        lat, wall = row["latency_ms"], row["concurrency_s"]
        lines.append(
            f"| {row['label']} | {versions} | {_f(lat['median'], 3)} | {_f(lat['p95'], 3)} | "
            f"{_f(row['latency_ratio_to_ours'], 2)} | {_f(wall['median'], 3)} | {_f(wall['p95'], 3)} | "
            f"{_f(row['concurrency_ratio_to_ours'], 2)} |"
        )
    return lines


def _profile_section(profile: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    timeline = profile.get("timeline")
    if timeline:
        lines += [
            f'Hop timeline of {timeline["calls"]:,} sequential `rt.call_tool("echo/echo")` calls '
            "(each hop stamped by wrapping the runtime's methods at run time):",
            "",
            "| Hop | What happens | Median (µs) | p95 (µs) |",
            "|---|---|---:|---:|",
        ]
        for r in timeline["rows"]:
            lines.append(f"| {r['hop']} | {r['what']} | {_f(r['median_us'], 1)} | {_f(r['p95_us'], 1)} |")
        lines += [
            "",
            f"Total median {timeline['total_median_us']:.0f} µs, of which the SDK round trip "
            f"{timeline['sdk_median_us']:.0f} µs and the runtime {timeline['outside_sdk_us']:.0f} µs. "
            f"While the call runs, the server actor is blocked in `invoke_future` for a median "
            f"{timeline.get('blocked_submit_us', math.nan):.0f} µs (anyio's `start_task_soon` waits for "
            "the loop).",
            "",
        ]
    turns = profile.get("turns")
    if turns:
        ours, sdk = turns["ours"], turns["sdk"]
        lines += [
            f"The event loop's own work per call, over {turns['calls']:,} sequential calls: "
            f"the runtime's loop goes round {ours['turns_per_call']:.1f} times and runs "
            f"{ours['callbacks_per_call']:.1f} callbacks; `mcp.Client` alone, on its own loop, "
            f"{sdk['turns_per_call']:.1f} and {sdk['callbacks_per_call']:.1f} "
            "(`benchmarks/loop_turns.py`). What the runtime adds is thread crossings, not loop work.",
            "",
        ]
    threads = (profile.get("threads") or {}).get("threads")
    if threads:
        lines += [
            "cProfile of every thread over the same calls (own time per call, waits left out). A system "
            "call that releases the GIL (the loop's `posix.write` to a server's stdin, the server actor's "
            "`socket.send` that wakes the loop) is charged the time it then waits to take the GIL back: "
            "large values there are contention between threads, not work.",
            "",
        ]
        for group, data in threads.items():
            working = [t for t in data["top"] if not is_wait(t["function"])]
            tops = ", ".join(f"`{_label(t['function'])}` {t['tottime_us_per_call']:.1f}" for t in working[:6])
            lines.append(f"- **{group}**: {tops} (µs/call)")
        lines.append("")
    return lines


def _label(function: str) -> str:
    """``path/file.py:12(name)`` -> ``file.py:name``; built-ins keep their own text."""
    where, _, name = function.partition("(")
    name = name.rstrip(")")
    if where.startswith("~"):
        return (
            name.replace("<method ", "").replace("<built-in method ", "").replace(" objects>", "").strip("<>")
        )
    return f"{where.rsplit('/', 1)[-1].rsplit(':', 1)[0]}:{name}"


def write(results: dict[str, Any], doc: Path = DOC, plot: Path = PLOT) -> None:
    rows = target_rows(results)
    plot_ok = write_plot(results, rows, plot)
    meta = results.get("meta", {})
    b = results.get("benchmarks", {})
    out = [
        "# Performance",
        "",
        "Written by `make bench` (`python -m benchmarks`) from "
        "[`benchmarks/results/latest.json`](../benchmarks/results/latest.json); do not edit by hand.",
        "Every ratio compares ours with its reference **in the same run, in the same process, interleaved "
        "round by round**; absolute times depend on the machine and are reported, not asserted.",
        "",
        f"- Run: {meta.get('date', '?')}, commit `{meta.get('commit', '?')}`, {meta.get('total_s', 0):.0f} s"
        f"{' (quick sizes)' if meta.get('quick') else ''}",
        *[
            f"- `{name}` from a later run of its own: {run.get('date', '?')}, "
            f"commit `{run.get('commit', '?')}`, load average at start {run.get('load_start')}"
            for name, run in meta.get("merged", {}).items()
        ],
        f"- Machine: {meta.get('cpus', '?')} CPUs, Python {meta.get('python', '?')}, "
        f"{', '.join(f'{k} {v}' for k, v in meta.get('versions', {}).items())}",
        f"- Load average (1, 5, 15 min) at start {meta.get('load_start')}, at end {meta.get('load_end')}: "
        "the machine is shared, so spread (p95) is wide; medians and same-run ratios are what to read.",
        "- Server: `benchmarks/servers/bench_server.py`, the official SDK's `MCPServer` over stdio with an "
        "`echo` and a `sleep` tool; every client below starts the same script with the same interpreter.",
        "",
        "## Targets",
        "",
        *_table(rows),
        "",
    ]
    if plot_ok:
        out += ["![Benchmark results](generated/performance.png)", ""]
    missed = [r for r in rows if r.met is False]
    out += ["## Targets not met", ""]
    if not missed:
        out += ["None: every target was met in this run.", ""]
    for r in missed:
        out += [f"### {r.benchmark}", "", why(r, results), ""]
    peers = b.get("peers")
    if peers and "error" not in peers:
        out += [
            "## Against peers",
            "",
            "Each client runs `benchmarks/peer_client.py` in a subprocess from its own virtual environment "
            "(`benchmarks/.venvs/`, made by the harness: langchain-mcp-adapters pins an older `mcp`), "
            "against the same server script, alternating round by round. Per-call: sequential `echo` "
            "calls; 64 x 0.2 s: `asyncio.gather` of 64 `sleep` calls. Ours is `Runtime.call_tool` for "
            "latency and the message API awaited with `asyncio.wrap_future` for concurrency. "
            "Ratio > 1 means slower than ours.",
            "",
            *_peer_table(peers),
            "",
        ]
        ours = peers.get("clients", {}).get("mcp-actors", {})
        if "latency_async_ms" in ours:
            out += [
                f"Ours from an asyncio host (message API + `asyncio.wrap_future`): per-call median "
                f"{ours['latency_async_ms']['median']:.3f} ms.",
                "",
            ]
    load = b.get("gateway_load")
    if _usable(load):
        versions = load.get("versions", {})
        out += [
            "## The gateway under load",
            "",
            "`benchmarks/gateway_load.py`: the SDK's server over Streamable HTTP direct, `mcp-actors serve "
            "--http` and fastmcp's `create_proxy` over HTTP (both in front of the same server over stdio), "
            f"each with 1, 8 and 32 concurrent sessions of the SDK's `mcp.Client` in one process, every "
            f"session calling `echo` back to back for {load['seconds_per_level']:g} s (fastmcp "
            f"{versions.get('fastmcp', '?')}, mcp {versions.get('mcp', '?')}). Target CPU: the gateway "
            "process alone; tree CPU: with its backend. RSS per session: the growth of the whole process "
            "tree's resident memory while the sessions are open, over their number. Generator CPU: the "
            "load generator's share of one core (near 100 %, the throughput is the generator's).",
            "",
            *gateway_load.table(load),
            "",
        ]
    frameworks = b.get("agents")
    if frameworks and "error" not in frameworks:
        out += [
            "## In the agent frameworks",
            "",
            "`benchmarks/agent_frameworks.py`: for each framework, the same scripted agent (its own test "
            f"model, no network) with the framework's own MCP client and with ours (`actors.agents`), "
            f"{frameworks.get('servers')} servers configured, {frameworks.get('used')} used, "
            f"{frameworks.get('turns')} tool-calling turns; medians of {frameworks.get('rounds')} runs, "
            "each a process of its own. First tool list: from the start of the run to the model's first "
            "turn; per turn: one tool call through the framework, model turn to model turn; processes "
            "and memory: the run's process and all its descendants, before the clients close. Ours with "
            "a warm schema cache (a host's first run ever starts every server once to fill it). "
            "LangChain's own client (langchain-mcp-adapters) opens a new session, a new server "
            "process, for every call: none is left to count at the end.",
            "",
            *agent_frameworks.table(frameworks),
            "",
        ]
    out += ["## Details", ""]
    out += _details(b)
    profile = b.get("profile")
    if profile and "error" not in profile:
        out += ["## Where the time of one `rt.call_tool` goes", ""]
        out += _profile_section(profile)
        out += [
            "The full per-thread cProfile listing is in `benchmarks/results/profile.txt`.",
            "",
        ]
    out += [
        "## Running it",
        "",
        "- `make bench` installs `.[test,bench]` and runs `python -m benchmarks` (under 10 minutes on 2 "
        "cores; "
        "the peers' environments are made on the first run).",
        "- `python -m benchmarks --quick` runs every benchmark at small sizes; `--only overhead,profile` "
        "or `--skip peers` pick benchmarks; `python -m benchmarks.report` rewrites this page from the JSON.",
        "- `python -m benchmarks.profiling` prints the hop timeline and the per-thread profile.",
        "- One part on its own, into the saved run: `python -m benchmarks --only startup --merge` (likewise "
        "`gateway_calls`, `gateway_load`, `telemetry`); each also runs alone and prints its JSON: "
        "`python -m benchmarks.startup`, `python -m benchmarks.gateway_calls`, "
        "`python -m benchmarks.gateway_load`, "
        "`python -m benchmarks.telemetry_overhead`.",
        "- The same suite as ASV benchmark classes: `benchmarks/asv_bench.py`, with "
        "`benchmarks/asv.conf.json` (`asv run --config benchmarks/asv.conf.json`).",
        "",
    ]
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(out))


def _details(b: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, data in b.items():
        if isinstance(data, dict) and "error" in data:
            lines += [f"- **{name}** failed: `{data['error'][:300]}`"]
    over = b.get("overhead")
    if over and "error" not in over:
        lines += [
            f"- **Per-call overhead** ({over['sdk']['n']} calls per client, interleaved in batches): "
            f"SDK alone {over['sdk']['median']:.3f} ms; the SDK driven from another thread "
            f"(`run_coroutine_threadsafe`) {over['sdk_from_thread']['median']:.3f} ms "
            f"(ratio {over['sdk_from_thread']['ratio']:.3f}); "
            + (
                f"relayed through one more thread {over['sdk_relayed']['median']:.3f} ms; "
                if "sdk_relayed" in over
                else ""
            )
            + (f"fastmcp's `Client` {over['fastmcp']['median']:.3f} ms; " if "fastmcp" in over else "")
            + "`rt.call_tool` "
            f"{over['call_tool']['median']:.3f} ms; "
            f"message API {over['message']['median']:.3f} ms. Median of per-round ratios: "
            + ", ".join(f"{k} {v:.3f}" for k, v in over["round_ratio_median"].items())
            + "."
        ]
    conc = b.get("concurrency")
    if conc and "error" not in conc:
        lines += [
            f"- **Concurrency**: message API {conc['message']['median']:.3f} s, `rt.call_tool` from 64 "
            "threads "
            f"{conc['call_tool_threads']['median']:.3f} s, SDK alone {conc['sdk']['median']:.3f} s "
            f"(medians of {conc['message']['n']} runs)."
            + (
                f" From an asyncio host (gathered on the SDK reference's own loop thread): "
                f"{conc['asyncio_host']['median']:.3f} s."
                if "asyncio_host" in conc
                else ""
            )
        ]
    iso = b.get("isolation")
    if iso and "error" not in iso:
        lines += [
            f"- **Isolation**: B idle p50 {iso['idle']['median']:.3f} ms (p95 {iso['idle']['p95']:.3f}), "
            f"loaded p50 {iso['loaded']['median']:.3f} ms (p95 {iso['loaded']['p95']:.3f}); the SDK alone "
            "under "
            f"the same load: {iso['sdk_idle']['median']:.3f} → {iso['sdk_loaded']['median']:.3f} ms "
            f"(ratio {iso['sdk_ratio']:.2f}). Load calls that failed: {iso['load_failures']}."
        ]
    fan = b.get("fan_out")
    if fan and "error" not in fan:
        lines += [
            f"- **Fan-out**: ours {', '.join(f'{x:.0f}' for x in fan['ours']['samples_per_s'])} calls/s, SDK "
            f"{', '.join(f'{x:.0f}' for x in fan['sdk']['samples_per_s'])} calls/s (each run after a "
            "warm-up run)."
        ]
        if "cpu_us_per_call" in fan:
            threads = ", ".join(
                f"{kind} {value:.0f}"
                for kind, value in sorted(fan["ours_thread_cpu_us_per_call"].items())
                if value >= 1
            )
            lines[-1] += (
                f" Client-process CPU per call: ours {fan['cpu_us_per_call']['ours']:.0f} µs "
                f"({threads}), SDK alone {fan['cpu_us_per_call']['sdk']:.0f} µs."
            )
    cold = b.get("cold_start")
    if cold and "error" not in cold:
        lines += [
            f"- **Cold start** ({cold['ours']['n']} each, alternating; the protocol-era memo cleared "
            "before each "
            f"of ours): ours {cold['ours']['median']:.1f} ms, SDK {cold['sdk']['median']:.1f} ms; median of "
            f"paired differences {cold['paired_delta_ms']['median']:+.1f} ms."
        ]
        wrapper = cold.get("wrapper") or {}
        if "wrapper_cost_ms" in wrapper:
            lines[-1] += (
                f" Spawn costs ({wrapper['exec_true']['n']} each): `/bin/true` "
                f"{wrapper['exec_true']['median']:.1f} ms, `python -I -S -c pass` "
                f"{wrapper['bare_interpreter']['median']:.1f} ms, the `pdeathsig` wrapper exec'ing "
                f"`/bin/true` {wrapper['wrapper_exec_true']['median']:.1f} ms"
                + (
                    f", setpriv and the shell exec'ing it {wrapper['launcher_exec_true']['median']:.1f} ms."
                    if "launcher_exec_true" in wrapper
                    else "."
                )
            )
    big = b.get("big_messages")
    if big and "error" not in big:
        ours, sdk = big["ours"], big["sdk"]
        lines += [
            f"- **Big messages** ({ours['one_big']['n']} rounds, ours and the SDK interleaved; a "
            "hand-written server answers at once, so the client's reading and parsing is what is "
            f"timed): one {big['big_mb']} MB result {ours['one_big']['median']:.1f} ms, "
            f"{big['small_count']} x {big['small_mb']} MB {ours['many_small']['median']:.1f} ms "
            f"(ratio {ours['ratio']:.2f}); the SDK's `stdio_client` {sdk['one_big']['median']:.0f} ms "
            f"and {sdk['many_small']['median']:.0f} ms (ratio {sdk['ratio']:.2f}). Per MB of single "
            f"results: ours {_per_mb(ours)}; the SDK {_per_mb(sdk)}."
        ]
    scale = b.get("scale")
    if scale and "error" not in scale:
        lazy, running = scale["lazy"], scale["running"]
        lines += [
            f"- **Scale** (own process): `Runtime.start` {lazy['start_s'] * 1000:.1f} ms, all registered "
            "after "
            f"{lazy['ready_s'] * 1000:.1f} ms (`load_config` alone {lazy['load_config_s'] * 1000:.1f} ms); "
            f"`status()` of {lazy['servers']:,} servers {lazy['status_s'] * 1000:.1f} ms; RSS "
            f"{lazy['rss_before_mib']:.1f} → {lazy['rss_after_mib']:.1f} MiB; threads "
            f"{lazy['threads_before']} → "
            f"{lazy['threads_after']} (server actors are spawned on first use). With {running['running']} "
            "servers "
            f"running: {running['threads_running']} threads (a server actor each, plus one thread per "
            f"child process that waits for its exit); shutdown {running['shutdown_s']:.3f} "
            "s, "
            f"children left: {running['children_left']}; the SDK closing as many sessions at once: "
            f"{running['sdk_close_s']:.3f} s."
        ]
    lines += _new_details(b)
    lines.append("")
    return lines


def _new_details(b: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    start = b.get("startup")
    if _usable(start):
        imp, listing = start["imports"], start["tools"]
        lines += [
            f"- **Start-up** (fresh interpreters, {imp['actors']['n']} rounds interleaved, medians): "
            f"`python -c pass` {imp['python']['median']:.0f} ms; `import pydantic, jsonschema, pykka` "
            f"{imp['reference']['median']:.0f} ms; `import actors` {imp['actors']['median']:.0f} ms "
            f"(Δ {imp['delta_ms']:+.0f} ms, paired {imp['paired_delta_ms']:+.0f} ms); "
            f"`from actors import Runtime, CallTool, load_config` {imp['runtime_names']['median']:.0f} ms "
            f"(Δ {imp['runtime_delta_ms']:+.0f} ms: the actors, the event loop and OpenTelemetry; the SDK "
            "loads in `Runtime.start`). `mcp-actors tools` on the default config in an empty folder: cold "
            f"{listing['cold_s']:.3f} s (the demo server starts to be listed), warm "
            f"{listing['warm']['median']:.3f} s (p95 {listing['warm']['p95']:.3f}, no server starts), "
            f"`--no-cache` {listing['live']['median']:.3f} s."
        ]
    calls = b.get("gateway_calls")
    if _usable(calls):
        parts = ", ".join(
            f"{row['label']} {row['median']:.3f} ms (ratio {row['ratio']:.2f}, per round "
            f"{row['round_ratio_median']:.2f})"
            for row in calls["clients"].values()
        )
        version = (calls.get("versions") or {}).get("fastmcp", "?")
        lines += [
            f"- **Gateway per call** ({calls['rounds']} rounds of {calls['calls_per_round']} sequential "
            f"`echo` calls per client, interleaved, every client the SDK's `mcp.Client` in one process; "
            f"fastmcp {version}): {parts}."
        ]
    tele = b.get("telemetry")
    if _usable(tele):
        none, sdk = tele["no_provider"], tele["sdk_in_memory"]
        lines += [
            f"- **Telemetry** (`rt.call_tool`, {none['calls_each']} calls per mode, interleaved with the "
            "runtime's telemetry functions taken out in the same process): no provider "
            f"{none['shipped_ms']:.3f} ms vs {none['off_ms']:.3f} ms ({none['overhead_percent']:+.2f}%, "
            f"median per round {none['round_overhead_percent_median']:+.2f}%); the telemetry work of one "
            f"call alone {none['micro_us']:.2f} µs ({none['micro_percent']:.2f}% of a call). With the SDK's "
            f"providers and in-memory exporters: {sdk['sdk_ms']:.3f} ms vs {sdk['off_ms']:.3f} ms "
            f"({sdk['overhead_percent']:+.2f}%), {sdk['micro_us']:.1f} µs alone, "
            f"{sdk['spans_recorded']} spans recorded."
        ]
    return lines


# ---- the plot -------------------------------------------------------------------------------


def write_plot(results: dict[str, Any], rows: list[Row], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    b = results.get("benchmarks", {})
    fig, axes = plt.subplots(2, 3, figsize=(17, 9.5))
    fig.suptitle("mcp-actors benchmarks (one run, one machine; ratios against references in the same run)")
    _plot_latency(axes[0][0], b.get("overhead"))
    _plot_targets(axes[0][1], rows)
    _plot_hops(axes[0][2], (b.get("profile") or {}).get("timeline"))
    clients = (b.get("peers") or {}).get("clients", {})
    _plot_peers(
        axes[1][0], clients, "latency_ms", "per-call median, ms (log; bars: p95)", "Against peers: per-call"
    )
    _plot_peers(
        axes[1][1], clients, "concurrency_s", "wall, s (log; bars: p95)", "Against peers: 64 x 0.2 s calls"
    )
    _plot_throughput(axes[1][2], b.get("fan_out"), b.get("concurrency"))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _usable(data: Any) -> bool:
    return isinstance(data, dict) and "error" not in data


def _plot_latency(ax: Any, over: Any) -> None:
    if not _usable(over):
        ax.set_axis_off()
        return
    keys = [
        ("sdk", "mcp.Client\nalone"),
        ("sdk_from_thread", "SDK from\na thread"),
        ("call_tool", "rt.call_tool"),
        ("message", "message\nAPI"),
    ]
    ax.boxplot([over[k]["samples_ms"] for k, _ in keys], showfliers=False)
    ax.set_xticks(range(1, len(keys) + 1), [label for _, label in keys])
    ax.set_ylabel("ms per echo call")
    ax.set_title("Per-call latency, same process (whiskers: 1.5 IQR)")
    ax.grid(axis="y", alpha=0.3)


def _plot_targets(ax: Any, rows: list[Row]) -> None:
    scored = [r for r in rows if r.value is not None and r.threshold]
    if not scored:
        ax.set_axis_off()
        return
    values = []
    for r in scored:
        assert r.value is not None and r.threshold is not None
        if r.id in ("cold_start", "startup.import"):
            values.append(max(r.value, 0.0) / r.threshold)  # a negative Δ shows as 0
        elif r.higher_is_better:
            values.append(r.threshold / r.value if r.value else math.inf)
        else:
            values.append(r.value / r.threshold)
    y = list(range(len(scored)))
    ax.barh(y, values, color=["tab:green" if r.met else "tab:red" for r in scored])
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(y, [r.id for r in scored])
    ax.invert_yaxis()
    ax.set_xlabel("measured / target (≤ 1 meets it; fan-out: target / measured)")
    ax.set_title("Targets")
    ax.grid(axis="x", alpha=0.3)


def _plot_hops(ax: Any, timeline: Any) -> None:
    if not timeline:
        ax.set_axis_off()
        return
    hops = [r for r in timeline["rows"] if r["hop"] != "sdk_end"]
    y = list(range(len(hops)))
    ax.barh(y, [r["median_us"] for r in hops], color="tab:purple")
    ax.set_yticks(y, [r["hop"] for r in hops])
    ax.invert_yaxis()
    ax.set_xlabel("median µs per call")
    ax.set_title(
        f"One rt.call_tool outside the SDK: {timeline['outside_sdk_us']:.0f} µs "
        f"(SDK round trip {timeline['sdk_median_us']:.0f} µs)",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)


def _plot_peers(ax: Any, clients: dict[str, Any], key: str, ylabel: str, title: str) -> None:
    shown = [(mode, row[key]) for mode, row in clients.items() if key in row and row[key].get("n")]
    if not shown:
        ax.set_axis_off()
        return
    x = list(range(len(shown)))
    medians = [s["median"] for _, s in shown]
    errors = [max(s["p95"] - s["median"], 0.0) for _, s in shown]
    colors = ["tab:blue" if mode == "mcp-actors" else "tab:gray" for mode, _ in shown]
    ax.bar(x, medians, yerr=[[0.0] * len(errors), errors], color=colors, capsize=3)
    ax.set_yscale("log")
    ax.set_xticks(x, [mode.replace("-", "-\n", 1) for mode, _ in shown], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    for i, value in enumerate(medians):
        ax.annotate(f"{value:.3g}", (i, value), ha="center", va="bottom", fontsize=8)


def _plot_throughput(ax: Any, fan: Any, conc: Any) -> None:
    labels, values, colors = [], [], []
    if _usable(fan):
        labels += ["fan-out\nours", "fan-out\nSDK alone"]
        values += [fan["ours"]["median"], fan["sdk"]["median"]]
        colors += ["tab:blue", "tab:gray"]
    if not labels:
        ax.set_axis_off()
        return
    ax.bar(labels, values, color=colors)
    ax.set_ylabel("echo calls/s (median)")
    title = "Fan-out throughput"
    if _usable(fan):
        title += f": {fan['servers']} servers, {fan['inflight']} in flight"
    if _usable(conc):
        title += (
            f"\n64 x 0.2 s on one server: ours {conc['message']['median']:.3f} s, "
            f"SDK {conc['sdk']['median']:.3f} s"
        )
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS_DIR / "latest.json"
    write(json.loads(source.read_text()))
    print(f"wrote {DOC.relative_to(ROOT)} and {PLOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
