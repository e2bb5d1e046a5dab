"""Tasks the gateway holds, across three replicas on one real Redis: a task made on one replica
is answered by the others (its record is in Redis), its backend's question answered and its
cancel given through another replica reach the call where it runs; the replica that made it
SIGKILLed after the result: the result is still served; SIGKILLed before: the task ends failed,
the client is told, nothing hangs.

The client is the runtime, one server entry per replica (``r0``..``r2``: a task id of one is
asked of another by its own part), so each request goes to the replica the test means."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, TaskStatus
from tests.cluster.conftest import Replica, ReplicaFactory
from tests.conftest import wait_until
from tests.gateway.conftest import fixture, write_config

pytestmark = [pytest.mark.real_process, pytest.mark.timeout(240)]

WAIT = 30.0
FAILOVER = 30.0
"""How long a task of a dead replica may stay working: its heartbeat's time to live and more."""


def clients(replicas: list[Replica]) -> dict[str, Any]:
    servers = {
        f"r{i}": {"url": replica.url, "protocol": "2026-07-28", "healthCheckInterval": 0}
        for i, replica in enumerate(replicas)
    }
    return {"mcpServers": servers, "builtin": {"enabled": False}}


def own(task_id: str | None) -> str:
    assert task_id is not None
    return task_id.split("/", 1)[1]


def test_a_held_task_is_answered_by_every_replica_and_outlives_or_fails_with_its_own(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    markers = {"FIXTURE_MARKER_DIR": str(tmp_path / "markers")}
    # Handshake era: the fixture server asks its question as a request of its own.
    entry = fixture(tasks={"hold": True}, protocol="legacy", healthCheckInterval=0, env=markers)
    config = write_config(tmp_path, {"fx": entry})
    r0, r1, r2 = replicas(3, config)
    asked: list[str] = []

    def elicitation(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(namespace)
        return {"action": "accept", "content": {"ok": True}}

    with Runtime.start(clients([r0, r1, r2]), elicitation=elicitation) as rt:
        # Made on r0, asked of r1 and r2 until it ends; each of them answers it.
        made = rt.start_task("r0/fx__sleep", {"seconds": 0.5, "marker": "across"}, timeout=WAIT)
        assert made.started.status == TaskStatus.WORKING
        result = rt.task(f"r1/{own(made.id)}", timeout=WAIT).result(timeout=WAIT)
        assert result.success and result.output["content"][0]["text"] == "slept 0.5"
        assert rt.task(f"r2/{own(made.id)}", timeout=WAIT).status().status == TaskStatus.COMPLETED

        # Its question answered through r2 (tasks/update there), for the call running on r0.
        question = rt.start_task("r0/fx__ask_client", {}, timeout=WAIT)
        answered = rt.task(f"r2/{own(question.id)}", timeout=WAIT).result(timeout=WAIT)
        assert answered.success and answered.output["content"][0]["text"] == "client answered: accept"
        assert asked == ["r2"]

        # Cancelled through r1, for the call running on r0: its backend's work stops.
        long = rt.start_task("r0/fx__sleep", {"seconds": 600, "marker": "remote"}, timeout=WAIT)
        assert wait_until((tmp_path / "markers" / "remote.started").exists, WAIT)
        assert rt.task(f"r1/{own(long.id)}", timeout=WAIT).cancel().status == TaskStatus.CANCELLED
        assert wait_until((tmp_path / "markers" / "remote.cancelled").exists, WAIT)

        # Ended on r1, then r1 is killed: the result is still served, by r0 and r2.
        ended = rt.start_task("r1/fx__echo", {"text": "kept"}, timeout=WAIT)
        assert rt.task(f"r2/{own(ended.id)}", timeout=WAIT).result(timeout=WAIT).success
        r1.kill()
        for name in ("r0", "r2"):
            kept = rt.task(f"{name}/{own(ended.id)}", timeout=WAIT).result(timeout=WAIT)
            assert kept.success and kept.output["content"][0]["text"] == "kept"

        # Running on r2 when r2 is killed: the task ends failed, and says why.
        running = rt.start_task("r2/fx__sleep", {"seconds": 600, "marker": "orphan"}, timeout=WAIT)
        assert wait_until((tmp_path / "markers" / "orphan.started").exists, WAIT)
        r2.kill()
        began = time.monotonic()
        found = rt.task(f"r0/{own(running.id)}", timeout=WAIT)
        outcome = found.result(timeout=FAILOVER)
        assert outcome.error_type == ErrorType.SERVER_ERROR, outcome
        assert "stopped" in str(outcome.error), outcome
        assert time.monotonic() - began < FAILOVER
        assert rt.task(f"r0/{own(running.id)}", timeout=WAIT).status().status == TaskStatus.FAILED
