"""What a server's sandbox costs: its cold start and its per-call time beside the same server
unsandboxed, interleaved in one runtime so that a slow moment hits both alike.

The sandbox sits on the start path only (bubblewrap, the cgroup, the folders); the calls go over
the same pipes, so the per-call ratio should be 1 within noise. Needs bubblewrap.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from actors import Runtime, load_config
from actors.mcp.sdk_transport import SDKTransport
from benchmarks.common import ms, server_entry, summary

ECHO_ARGS = {"text": "hello, benchmark"}


def _call(rt: Runtime, name: str) -> float:
    start = time.perf_counter()
    result = rt.call_tool(name, ECHO_ARGS, timeout=60)
    elapsed = time.perf_counter() - start
    if not result.success:
        raise RuntimeError(f"{name}: {result.text}")
    return elapsed


def sandbox_overhead(cold_reps: int = 9, calls: int = 300, rounds: int = 5) -> dict[str, Any]:
    """Cold start and per call, plain and sandboxed (the default profile)."""
    cold: dict[str, list[float]] = {"plain": [], "sandboxed": []}
    per_call: dict[str, list[float]] = {"plain": [], "sandboxed": []}
    with tempfile.TemporaryDirectory(prefix="mcpa-bench-state-") as state:
        before = os.environ.get("MCP_ACTORS_STATE_DIR")
        os.environ["MCP_ACTORS_STATE_DIR"] = state
        try:
            config = load_config(
                {
                    "mcpServers": {
                        "plain": server_entry(idleTimeout=0),
                        "sandboxed": server_entry(idleTimeout=0, sandbox=True),
                    },
                    "builtin": {"enabled": False},
                }
            )
            with Runtime.start(config) as rt:
                for name in ("plain", "sandboxed"):  # imports and the bwrap probe: not counted
                    _call(rt, f"{name}/echo")
                    rt.stop_server(name)
                for rep in range(cold_reps):
                    order = ("plain", "sandboxed") if rep % 2 else ("sandboxed", "plain")
                    for name in order:
                        SDKTransport.default_protocol_memo.clear()
                        cold[name].append(_call(rt, f"{name}/echo"))
                        rt.stop_server(name)
                for name in ("plain", "sandboxed"):
                    _call(rt, f"{name}/echo")
                for round_ in range(rounds):
                    order = ("plain", "sandboxed") if round_ % 2 else ("sandboxed", "plain")
                    for name in order:
                        for _ in range(calls // rounds):
                            per_call[name].append(_call(rt, f"{name}/echo"))
        finally:
            if before is None:
                os.environ.pop("MCP_ACTORS_STATE_DIR", None)
            else:
                os.environ["MCP_ACTORS_STATE_DIR"] = before
    out: dict[str, Any] = {
        "cold": {name: {"samples_ms": ms(v), **summary(ms(v))} for name, v in cold.items()},
        "per_call": {name: summary([s * 1e6 for s in v]) for name, v in per_call.items()},
    }
    out["cold_delta_ms"] = out["cold"]["sandboxed"]["median"] - out["cold"]["plain"]["median"]
    out["per_call_ratio"] = out["per_call"]["sandboxed"]["median"] / out["per_call"]["plain"]["median"]
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(sandbox_overhead(), indent=1))
