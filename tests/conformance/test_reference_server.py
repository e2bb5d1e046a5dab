"""tests/servers/everything_server.py is a reference server: talked to directly, it passes every
required server scenario of both frozen requirement sets of the current conformance suite. The
gateway tests (tests/gateway/test_requirements_server.py) put it behind the gateway; what fails
there and not here is the gateway's doing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.requirements import REVISIONS, node22, required, run_set, suite_version, verdict
from tests.servers.http_server import HTTPServer

SET_TIMEOUT = 300.0

pytestmark = pytest.mark.timeout(SET_TIMEOUT + 60)


SERVERS = [("tests.servers.everything_server", revision) for revision in REVISIONS] + [
    # Its tools ask on the session's back-channel: the handshake era's set only
    # (tests/gateway/test_era_copies.py runs the same set through the gateway).
    ("tests.servers.era_specific_server", "2025-11-25"),
]


@pytest.mark.parametrize(("module", "revision"), SERVERS)
def test_the_reference_server_passes_every_required_scenario(
    tmp_path: Path, module: str, revision: str
) -> None:
    node = node22()
    with HTTPServer(module=module) as server:
        scenarios, output = run_set(
            node, revision, "server", ["--url", server.url], tmp_path / "results", SET_TIMEOUT
        )
    expected = required(node, revision, "server")
    assert len(expected) >= 25, expected
    failing, _, context = verdict(expected, scenarios, {}, output)
    where = f"conformance {suite_version()}, {revision}, {module} directly"
    assert not failing, f"{where}: failing {failing}{context}"
