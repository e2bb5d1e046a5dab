"""The frozen requirement sets of the current official conformance suite, run and read.

``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 (the package this folder's package.json
pins under its own name) names, per spec revision, exactly the scenarios conformance requires
(``--requirements 2026-07-28``, ``--requirements 2025-11-25``), frozen at the revision's release
and run at its wire version. `required` lists them, `run_set` runs one set (as ``server`` against
a URL or as ``client`` with a command) and returns each scenario's checks.

The older suite (0.1.16, npm alias ``conformance-0.1``) stays for what these sets do not cover: the
handshake-era scenarios the client tests run in both protocol modes. What the current suite has
beyond the sets and the project must pass is `BEYOND_THE_SETS` (client) and
`SERVER_BEYOND_THE_SETS` (server).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
VERSION_FILE = SUITE.parent.parent / "package.json"
REVISIONS = ("2026-07-28", "2025-11-25")
BEYOND_THE_SETS = (
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-frontmatter",
    "sep-2640-client-verify-size",
)
"""Client scenarios the current suite has but neither frozen set requires, that the runtime
must pass all the same: logins it offers (client credentials, SEP-990's identity assertion,
SEP-1933's workload identity, SEP-1932's DPoP), the host side of skills (SEP-2640) and the
fallbacks for 2025-03-26 servers."""
SERVER_BEYOND_THE_SETS = ("json-schema-2020-12", "server-sse-polling")
"""Server scenarios the current suite has but neither frozen set requires, that the gateway
must pass all the same (a warning allowed: SSE resumability is optional)."""

Role = Literal["server", "client"]

__all__ = [
    "BEYOND_THE_SETS",
    "REVISIONS",
    "SERVER_BEYOND_THE_SETS",
    "SUITE",
    "Scenario",
    "node22",
    "required",
    "run_client_scenarios",
    "run_server_scenarios",
    "run_set",
    "suite_version",
    "verdict",
]


@dataclass(frozen=True)
class Scenario:
    """One scenario's run: its checks, as the suite wrote them."""

    name: str
    checks: tuple[dict[str, Any], ...]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.get("status") == status)

    @property
    def passed(self) -> bool:
        """The suite's verdict: checks ran and none failed."""
        return self.count("SUCCESS") > 0 and self.count("FAILURE") == 0

    def problems(self) -> str:
        return "; ".join(
            f"{c.get('id')}: {c.get('status')} {(c.get('errorMessage') or c.get('description') or '')[:200]}"
            for c in self.checks
            if c.get("status") in ("FAILURE", "WARNING")
        )


def node22() -> str:
    """The Node 22 installed beside the suite (``npm ci --prefix tests/conformance``); fails the
    test, never skips, when it or the suite is missing (``make test`` installs both)."""
    node = HERE / "node_modules" / ".bin" / "node"
    if not SUITE.is_file() or not os.access(node, os.X_OK):
        raise AssertionError(
            "the conformance suite 0.2.0 or its Node 22 is not installed: "
            "run `npm ci --prefix tests/conformance` (make test does)"
        )
    return str(node)


def suite_version() -> str:
    return str(json.loads(VERSION_FILE.read_text())["version"])


def required(node: str, revision: str, role: Role) -> list[str]:
    """The scenarios ``revision`` requires of a ``role`` (what ``list --requirements`` prints)."""
    listed = subprocess.run(
        [node, str(SUITE), "list", "--requirements", revision],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    heading = "Server scenarios" if role == "server" else "Client scenarios"
    section = listed.split(heading, 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\s+-\s+(\S+)\s*$", section, flags=re.MULTILINE)


def run_set(
    node: str,
    revision: str,
    role: Role,
    target: list[str],
    out_dir: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> tuple[dict[str, Scenario], str]:
    """Run ``revision``'s set as ``role`` (``target``: ``["--url", URL]`` or ``["--command", CMD]``);
    each scenario's checks, and the suite's output. The process group is killed on a timeout."""
    return _run(node, [role, *target, "--requirements", revision], out_dir, timeout, env)


def _run(
    node: str, arguments: list[str], out_dir: Path, timeout: float, env: dict[str, str] | None = None
) -> tuple[dict[str, Scenario], str]:
    process = subprocess.Popen(
        [node, str(SUITE), *arguments, "-o", str(out_dir)],
        cwd=HERE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate(timeout=30)
        what = " ".join(arguments[:1] + arguments[-1:])
        raise AssertionError(f"{what} did not finish in {timeout:.0f}s:\n{output.decode()[-3000:]}") from None
    scenarios: dict[str, Scenario] = {}
    for checks in sorted(out_dir.glob("**/checks.json")):
        # Folders are named [server-]<scenario>-<ISO timestamp>, auth scenarios under auth/.
        relative = checks.parent.relative_to(out_dir).as_posix()
        name = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", relative)
        scenarios[name] = Scenario(name, tuple(json.loads(checks.read_text())))
    return scenarios, output.decode(errors="replace")


def run_client_scenarios(
    node: str,
    revision: str | None,
    names: list[str] | tuple[str, ...],
    command: str,
    out_dir: Path,
    timeout: float,
    options: tuple[str, ...] = (),
) -> tuple[dict[str, Scenario], str]:
    """The client scenarios ``names`` one at a time, each at ``revision``'s wire version (None:
    the scenario's own).

    ``--requirements`` runs a set's scenarios all at once: some 40 Python clients starting
    together on a 2-core machine took 94 s to reach their first request, past the scenario's
    connect timeout. One at a time is the same set, run as a slow machine can."""
    return _run_each(
        node,
        [
            [
                *("client", "--command", command, "--scenario", name),
                *(("--spec-version", revision) if revision else ()),
                *options,
            ]
            for name in names
        ],
        out_dir,
        timeout,
    )


def run_server_scenarios(
    node: str, url: str, names: tuple[str, ...], out_dir: Path, timeout: float
) -> tuple[dict[str, Scenario], str]:
    """The server scenarios ``names`` against ``url``, one at a time, each at its own version."""
    return _run_each(node, [["server", "--url", url, "--scenario", name] for name in names], out_dir, timeout)


def _run_each(
    node: str, runs: list[list[str]], out_dir: Path, timeout: float
) -> tuple[dict[str, Scenario], str]:
    """The suite run once per argument list of ``runs``, in turn: every scenario seen, and the
    tail of each run's output."""
    scenarios: dict[str, Scenario] = {}
    outputs = []
    for arguments in runs:
        found, output = _run(node, arguments, out_dir, timeout)
        scenarios.update(found)
        outputs.append(output[-300:])
    return scenarios, "\n".join(outputs)


def verdict(
    expected: list[str], scenarios: dict[str, Scenario], known: dict[str, str], output: str
) -> tuple[list[str], list[str], str]:
    """(required scenarios failing that ``known`` does not list, listed ones that now pass, report)."""

    def line(name: str) -> str:
        scenario = scenarios.get(name)
        if scenario is None:
            return f"  {name}: not run"
        return f"  {name}: " + ("pass" if scenario.passed else f"FAIL {scenario.problems()}")

    report = "\n".join(line(name) for name in expected)
    failing = {name for name in expected if name not in scenarios or not scenarios[name].passed}
    context = f"\n{report}\n--- suite output ---\n{output[-1500:]}"
    return sorted(failing - set(known)), sorted(set(known) - failing), context
