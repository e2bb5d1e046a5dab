"""The suite's ``tasks-*`` server scenarios and how they are judged: every check ``SUCCESS``.

They are extension scenarios: no requirement set has them and the suite reports them without
scoring, so the tests read every check themselves (a warning or an ``INFO`` fails too). The
one exception is `NOT_YET_TESTED`: checks the suite itself always reports as skipped; an
entry the suite starts to run is stale (delete it). Shared by the task server's own test and
the gateway's.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from typing import Any

from tests.conformance.requirements import SUITE

__all__ = ["NOT_YET_TESTED", "TasksVerdict", "assert_every_check_succeeded", "tasks_scenarios"]

NOT_YET_TESTED = {
    ("tasks-status-notifications", "tasks-status-notifications"): (
        "the suite's placeholder: notifications/tasks ride the subscriptions/listen stream, which "
        "its harness does not watch yet (the notifications are optional; the server sends none)"
    ),
}
"""(scenario, check id) → why the suite reports the check ``SKIPPED`` whatever the server does."""


def tasks_scenarios(node: str) -> list[str]:
    """The suite's ``tasks-*`` server scenarios, as ``list`` names them."""
    listed = subprocess.run(
        [node, str(SUITE), "list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    servers = listed.split("Server scenarios", 1)[1].split("Client scenarios", 1)[0]
    return re.findall(r"^\s+-\s+(tasks-\S+)", servers, flags=re.MULTILINE)


class TasksVerdict:
    """What the checks of a run said: how many succeeded, which did not, which scenarios gave
    none, and which `NOT_YET_TESTED` entries are stale."""

    def __init__(self, names: list[str], scenarios: Mapping[str, Any]) -> None:
        self.not_run = [name for name in names if name not in scenarios or not scenarios[name].checks]
        self.failing: list[str] = []
        self.succeeded = 0
        placeholders: set[tuple[str, str]] = set()
        for name in names:
            for check in scenarios[name].checks if name in scenarios else []:
                key = (name, str(check.get("id")))
                status = check.get("status")
                if status == "SUCCESS":
                    self.succeeded += 1
                elif key in NOT_YET_TESTED and status == "SKIPPED":
                    placeholders.add(key)
                else:
                    message = check.get("errorMessage") or check.get("description") or ""
                    self.failing.append(f"{name}/{key[1]}: {status} {str(message)[:300]}")
        self.stale = sorted(set(NOT_YET_TESTED) - placeholders)


def assert_every_check_succeeded(
    names: list[str], scenarios: Mapping[str, Any], where: str, output: str, log: str = ""
) -> None:
    """Every check of every scenario ran and succeeded (bar `NOT_YET_TESTED`), none of those
    entries is stale; prints how many succeeded. ``where`` names the run in the messages."""
    verdict = TasksVerdict(names, scenarios)
    assert not verdict.not_run, f"{where}: no checks from {verdict.not_run}\n{output}"
    print(f"{where}: {verdict.succeeded} checks succeeded in {len(names)} scenarios")
    failing = "\n".join(verdict.failing)
    assert not verdict.failing, f"{where}: checks not SUCCESS:\n{failing}\n{output[-2000:]}\n{log}"
    assert not verdict.stale, f"{where}: NOT_YET_TESTED lists checks the suite now runs: {verdict.stale}"
