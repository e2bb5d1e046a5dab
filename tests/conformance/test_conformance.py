"""The older official MCP conformance suite (0.1.16, npm alias ``conformance-0.1``) judges our client
side; the current one's requirement sets are tests/conformance/test_requirements_client.py.

For each client scenario the suite starts a scenario server and runs ``client.py`` (the actor
runtime) with the server's URL; its checks say whether the client did the right thing. The
suite needs Node 22+: ``package.json`` here pins one from the npm registry (``node-linux-*``),
installed with the suite by ``npm ci --prefix tests/conformance`` (``make test`` does it).

- Every non-OAuth scenario must pass with at least one check run and no failure or warning (a
  client that does nothing "passes" ``initialize`` with 0/0 checks), in ``auto`` and ``legacy``.
- ``elicitation-sep1034-client-defaults`` passes with the server key ``"elicitation": "accept-defaults"``.
- The OAuth scenarios pass (the client logs in through the runtime, without a browser), all but
  the ones ``expected-failures.yml`` lists with the upstream reason; an entry that passes is stale.

Scenarios run one at a time (or two at once for OAuth ones): the suite runs a suite's scenarios
all in parallel, which on a 2-core machine starves the Python clients past the suite's timeout.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
SUITE = NODE_MODULES / "conformance-0.1" / "dist" / "index.js"
CLIENT = HERE / "client.py"
BASELINE = HERE / "expected-failures.yml"

NON_OAUTH = ("initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults")
ELICITATION = "elicitation-sep1034-client-defaults"
# The suite's default is 30 s; a client that imports slowly on a busy machine needs more.
SCENARIO_TIMEOUT_MS = 60_000
# The SSE retry timing check allows 450-700 ms; a loaded machine can make one run late.
TIMING_CHECKS = {"client-sse-retry-timing"}

pytestmark = pytest.mark.timeout(300)


def missing(reason: str) -> NoReturn:
    """A dependency is missing: fail and say so, never skip (``make test`` installs it)."""
    pytest.fail(f"{reason} (the conformance suite needs it: run make test, which installs it)", pytrace=False)


def node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "--version"], check=False, capture_output=True, text=True, timeout=30
        ).stdout
    except OSError:
        return 0
    match = re.match(r"v(\d+)\.", out.strip())
    return int(match.group(1)) if match else 0


@pytest.fixture(scope="module")
def node22() -> str:
    """A Node 22+: the one installed here from the npm registry, else the machine's if new enough."""
    if not SUITE.is_file():
        missing(
            "the conformance suite is not installed: run `npm ci --prefix tests/conformance` (or make test)"
        )
    for candidate in (str(NODE_MODULES / ".bin" / "node"), shutil.which("node")):
        if candidate and os.access(candidate, os.X_OK) and node_major(candidate) >= 22:
            return candidate
    missing("no Node 22+ (tests/conformance/node_modules/.bin/node is missing)")


@dataclass
class Outcome:
    """One scenario run: the suite's exit status and output, and its checks (checks.json)."""

    scenario: str
    returncode: int
    output: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    client_log: str = ""
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.get("status") == status)

    @property
    def passed(self) -> int:
        return self.count("SUCCESS")

    @property
    def failed(self) -> int:
        return self.count("FAILURE")

    @property
    def warnings(self) -> int:
        return self.count("WARNING")

    @property
    def clean(self) -> bool:
        """The suite's own verdict: checks ran and none failed or warned."""
        return self.passed > 0 and self.failed == 0 and self.warnings == 0

    def bad_checks(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c.get("status") in ("FAILURE", "WARNING")]

    def describe(self) -> str:
        bad = [
            f"{c.get('id')}: {c.get('status')} {c.get('errorMessage') or c.get('description')}"
            for c in self.bad_checks()
        ]
        return (
            f"{self.scenario}: exit {self.returncode}, {self.passed} passed, {self.failed} failed, "
            f"{self.warnings} warnings, {self.seconds:.1f}s\n  "
            + "\n  ".join(bad)
            + f"\n--- suite output ---\n{self.output[-3000:]}"
            + f"\n--- client log ---\n{self.client_log[-3000:]}"
        )


def run_scenario(node: str, scenario: str, out_dir: Path, protocol: str = "auto") -> Outcome:
    """Run one client scenario of the suite against ``client.py`` and read its checks."""
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    command = shlex.join([sys.executable, str(CLIENT), "--protocol", protocol, "--log-level", "INFO"])
    process = subprocess.Popen(
        [
            node,
            str(SUITE),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--timeout",
            str(SCENARIO_TIMEOUT_MS),
            "-o",
            str(out_dir),
        ],
        cwd=HERE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the suite runs the client through a shell: reap the whole group
    )
    try:
        output, _ = process.communicate(timeout=SCENARIO_TIMEOUT_MS / 1000 + 60)
    except subprocess.TimeoutExpired:
        output = b"(the conformance suite did not finish in time)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    checks_files = sorted(out_dir.glob("**/checks.json"))
    assert len(checks_files) <= 1, checks_files
    checks = json.loads(checks_files[0].read_text()) if checks_files else []
    log = checks_files[0].with_name("stderr.txt") if checks_files else None
    client_log = log.read_text(errors="replace") if log is not None and log.exists() else ""
    seconds = time.monotonic() - started
    return Outcome(scenario, process.returncode, output.decode(errors="replace"), checks, client_log, seconds)


