"""Start-up: what ``import actors`` adds to its dependencies, and ``mcp-actors tools`` on the
default configuration with a warm schema cache.

``python -m benchmarks.startup [--rounds N]`` prints one JSON object. Each measure is the wall
time of a fresh interpreter (``python -c ...``, this venv), the variants interleaved round by
round: ``pass``; ``import pydantic, jsonschema, pykka`` (the reference); ``import actors`` (the
target: at most 80 ms more than the reference); ``from actors import Runtime, CallTool,
load_config`` (for information: what a host that runs servers imports before starting them).
Then ``mcp-actors tools`` in an empty folder (the built-in default: the demo server and the
built-in tools) on its own schema cache: once cold (the demo server starts to be listed), then
N times warm (target: under 0.5 s), and ``--no-cache`` (live) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, load_average, summary

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
IMPORT_TARGET_MS = 80.0
TOOLS_TARGET_S = 0.5

IMPORTS = {
    "python": "pass",
    "reference": "import pydantic, jsonschema, pykka",
    "actors": "import actors",
    "runtime_names": "from actors import Runtime, CallTool, load_config",
}


def _timed(argv: list[str], cwd: Path | str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def imports(rounds: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    samples: dict[str, list[float]] = {key: [] for key in IMPORTS}
    for code in IMPORTS.values():  # compile the bytecode caches before timing
        _timed([sys.executable, "-c", code], ROOT, env)
    keys = list(IMPORTS)
    for r in range(rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            samples[key].append(_timed([sys.executable, "-c", IMPORTS[key]], ROOT, env) * 1000)
    out: dict[str, Any] = {key: summary(values) for key, values in samples.items()}
    paired = [a - b for a, b in zip(samples["actors"], samples["reference"], strict=True)]
    runtime_paired = [a - b for a, b in zip(samples["runtime_names"], samples["reference"], strict=True)]
    out["delta_ms"] = statistics.median(samples["actors"]) - statistics.median(samples["reference"])
    out["paired_delta_ms"] = statistics.median(paired)
    out["runtime_delta_ms"] = statistics.median(runtime_paired)
    out["target_ms"] = IMPORT_TARGET_MS
    return out


def tools(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="startup-tools-") as folder:
        env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
        env["MCP_ACTORS_CACHE_DIR"] = str(Path(folder) / "cache")
        work = Path(folder) / "work"
        work.mkdir()
        command = [str(MCP_ACTORS), "tools"]
        cold = _timed(command, work, env)
        warm = [_timed(command, work, env) for _ in range(rounds)]
        live = [_timed([*command, "--no-cache"], work, env) for _ in range(max(rounds // 4, 1))]
    return {
        "cold_s": cold,
        "warm": summary(warm),
        "live": summary(live),
        "target_s": TOOLS_TARGET_S,
    }


def startup(rounds: int = 15) -> dict[str, Any]:
    """Both measures; the JSON the report reads."""
    return {"imports": imports(rounds), "tools": tools(rounds), "load_average": load_average()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    result = startup(args.rounds)
    print(json.dumps(result))
    imp, listing = result["imports"], result["tools"]
    print(
        f"import actors {imp['actors']['median']:.0f} ms, reference {imp['reference']['median']:.0f} ms: "
        f"+{imp['delta_ms']:.0f} ms (paired {imp['paired_delta_ms']:+.0f} ms; Runtime names "
        f"{imp['runtime_delta_ms']:+.0f} ms); mcp-actors tools warm {listing['warm']['median']:.3f} s, "
        f"cold {listing['cold_s']:.3f} s, --no-cache {listing['live']['median']:.3f} s"
    )


if __name__ == "__main__":
    main()
