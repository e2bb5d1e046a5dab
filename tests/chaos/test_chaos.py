"""The short chaos run (part of ``make test``) and the host killed with SIGKILL.

``pytest -s tests/chaos`` prints the counts. ``CHAOS_SECONDS`` and ``CHAOS_SEED`` change the run;
the long run is tests/chaos/test_soak.py (``pytest -m soak``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from actors.testing import procfs
from tests.chaos.harness import KILLABLE, MAX_RESTARTS_BROKEN, ChaosPlan, run_chaos, summary
from tests.conftest import wait_until
from tests.runtime.conftest import ROOT

SHORT = ChaosPlan(
    seconds=float(os.environ.get("CHAOS_SECONDS", "30")),
    seed=int(os.environ.get("CHAOS_SEED", "20261")),
)


def assert_chaos_counts(counts: dict[str, Any]) -> None:
    """What every chaos run must show, short or long."""
    examples = "\n".join(counts["examples"])
    assert counts["workers_stuck"] == 0, "a caller thread never came back"
    assert counts["worker_errors"] == [], counts["worker_errors"]
    assert counts["calls"] >= 100 and counts["ok"] > 0, counts
    assert counts["unclassified"] == 0, examples
    assert counts["never_answered"] == 0, examples
    assert counts["late"] == 0, f"answers later than timeout + {counts['slack']}s:\n{examples}"
    assert counts["unexpected"] == 0, examples
    assert counts["wrong_answers"] == 0, f"answers that belong to another call:\n{examples}"
    assert counts["settled"], f"the servers did not settle: {counts['states']} {counts['restarts']}"
    assert counts["kills_total"] >= 5, counts["kills"]
    restarts, kills = counts["restarts"], counts["kills"]
    # Every start failure of a working server has a kill behind it: any other one is a bug.
    assert counts["start_failures_not_from_kills"] == {}, "\n".join(counts["unexplained_start_failures"])
    for ns in KILLABLE:
        assert restarts[ns] == kills.get(ns, 0), f"{ns}: {restarts[ns]} restarts for {kills.get(ns, 0)} kills"
    probes_failed = counts["health_check_failures"]["stop"]
    probe_restarts = restarts["stop"]
    # Each stop is found and restarted; a probe restart takes two timed-out probes in a row.
    assert probe_restarts >= counts["stops"], f"{counts['stops']} stops, {probe_restarts} restarts"
    assert 2 * probe_restarts <= probes_failed, (restarts, probes_failed)
    assert restarts["hang"] == restarts["noisy"] == 0, restarts
    for ns in ("garbage", "exit"):
        assert counts["states"][ns] == "failed", counts["states"]
        assert restarts[ns] == MAX_RESTARTS_BROKEN, restarts
    assert counts["in_flight_after"] == {}, counts["in_flight_after"]
    assert counts["requests_failed"] == [], counts["requests_failed"]
    assert sum(counts["requests"].values()) >= 10, counts["requests"]
    assert counts["noisy_processes"] >= 2, "the idle server never stopped and started again"
    assert counts["leaks"] == 0, (counts["leaked_children"], counts["leaked_threads"])
    assert counts["logged_exceptions"] == {}, "\n".join(counts["exception_samples"])


@pytest.mark.timeout(SHORT.seconds + 180)
def test_short_chaos_run() -> None:
    counts = run_chaos(SHORT, progress=print)
    print(summary(counts))
    assert_chaos_counts(counts)


HOST = textwrap.dedent(
    """
    import json, os, signal, sys, time
    sys.path.insert(0, {root!r})
    from actors import Runtime
    from actors.runtime.messages import CallTool
    from tests.runtime.conftest import config, stdio_server
    names = ["a", "b", "c", "d", "e"]
    real = {{"real_process": True}}  # their own processes: SIGSTOP, the parent-death signal
    servers = {{n: stdio_server("fixture_server", "--name", n, **real) for n in names}}
    servers["noisy"] = stdio_server("noisy_server", protocol="legacy", **real)
    rt = Runtime.start(config(servers))
    for n in servers:
        rt.start_server(n)
    calls = [CallTool(n, "sleep", {{"seconds": 600}}, timeout=600) for n in ("a", "b", "c")]
    for call in calls:
        rt.registry.tell(call)
    while sum(s.in_flight for s in rt.status()) < len(calls):
        time.sleep(0.05)
    statuses = {{s.namespace: s for s in rt.status()}}
    os.kill(statuses["e"].pid, signal.SIGSTOP)  # one that answers nothing at all
    print(json.dumps({{n: [s.pid, s.in_flight] for n, s in statuses.items()}}), flush=True)
    time.sleep(600)
    """
)


def test_host_killed_with_sigkill_mid_call_leaves_no_server_behind(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST.format(root=str(ROOT)))
    host = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
    )
    pids: list[int] = []
    try:
        assert host.stdout is not None
        servers = json.loads(host.stdout.readline())
        pids = [pid for pid, _ in servers.values()]
        assert len(pids) == 6 and all(procfs.is_alive(pid) for pid in pids), servers
        assert [servers[n][1] for n in ("a", "b", "c")] == [1, 1, 1], servers
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=10)
        survivors = lambda: [pid for pid in pids if procfs.is_alive(pid)]  # noqa: E731
        assert wait_until(lambda: not survivors(), 10), f"servers outlived their host: {survivors()}"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(timeout=10)
        if host.stdout is not None:
            host.stdout.close()
        for pid in pids:  # not our children: clean up what the assertion above may have found
            if procfs.is_alive(pid):
                os.kill(pid, signal.SIGKILL)
