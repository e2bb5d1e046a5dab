"""The agent frameworks, each with its own MCP client and with ours, side by side.

For every framework, `benchmarks/agent_probe.py` runs the same scripted agent twice over: with
the framework's own MCP client (as its docs configure it) and with mcp-actors through
`actors.agents`. Ten benchmark servers are configured; the agent uses two. Each probe is a
process of its own, so its processes and memory are its alone; rounds alternate the clients.

Ours runs with a schema cache warmed once beforehand (the cache is what lets a runtime list a
server without starting it; a host's first run ever starts every server once to fill it).
LangChain's own client (langchain-mcp-adapters) pins an older ``mcp``: it runs from its own
virtual environment under ``benchmarks/.venvs/``, as the peers benchmark does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, ROOT
from benchmarks.peers import Peer, ensure_venv

PROBE = BENCH_DIR / "agent_probe.py"
FRAMEWORKS = ("langchain", "pydantic-ai", "openai-agents", "anthropic")
LANGCHAIN_OWN = Peer("langchain-agents", ("langchain-mcp-adapters", "langchain>=1.5", "langgraph>=1.2"))


def _probe(
    python: Path | str, framework: str, client: str, *, turns: int, cache: str, timeout: float
) -> dict[str, Any]:
    argv = [
        str(python),
        str(PROBE),
        framework,
        client,
        "--servers",
        "10",
        "--used",
        "2",
        "--turns",
        str(turns),
    ]
    if client == "ours":
        argv += ["--cache", cache]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["AGENT_BENCH_SERVER_PYTHON"] = sys.executable
    try:
        done = subprocess.run(
            argv, check=False, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT)
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr[-800:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def agent_frameworks(*, turns: int = 40, rounds: int = 3, log: Any = print) -> dict[str, Any]:
    """Per framework and client: medians over ``rounds`` runs of time to the first tool list,
    per-turn time, processes and resident memory (MiB) at the end of the run."""
    out: dict[str, Any] = {"turns": turns, "rounds": rounds, "servers": 10, "used": 2, "frameworks": {}}
    with tempfile.TemporaryDirectory(prefix="agent-bench-cache-") as cache:
        langchain_python, why = ensure_venv(LANGCHAIN_OWN, log)
        for framework in FRAMEWORKS:
            pythons: dict[str, Path | str | None] = {
                "own": langchain_python if framework == "langchain" else sys.executable,
                "ours": sys.executable,
            }
            # Fills the schema cache: every server starts once, lists, and is stopped.
            warm = _probe(sys.executable, framework, "ours", turns=0, cache=cache, timeout=300)
            runs: dict[str, list[dict[str, Any]]] = {"own": [], "ours": []}
            errors: dict[str, str] = {}
            if "error" in warm:
                errors["ours"] = f"warming the cache: {warm['error']}"
            for _ in range(rounds):
                for client in ("own", "ours"):
                    python = pythons[client]
                    if python is None:
                        errors[client] = why or "no interpreter"
                        continue
                    if client in errors:
                        continue
                    result = _probe(python, framework, client, turns=turns, cache=cache, timeout=600)
                    if "error" in result:
                        errors[client] = result["error"]
                    else:
                        runs[client].append(result)
            out["frameworks"][framework] = {
                client: _medians(runs[client]) if runs[client] else {"error": errors.get(client, "no run")}
                for client in ("own", "ours")
            }
            log(f"  {framework}: {json.dumps(out['frameworks'][framework])}")
    return out


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "first_list_s": statistics.median(r["first_list_s"] for r in runs),
        "turn_ms": statistics.median(r["turn_ms"]["median"] for r in runs),
        "processes": statistics.median(r["processes"] for r in runs),
        "rss_mib": statistics.median(r["rss_mib"] for r in runs),
        "tools_offered": runs[0]["tools_offered"],
        "versions": runs[0]["versions"],
    }


def table(results: dict[str, Any]) -> list[str]:
    """The Markdown table of ``agent_frameworks``' results."""
    lines = [
        "| framework | client | first tool list (s) | per turn (ms) | processes | memory (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for framework, clients in results.get("frameworks", {}).items():
        for client, row in clients.items():
            label = "mcp-actors" if client == "ours" else "its own MCP client"
            if "error" in row:
                lines.append(f"| {framework} | {label} | error: {row['error'][:80]} | | | |")
                continue
            lines.append(
                f"| {framework} | {label} | {row['first_list_s']:.2f} | {row['turn_ms']:.1f} "
                f"| {row['processes']:.0f} | {row['rss_mib']:.0f} |"
            )
    return lines


if __name__ == "__main__":
    print("\n".join(table(agent_frameworks(turns=int(sys.argv[1]) if len(sys.argv) > 1 else 40))))
