"""Peers, each in its own virtual environment under ``benchmarks/.venvs/`` (made on first use).

Every client under test, ours included, runs `benchmarks/peer_client.py` as a subprocess
against the same server script, and the harness collects its JSON. Rounds alternate the
clients so that a busy moment of the machine does not land on one of them only.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, ROOT, VENVS_DIR, server_command, summary

PEER_CLIENT = BENCH_DIR / "peer_client.py"


@dataclass(frozen=True)
class Peer:
    name: str
    packages: tuple[str, ...]
    """What the virtual environment installs (None: this interpreter, no venv)."""


PEERS = {
    "langchain": Peer("langchain", ("langchain-mcp-adapters",)),
    "fastmcp": Peer("fastmcp", ("fastmcp",)),
}

# mode -> (environment, label shown in the report)
CLIENTS: dict[str, tuple[str | None, str]] = {
    "mcp-actors": (None, "mcp-actors `Runtime`"),
    "sdk": (None, "`mcp.Client` alone"),
    "langchain-session": ("langchain", "langchain-mcp-adapters, `client.session()` + `load_mcp_tools`"),
    "fastmcp": ("fastmcp", "fastmcp `Client`"),
    "langchain-per-call": ("langchain", "langchain-mcp-adapters, `get_tools()` (new session per call)"),
}


def _base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


def venv_python(peer: Peer) -> Path:
    return VENVS_DIR / peer.name / "bin" / "python"


def ensure_venv(peer: Peer, log: Any = print) -> tuple[Path | None, str | None]:
    """The peer's interpreter, creating its venv and installing it once; or why it cannot be had."""
    env_dir = VENVS_DIR / peer.name
    stamp = env_dir / ".bench-installed"
    wanted = " ".join(peer.packages)
    python = venv_python(peer)
    if stamp.exists() and stamp.read_text().strip() == wanted and python.exists():
        return python, None
    log(f"  creating {env_dir.relative_to(ROOT)} and installing {wanted} (once)")
    try:
        subprocess.run([_base_python(), "-m", "venv", "--clear", str(env_dir)], check=True, timeout=120)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *peer.packages],
            check=True,
            timeout=600,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", None) or ""
        return None, f"could not install {wanted}: {exc} {detail[-500:]}".strip()
    stamp.write_text(wanted + "\n")
    return python, None


def run_client(
    python: Path | str, mode: str, *, calls: int, reps: int, warmup: int = 30, timeout: float = 300
) -> dict[str, Any]:
    command, args = server_command()
    argv = [
        str(python),
        str(PEER_CLIENT),
        mode,
        "--command",
        command,
        "--args",
        json.dumps(args),
        "--calls",
        str(calls),
        "--warmup",
        str(warmup),
        "--reps",
        str(reps),
    ]
    env = dict(os.environ)
    if mode == "mcp-actors":
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        done = subprocess.run(
            argv, check=False, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT)
        )
    except subprocess.TimeoutExpired:
        return {"mode": mode, "error": f"timed out after {timeout}s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"mode": mode, "error": f"exit {done.returncode}: {done.stderr[-800:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    if done.returncode != 0 and "error" not in result:
        result["error"] = f"exit {done.returncode}: {done.stderr[-800:]}"
    return result


def run_peers(*, calls: int, reps: int, rounds: int, fresh_calls: int, log: Any = print) -> dict[str, Any]:
    """Latency and 64-way concurrency of every client, alternated over ``rounds`` rounds."""
    pythons: dict[str | None, Path | str | None] = {None: sys.executable}
    errors: dict[str, str] = {}
    for name, peer in PEERS.items():
        made, error = ensure_venv(peer, log)
        pythons[name] = made
        if error:
            errors[name] = error
            log(f"  {name}: {error}")
    collected: dict[str, dict[str, Any]] = {}

    def record(mode: str, result: dict[str, Any]) -> None:
        entry = collected.setdefault(
            mode, {"latency_ms": [], "latency_async_ms": [], "concurrency_s": [], "errors": []}
        )
        if "error" in result:
            entry["errors"].append(result["error"])
            log(f"  {mode}: {result['error'][:300]}")
            return
        entry["versions"] = result.get("versions", {})
        for key in ("latency_ms", "latency_async_ms", "concurrency_s"):
            entry[key].extend(result.get(key, []))
        if result.get("latency_ms"):
            # Each round's median: the same-run ratios to another client pair them round by round.
            entry.setdefault("round_medians_ms", []).append(statistics.median(result["latency_ms"]))

    steady = [m for m in CLIENTS if m != "langchain-per-call"]
    for round_no in range(rounds):
        order = steady[round_no % len(steady) :] + steady[: round_no % len(steady)]
        for mode in order:
            env_name, _ = CLIENTS[mode]
            interpreter = pythons.get(env_name)
            if interpreter is None:
                continue
            started = time.perf_counter()
            record(mode, run_client(interpreter, mode, calls=calls, reps=reps))
            log(f"  {mode}: round {round_no + 1} in {time.perf_counter() - started:.1f}s")
    # The docs' basic usage starts a server per call: a few calls, one 64-way run.
    langchain = pythons.get("langchain")
    if langchain is not None:
        started = time.perf_counter()
        record(
            "langchain-per-call",
            run_client(langchain, "langchain-per-call", calls=fresh_calls, reps=1, warmup=1, timeout=400),
        )
        log(f"  langchain-per-call: {time.perf_counter() - started:.1f}s")

    out: dict[str, Any] = {"clients": {}, "install_errors": errors}
    ours = collected.get("mcp-actors", {})
    ours_latency = summary(ours.get("latency_ms", []))["median"]
    ours_async = summary(ours.get("latency_async_ms", []))["median"]
    ours_wall = summary(ours.get("concurrency_s", []))["median"]
    for mode, (_, label) in CLIENTS.items():
        entry = collected.get(mode)
        if entry is None:
            out["clients"][mode] = {"label": label, "error": errors.get(CLIENTS[mode][0] or "", "not run")}
            continue
        latency = summary(entry["latency_ms"])
        wall = summary(entry["concurrency_s"])
        row: dict[str, Any] = {
            "label": label,
            "versions": entry.get("versions", {}),
            "latency_ms": latency,
            "concurrency_s": wall,
            "latency_ratio_to_ours": latency["median"] / ours_latency if ours_latency else None,
            "latency_ratio_to_ours_async": latency["median"] / ours_async if ours_async else None,
            "concurrency_ratio_to_ours": wall["median"] / ours_wall if ours_wall else None,
            "samples_latency_ms": entry["latency_ms"],
            "round_medians_ms": entry.get("round_medians_ms", []),
            "samples_concurrency_s": entry["concurrency_s"],
            "errors": entry["errors"],
        }
        if entry["latency_async_ms"]:
            row["latency_async_ms"] = summary(entry["latency_async_ms"])
        out["clients"][mode] = row
    return out
