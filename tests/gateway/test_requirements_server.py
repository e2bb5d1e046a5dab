"""The server requirement sets of the current conformance suite judge the gateway.

``mcp-actors serve --http`` in front of tests/servers/everything_server.py (``"prefix": false``,
``"sampling": "allow"``), the backend spoken to in either protocol era (one gateway per backend,
both sets run against it), and each frozen set (``--requirements 2026-07-28`` and
``2025-11-25`` of 0.2.0-alpha.12) run against the gateway.
The same server passes every required scenario of both sets when the suite talks to it
directly (tests/conformance/test_reference_server.py), so a scenario failing here is the
gateway's doing. Every required scenario must pass, except those in `KNOWN`, each with why;
an entry that passes fails the test too (delete it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.requirements import (
    REVISIONS,
    SERVER_BEYOND_THE_SETS,
    node22,
    required,
    run_server_scenarios,
    run_set,
    suite_version,
    verdict,
)
from tests.gateway.conftest import GatewayProcess

SET_TIMEOUT = 300.0

_HANDSHAKE_BACKEND = {
    "input-required-result-basic-elicitation": (
        "the scenario checks the key the tool gives its question in its 2026-07-28 form "
        "('user_name'); a handshake-era backend's questions are requests without keys"
    ),
    "input-required-result-multiple-input-requests": (
        "the scenario wants three questions in one round; a handshake-era backend asks them one "
        "at a time, each awaited before the next (each reaches the client as a round of its own)"
    ),
    "input-required-result-capability-check": (
        "a handshake-era backend cannot be told per request which capabilities the client "
        "declared: it asks for an elicitation, which the gateway declines for the client, and "
        "the tool then ends instead of asking for the sampling the scenario expects"
    ),
}
KNOWN: dict[tuple[str, str], dict[str, str]] = {
    ("2026-07-28", backend): _HANDSHAKE_BACKEND for backend in ("legacy", "http-legacy")
}
"""(revision, backend) → scenario → why it fails through the gateway. Not the suite's fault nor
the gateway's: what a handshake-era server can say (tests/gateway/test_input_rounds.py proves
the rounds of such a backend reach a 2026-07-28 client)."""


pytestmark = pytest.mark.timeout(SET_TIMEOUT + 120)


BACKENDS = ["2026-07-28", "legacy", "http-2026-07-28", "http-legacy"]


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
@pytest.mark.parametrize("revision", REVISIONS)
def test_every_required_server_scenario_passes_through_the_gateway(
    everything: GatewayProcess, tmp_path: Path, revision: str, backend: str
) -> None:
    node = node22()
    scenarios, output = run_set(
        node, revision, "server", ["--url", everything.url], tmp_path / "results", SET_TIMEOUT
    )
    log = everything.log()  # one gateway per backend, for both sets
    expected = required(node, revision, "server")
    assert len(expected) >= 25, expected
    known = KNOWN.get((revision, backend), {})
    unexpected, stale, context = verdict(expected, scenarios, known, output + "\n" + log[-1500:])
    where = f"conformance {suite_version()}, {revision}, backend {backend}"
    passing = sum(1 for name in expected if name in scenarios and scenarios[name].passed)
    print(f"{where}: {passing} of {len(expected)} pass")
    assert not unexpected, f"{where}: failing, not in KNOWN: {unexpected}{context}"
    assert not stale, f"{where}: KNOWN lists passing scenarios: {stale}{context}"


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_the_scenarios_beyond_the_sets_pass_through_the_gateway(
    everything: GatewayProcess, tmp_path: Path, backend: str
) -> None:
    """Checks ran and none failed; a warning is allowed (``server-sse-polling`` warns: the gateway
    keeps no event store, so its POST streams carry no priming event or retry field, which SEP-1699
    recommends and does not require)."""
    scenarios, output = run_server_scenarios(
        node22(), everything.url, SERVER_BEYOND_THE_SETS, tmp_path / "results", SET_TIMEOUT
    )
    failing = [
        name
        for name in SERVER_BEYOND_THE_SETS
        if name not in scenarios or not scenarios[name].checks or scenarios[name].count("FAILURE")
    ]
    report = {name: scenarios[name].problems() for name in scenarios}
    assert not failing, f"conformance {suite_version()}, backend {backend}: {failing} {report}\n{output}"
