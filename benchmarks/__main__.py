"""``python -m benchmarks``: run every benchmark, save the JSON, write docs/performance.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from benchmarks import (
    agent_frameworks,
    big_messages,
    gateway_calls,
    gateway_load,
    loop_turns,
    peers,
    per_call,
    profiling,
    report,
    sandbox,
    startup,
    suite,
    telemetry_overhead,
)
from benchmarks.common import RESULTS_DIR, ROOT, load_average

ORDER = [
    "overhead",
    "concurrency",
    "isolation",
    "fan_out",
    "cold_start",
    "sandbox",
    "big_messages",
    "scale",
    "peers",
    "profile",
    "startup",
    "gateway_calls",
    "gateway_load",
    "telemetry",
    "agents",
]


def _log(message: str) -> None:
    print(message, flush=True)


def _versions() -> dict[str, str]:
    out = {}
    for name in ("mcp", "pykka", "anyio", "pydantic"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    return out


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "actors"],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "?"
    return done.stdout.strip() + ("+local changes in actors/" if dirty.stdout.strip() else "")


def _scale(sizes: suite.Sizes) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale_probe", str(sizes.scale_servers), str(sizes.scale_running)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"scale probe exit {done.returncode}: {done.stderr[-1000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _profile(sizes: suite.Sizes) -> dict[str, Any]:
    timeline = profiling.hop_timeline(sizes.profile_calls)
    threads = profiling.thread_profiles(sizes.profile_calls)
    (RESULTS_DIR / "profile.txt").write_text(threads.pop("text"))
    turns = loop_turns.measure(sizes.profile_calls)
    return {"timeline": timeline, "threads": threads, "turns": turns}


def _merged(path: str, new: dict[str, Any]) -> dict[str, Any]:
    """The saved run with ``new``'s benchmarks in it, each noted as from a later run of its own."""
    with open(path) as saved:
        results: dict[str, Any] = json.load(saved)
    merged = results.setdefault("meta", {}).setdefault("merged", {})
    for name, data in new["benchmarks"].items():
        results.setdefault("benchmarks", {})[name] = data
        merged[name] = {key: new["meta"].get(key) for key in ("date", "commit", "load_start", "quick")}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not for the report)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(ORDER)}")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    parser.add_argument("--no-report", action="store_true", help="save the JSON only")
    parser.add_argument("--out", default=str(RESULTS_DIR / "latest.json"), help="where to save the JSON")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="put these results into the saved JSON (--out), keeping the other benchmarks' results",
    )
    options = parser.parse_args(argv)
    sizes = suite.QUICK if options.quick else suite.FULL
    wanted = [n for n in ORDER if not options.only or n in options.only.split(",")]
    wanted = [n for n in wanted if n not in options.skip.split(",")]

    runners: dict[str, Callable[[suite.Sizes], dict[str, Any]]] = {
        "overhead": per_call.per_call_overhead,
        "concurrency": suite.concurrency,
        "isolation": suite.isolation,
        "fan_out": suite.fan_out,
        "cold_start": suite.cold_start,
        "sandbox": lambda s: (
            sandbox.sandbox_overhead(cold_reps=2, calls=50, rounds=2)
            if s is suite.QUICK
            else sandbox.sandbox_overhead()
        ),
        "big_messages": big_messages.big_messages,
        "scale": _scale,
        "peers": lambda s: peers.run_peers(
            calls=s.peer_calls,
            reps=s.peer_reps,
            rounds=s.peer_rounds,
            fresh_calls=s.peer_fresh_calls,
            log=_log,
        ),
        "profile": _profile,
        "startup": lambda s: startup.startup(rounds=4 if s is suite.QUICK else 15),
        "gateway_calls": lambda s: (
            gateway_calls.gateway_calls(calls=30, rounds=2, warmup=5)
            if s is suite.QUICK
            else gateway_calls.gateway_calls()
        ),
        "gateway_load": lambda s: (
            gateway_load.gateway_load(levels=(1, 8), seconds=1.0)
            if s is suite.QUICK
            else gateway_load.gateway_load()
        ),
        "agents": lambda s: agent_frameworks.agent_frameworks(
            turns=8 if s is suite.QUICK else 40, rounds=1 if s is suite.QUICK else 3, log=_log
        ),
        "telemetry": lambda s: (
            telemetry_overhead.telemetry_overhead(calls=50, rounds=2, sdk_rounds=2)
            if s is suite.QUICK
            else telemetry_overhead.telemetry_overhead()
        ),
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": _commit(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "versions": _versions(),
            "load_start": load_average(),
            "quick": options.quick,
            "sizes": vars(sizes) if hasattr(sizes, "__dict__") else {},
        },
        "benchmarks": {},
    }
    for name in wanted:
        _log(f"[{time.perf_counter() - started:6.1f}s] {name} ...")
        begin = time.perf_counter()
        try:
            results["benchmarks"][name] = runners[name](sizes)
        except Exception as exc:
            traceback.print_exc()
            results["benchmarks"][name] = {"error": f"{type(exc).__name__}: {exc}"}
        results["benchmarks"].setdefault(name, {})["seconds"] = time.perf_counter() - begin
        _log(f"[{time.perf_counter() - started:6.1f}s] {name} done in {time.perf_counter() - begin:.1f}s")
    results["meta"]["load_end"] = load_average()
    results["meta"]["total_s"] = time.perf_counter() - started
    if options.merge and os.path.exists(options.out):
        results = _merged(options.out, results)
    with open(options.out, "w") as out:
        json.dump(results, out, indent=1)
    _log(f"saved {os.path.relpath(options.out, ROOT)}")
    if not options.no_report:
        report.write(results)
        _log(f"wrote {report.DOC.relative_to(ROOT)} and {report.PLOT.relative_to(ROOT)}")
        for row in report.target_rows(results):
            _log(f"  {row.met_text:>6}  {row.benchmark}: {row.median} ({row.ratio}; target {row.target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
