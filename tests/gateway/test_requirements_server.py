"""The server requirement sets of the current conformance suite judge the gateway.

``mcp-actors serve --http`` in front of tests/servers/everything_server.py (``"prefix": false``,
``"sampling": "allow"``), the backend spoken to in either protocol era, and each frozen set
(``--requirements 2026-07-28`` and ``2025-11-25`` of 0.2.0-alpha.12) run against the gateway.
The same server passes every required scenario of both sets when the suite talks to it
directly (tests/conformance/test_reference_server.py), so a scenario failing here is the
gateway's doing. Every required scenario must pass, except those in `KNOWN`, each with why;
an entry that passes fails the test too (delete it).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from tests.conformance.requirements import REVISIONS, node22, required, run_set, suite_version, verdict
from tests.gateway.conftest import ROOT, http_gateway, write_config
from tests.servers.http import HTTPServer

SET_TIMEOUT = 300.0

_MRTR = "issue 21: multi round-trip requests (SEP-2322) through the gateway are not built yet"
_INPUT = [
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
]

_STATELESS = (
    "issue 21: the gateway does not refuse a request needing a client capability the request did "
    "not declare (-32021), nor send list changes on subscriptions/listen streams"
)
KNOWN: dict[tuple[str, str], dict[str, str]] = {
    ("2026-07-28", backend): {**dict.fromkeys(_INPUT, _MRTR), "server-stateless": _STATELESS}
    for backend in ("2026-07-28", "legacy", "http-2026-07-28", "http-legacy")
}
"""(revision, backend) → scenario → why it fails through the gateway today."""

pytestmark = pytest.mark.timeout(SET_TIMEOUT + 120)


@pytest.mark.parametrize("backend", ["2026-07-28", "legacy", "http-2026-07-28", "http-legacy"])
@pytest.mark.parametrize("revision", REVISIONS)
def test_every_required_server_scenario_passes_through_the_gateway(
    tmp_path: Path, revision: str, backend: str
) -> None:
    node = node22()
    era = backend.removeprefix("http-")
    with contextlib.ExitStack() as stack:
        if backend.startswith("http-"):
            remote = stack.enter_context(HTTPServer(module="tests.servers.everything_server"))
            everything: dict[str, object] = {"url": remote.url}
        else:
            everything = {"command": sys.executable, "args": ["-m", "tests.servers.everything_server"]}
        everything |= {"cwd": str(ROOT), "prefix": False, "sampling": "allow", "protocol": era}
        everything["logLevel"] = "debug"
        config = write_config(tmp_path, {"everything": everything})
        gateway = stack.enter_context(http_gateway(config, tmp_path))
        scenarios, output = run_set(
            node, revision, "server", ["--url", gateway.url], tmp_path / "results", SET_TIMEOUT
        )
        log = gateway.log()
    expected = required(node, revision, "server")
    assert len(expected) >= 25, expected
    known = KNOWN.get((revision, backend), {})
    unexpected, stale, context = verdict(expected, scenarios, known, output + "\n" + log[-1500:])
    where = f"conformance {suite_version()}, {revision}, backend {backend}"
    passing = sum(1 for name in expected if name in scenarios and scenarios[name].passed)
    print(f"{where}: {passing} of {len(expected)} pass")
    assert not unexpected, f"{where}: failing, not in KNOWN: {unexpected}{context}"
    assert not stale, f"{where}: KNOWN lists passing scenarios: {stale}{context}"
