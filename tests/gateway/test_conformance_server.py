"""The older official conformance **server** suite (@modelcontextprotocol/conformance 0.1.16, npm
alias ``conformance-0.1`` in tests/conformance) judges the gateway: ``mcp-actors serve --http`` in front of
tests/servers/everything_server.py (``"prefix": false``, so the suite finds the names it
expects; ``"sampling": "allow"``, so the server may ask the client's model), with the backend
spoken to in either protocol era. The suite itself speaks the handshake era to the gateway.

Every scenario must pass with at least one check and no failure, except those in
`EXPECTED_FAILURES` (each with its reason); a warning is allowed only where `ALLOWED_WARNINGS`
says why. An expected failure that passes fails the test too: remove it from the list.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import ROOT, http_gateway, missing, write_config

CONFORMANCE = ROOT / "tests" / "conformance" / "node_modules"
SUITE = CONFORMANCE / "conformance-0.1" / "dist" / "index.js"
SUITE_TIMEOUT = 240.0

EXPECTED_FAILURES: dict[str, str] = {}
"""Scenario → why it fails. Only what cannot be fixed in the gateway's own files."""

ALLOWED_WARNINGS: dict[str, str] = {
    "server-sse-polling": (
        "SSE resumability (SEP-1699) is optional: the gateway keeps no event store, so its POST "
        "streams carry no priming event or retry field (the suite recommends them, it does not "
        "require them); the tool's answer arrives on the stream it was asked on"
    ),
}

pytestmark = pytest.mark.timeout(SUITE_TIMEOUT + 120)


@pytest.fixture(scope="module")
def node22() -> str:
    """The Node 22 installed with the suite in tests/conformance."""
    if not SUITE.is_file():
        missing("the conformance suite is not installed: run `npm ci --prefix tests/conformance`")
    node = CONFORMANCE / ".bin" / "node"
    if not os.access(node, os.X_OK):
        missing("no Node 22 for the conformance suite (tests/conformance/node_modules/.bin/node)")
    return str(node)


@dataclass
class Scenario:
    name: str
    checks: list[dict[str, Any]]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.get("status") == status)

    @property
    def passed(self) -> bool:
        return self.count("SUCCESS") > 0 and self.count("FAILURE") == 0

    def problems(self) -> list[str]:
        return [
            f"{c.get('id')}: {c.get('status')} {c.get('errorMessage') or c.get('description')}"
            for c in self.checks
            if c.get("status") in ("FAILURE", "WARNING")
        ]

    def summary(self) -> str:
        passed, failed, warned = (self.count(s) for s in ("SUCCESS", "FAILURE", "WARNING"))
        return f"{passed} passed, {failed} failed, {warned} warnings"


def server_scenarios(node: str) -> list[str]:
    listed = subprocess.run(
        [node, str(SUITE), "list"], capture_output=True, text=True, timeout=60, check=True
    )
    text = listed.stdout.split("Server scenarios", 1)[1].split("Client scenarios", 1)[0]
    return re.findall(r"^\s+-\s+(\S+)", text, flags=re.MULTILINE)


def run_suite(node: str, url: str, out_dir: Path) -> tuple[dict[str, Scenario], str]:
    """``conformance server --url <url> --suite all``: each scenario's checks, and the output."""
    process = subprocess.Popen(
        [node, str(SUITE), "server", "--url", url, "--suite", "all", "-o", str(out_dir)],
        cwd=CONFORMANCE.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=SUITE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate(timeout=30)
        pytest.fail(f"the conformance suite did not finish in {SUITE_TIMEOUT}s:\n{output.decode()[-3000:]}")
    scenarios = {}
    for checks in sorted(out_dir.glob("server-*/checks.json")):
        # Folders are named server-<scenario>-<ISO timestamp>.
        name = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name)
        scenarios[name] = Scenario(name, json.loads(checks.read_text()))
    return scenarios, output.decode(errors="replace")


def test_the_lists_name_scenarios_of_the_suite(node22: str) -> None:
    known = set(server_scenarios(node22))
    assert len(known) >= 30, known
    assert set(EXPECTED_FAILURES) <= known, set(EXPECTED_FAILURES) - known
    assert set(ALLOWED_WARNINGS) <= known, set(ALLOWED_WARNINGS) - known


@pytest.mark.parametrize("backend_era", ["2026-07-28", "legacy"])
def test_every_server_scenario_passes_through_the_gateway(
    node22: str, tmp_path: Path, backend_era: str
) -> None:
    everything = {
        "command": sys.executable,
        "args": ["-m", "tests.servers.everything_server"],
        "cwd": str(ROOT),
        "prefix": False,
        "sampling": "allow",
        "protocol": backend_era,
        # A 2026-07-28 server sends log messages only to a client that asks for them per
        # request: ask for all, so the gateway can pass them on to the client it serves.
        "logLevel": "debug",
    }
    config = write_config(tmp_path, {"everything": everything})
    with http_gateway(config, tmp_path) as gateway:
        scenarios, output = run_suite(node22, gateway.url, tmp_path / "results")
        log = gateway.log()
    expected = server_scenarios(node22)
    report = "\n".join(f"  {s.name}: {s.summary()}; " + "; ".join(s.problems()) for s in scenarios.values())
    context = f"\n{report}\n--- suite output ---\n{output[-2000:]}\n{log}"
    assert sorted(scenarios) == sorted(expected), f"scenarios run ≠ scenarios listed{context}"
    failing = {name for name, s in scenarios.items() if not s.passed and name not in ALLOWED_WARNINGS}
    unexpected = sorted(failing - set(EXPECTED_FAILURES))
    stale = sorted(set(EXPECTED_FAILURES) - failing)
    assert not unexpected, f"scenarios failing that EXPECTED_FAILURES does not list: {unexpected}{context}"
    assert not stale, f"EXPECTED_FAILURES lists scenarios that now pass (remove them): {stale}{context}"
    warned = sorted(
        name for name, s in scenarios.items() if s.count("WARNING") and name not in ALLOWED_WARNINGS
    )
    assert not warned, f"scenarios with warnings that ALLOWED_WARNINGS does not explain: {warned}{context}"
    for name in ALLOWED_WARNINGS:
        assert scenarios[name].count("FAILURE") == 0, f"{name} fails{context}"
