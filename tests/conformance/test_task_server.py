"""tests/servers/task_server.py serves the tasks extension (SEP-2663) as the conformance suite
judges it: talked to directly over streamable HTTP, every check of every ``tasks-*`` server
scenario of 0.2.0-alpha.12 succeeds.

The ``tasks-*`` scenarios are extension scenarios: no requirement set has them and the suite
reports them without scoring, so the test reads every check itself and wants ``SUCCESS`` of each
(a warning or an ``INFO`` fails it too). The one exception is `NOT_YET_TESTED`: checks the suite
itself always reports as skipped. An entry there that the suite starts to run fails the test
(delete the entry).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.requirements import node22, run_server_scenarios, suite_version
from tests.conformance.tasks_checks import assert_every_check_succeeded, tasks_scenarios
from tests.servers.http_server import HTTPServer

SCENARIO_TIMEOUT = 90.0

pytestmark = pytest.mark.timeout(10 * SCENARIO_TIMEOUT + 120)


def test_every_check_of_every_tasks_scenario_succeeds(tmp_path: Path) -> None:
    node = node22()
    names = tasks_scenarios(node)
    assert len(names) == 10, names
    with HTTPServer(module="tests.servers.task_server") as server:
        scenarios, output = run_server_scenarios(
            node, server.url, tuple(names), tmp_path / "results", SCENARIO_TIMEOUT
        )
    where = f"conformance {suite_version()}, tasks-* directly"
    assert_every_check_succeeded(names, scenarios, where, output)
