"""The client requirement sets of the current conformance suite judge the runtime as a client.

Each frozen set (``--requirements 2026-07-28`` and ``2025-11-25`` of 0.2.0-alpha.12): every
scenario it requires, one at a time at the set's wire version (see `run_client_scenarios`),
against ``client.py`` (the actor runtime, logging in through the host's
`LoginHandlers` for the OAuth ones), forked per scenario by a `ClientForkServer`; and the
logins of `BEYOND_THE_SETS`, which no set requires. Every required scenario must pass, except those in
`KNOWN`, each with why; an entry that passes fails the test too (delete it).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conformance.forkserver import ClientForkServer
from tests.conformance.requirements import (
    BEYOND_THE_SETS,
    REVISIONS,
    node22,
    required,
    run_client_scenarios,
    suite_version,
    verdict,
)

SET_TIMEOUT = 900.0
SCENARIO_TIMEOUT = 120.0
"""Seconds one scenario may take, its client included."""
SCENARIO_TIMEOUT_MS = "60000"

KNOWN: dict[str, dict[str, str]] = {
    "2026-07-28": {},
    "2025-11-25": {},
}

pytestmark = pytest.mark.timeout(SET_TIMEOUT + 120)


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_required_client_scenario_passes(
    forks: ClientForkServer, tmp_path: Path, revision: str
) -> None:
    node = node22()
    command = shlex.join(forks.command("--protocol", "auto", "--log-level", "INFO"))
    expected = required(node, revision, "client")
    scenarios, output = run_client_scenarios(
        node,
        revision,
        expected,
        command,
        tmp_path / "results",
        SCENARIO_TIMEOUT,
        ("--timeout", SCENARIO_TIMEOUT_MS),
    )
    assert len(expected) >= 15, expected
    unexpected, stale, context = verdict(expected, scenarios, KNOWN[revision], output)
    version = suite_version()
    assert not unexpected, f"conformance {version}, {revision}: failing, not in KNOWN: {unexpected}{context}"
    assert not stale, f"conformance {version}, {revision}: KNOWN lists passing scenarios: {stale}{context}"


def test_the_scenarios_beyond_the_sets_pass(forks: ClientForkServer, tmp_path: Path) -> None:
    node = node22()
    command = shlex.join(forks.command("--protocol", "auto", "--log-level", "INFO"))
    options = ("--timeout", SCENARIO_TIMEOUT_MS)
    scenarios, output = run_client_scenarios(
        node, None, BEYOND_THE_SETS, command, tmp_path / "results", SCENARIO_TIMEOUT, options
    )
    unexpected, stale, context = verdict(list(BEYOND_THE_SETS), scenarios, {}, output)
    assert not unexpected and not stale, f"conformance {suite_version()}: failing: {unexpected}{context}"
