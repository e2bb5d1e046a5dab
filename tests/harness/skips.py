"""No silent skips: the run fails on any skip or xfail not listed in ``tests/allowed-skips.txt``.

Each line of the allow-list is ``skip|xfail <test id pattern> | <reason>``: the pattern is an
`fnmatch` pattern over the test id, and the reason must appear in the test's own skip reason,
so a test allowed to skip for one reason cannot skip silently for another. ``#`` starts a
comment. Unlisted skips are printed at the end and make the exit status non-zero.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["ALLOW_LIST", "Allowed", "Skip", "read_allow_list"]

ALLOW_LIST = Path("tests") / "allowed-skips.txt"
"""Relative to the rootdir."""

_KINDS = ("skip", "xfail")


@dataclass(frozen=True)
class Allowed:
    kind: str
    pattern: str
    reason: str

    def allows(self, skip: Skip) -> bool:
        return (
            skip.kind == self.kind
            and fnmatch.fnmatchcase(skip.nodeid, self.pattern)
            and self.reason in skip.reason
        )


@dataclass(frozen=True)
class Skip:
    kind: str
    nodeid: str
    reason: str


def read_allow_list(path: Path) -> list[Allowed]:
    """The entries of an allow-list file; a line that is not an entry raises ``ValueError``."""
    if not path.is_file():
        return []
    entries = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, bar, reason = line.partition(" | ")
        kind, _, pattern = head.strip().partition(" ")
        if not bar or kind not in _KINDS or not pattern.strip() or not reason.strip():
            expected = "skip|xfail <test id pattern> | <reason>"
            raise ValueError(f"{path}:{number}: expected {expected!r}, got {raw!r}")
        entries.append(Allowed(kind, pattern.strip(), reason.strip()))
    return entries


def _skip_of(report: pytest.TestReport | pytest.CollectReport) -> Skip:
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        return Skip("xfail", report.nodeid, str(wasxfail))
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return Skip("skip", report.nodeid, reason.removeprefix("Skipped: "))


class SkipGuard:
    """Collects every skip of the session and fails the session on the unlisted ones."""

    def __init__(self, allowed: list[Allowed]) -> None:
        self.allowed = allowed
        self.unlisted: list[Skip] = []

    def _note(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if not report.skipped:
            return
        skip = _skip_of(report)
        if not any(entry.allows(skip) for entry in self.allowed):
            self.unlisted.append(skip)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.unlisted:
            return
        terminalreporter.section(f"skips not allowed by {ALLOW_LIST}", red=True)
        for skip in self.unlisted:
            terminalreporter.line(f"UNLISTED {skip.kind.upper()} {skip.nodeid} - {skip.reason}", red=True)


def pytest_configure(config: pytest.Config) -> None:
    try:
        allowed = read_allow_list(config.rootpath / ALLOW_LIST)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(SkipGuard(allowed), "skip-guard")