def read_baseline(path: Path = BASELINE) -> list[str]:
    """The ``client:`` list of an expected-failures file (the subset of YAML the suite documents)."""
    entries: list[str] = []
    section = None
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line.startswith((" ", "-")):
            section = line.rstrip(":").strip()
            continue
        item = re.match(r"^\s*-\s*(\S+)\s*$", line)
        assert item, f"{path.name}: cannot read {raw!r}"
        if section == "client":
            entries.append(item.group(1).strip("'\""))
    return entries


def client_scenarios(node: str) -> list[str]:
    listed = subprocess.run(
        [node, str(SUITE), "list"], capture_output=True, text=True, timeout=60, check=True
    )
    text = listed.stdout.split("Client scenarios", 1)[1]
    return re.findall(r"^\s+-\s+(\S+)", text, flags=re.MULTILINE)


def test_the_suite_has_the_client_scenarios_we_account_for(node22: str) -> None:
    scenarios = client_scenarios(node22)
    baseline = read_baseline()
    assert len(baseline) == len(set(baseline)), "duplicate entries in expected-failures.yml"
    assert all(name.startswith("auth/") for name in baseline), "only OAuth scenarios may be expected to fail"
    assert set(baseline) <= set(scenarios), set(baseline) - set(scenarios)
    assert {s for s in scenarios if not s.startswith("auth/")} == set(NON_OAUTH), scenarios


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
@pytest.mark.parametrize("scenario", [s for s in NON_OAUTH if s != ELICITATION])
def test_non_oauth_scenario_passes(node22: str, tmp_path: Path, scenario: str, protocol: str) -> None:
    outcome = run_scenario(node22, scenario, tmp_path / "run1", protocol)
    bad = {check.get("id") for check in outcome.bad_checks()}
    if bad and bad <= TIMING_CHECKS:
        # Only the timing check missed (a busy machine); the behaviour was right. Once more.
        outcome = run_scenario(node22, scenario, tmp_path / "run2", protocol)
    assert outcome.checks, f"no checks ran: {outcome.describe()}"
    assert outcome.passed > 0, f"0 checks passed: {outcome.describe()}"
    assert outcome.failed == 0 and outcome.warnings == 0, outcome.describe()
    assert outcome.returncode == 0, outcome.describe()


@pytest.fixture(scope="module")
def elicitation_outcome(node22: str, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return run_scenario(node22, ELICITATION, tmp_path_factory.mktemp("elicitation"))


def test_an_elicitation_request_gets_a_well_formed_answer_never_a_hang(elicitation_outcome: Outcome) -> None:
    """The scenario server sends ``elicitation/create`` although we declare no elicitation
    capability: we answer at once, either properly (then the scenario passes) or with a clean
    JSON-RPC "not supported" error that ends the server's tool call."""
    outcome = elicitation_outcome
    assert "Client timed out" not in outcome.output, outcome.describe()
    assert outcome.checks, outcome.describe()
    if outcome.clean:
        return
    general = [c for c in outcome.checks if c.get("id") == "client-elicitation-sep1034-general"]
    assert general, outcome.describe()
    assert "Elicitation not supported" in (general[0].get("errorMessage") or ""), outcome.describe()


def test_elicitation_defaults_scenario_passes(elicitation_outcome: Outcome) -> None:
    outcome = elicitation_outcome
    assert outcome.passed > 0 and outcome.failed == 0 and outcome.warnings == 0, outcome.describe()


def _run_all(node: str, scenarios: list[str], out_dir: Path) -> Iterator[Outcome]:
    # Two at a time: the suite's --suite mode starts them all at once and starves the clients.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(run_scenario, node, name, out_dir / f"s{index}")
            for index, name in enumerate(scenarios)
        ]
        for future in futures:
            yield future.result()


def test_oauth_scenarios_fail_exactly_as_the_baseline_expects(node22: str, tmp_path: Path) -> None:
    oauth = [s for s in client_scenarios(node22) if s.startswith("auth/")]
    assert oauth, "the suite lists no OAuth scenarios"
    outcomes = list(_run_all(node22, oauth, tmp_path))
    baseline = set(read_baseline())
    report = {o.scenario: f"{o.passed} passed, {o.failed} failed, {o.warnings} warnings" for o in outcomes}
    for outcome in outcomes:
        assert outcome.checks, f"no checks ran: {outcome.describe()}"
        assert "Client timed out" not in outcome.output, outcome.describe()
    unexpected = sorted(o.scenario for o in outcomes if not o.clean and o.scenario not in baseline)
    stale = sorted(o.scenario for o in outcomes if o.clean and o.scenario in baseline)
    assert not unexpected, f"OAuth scenarios failing but not in expected-failures.yml: {unexpected}\n{report}"
    assert not stale, f"expected-failures.yml lists scenarios that now pass (remove them): {stale}\n{report}"
