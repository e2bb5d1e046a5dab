"""The harness guards themselves, run in a pytest of their own: the loop-lag watchdog fails a
test that blocks the loop, and a skip not on the allow-list fails the run."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.skips import Allowed, Skip, read_allow_list

ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ("pytester",)

PLUGINS = ("-p", "tests.harness.loop_lag", "-p", "tests.harness.skips", "-p", "no:cacheprovider")

BLOCKING = """
import time
import anyio
import pytest
from actors.mcp.loop import EventLoop

async def block():
    time.sleep(0.4)

def run_blocking():
    with EventLoop.start() as loop:  # a loop the harness did not create
        loop.run(block, timeout=30)
        loop.run(anyio.sleep, 0.05, timeout=30)

def test_blocks_the_loop():
    run_blocking()

@pytest.mark.loop_lag(limit=5.0, reason="moves a huge message on purpose")
def test_blocks_with_a_reason():
    run_blocking()

def test_does_not_block():
    with EventLoop.start() as loop:
        loop.run(anyio.sleep, 0.1, timeout=30)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeini("[pytest]\n")
    return pytester


@pytest.mark.timeout(180)
def test_the_watchdog_fails_a_test_that_blocks_the_loop(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_lag=BLOCKING)
    result = inner.runpytest_subprocess(*PLUGINS, "-q")
    result.assert_outcomes(passed=3, errors=1)
    text = result.stdout.str()
    assert "test_lag.py::test_blocks_the_loop: the event loop 'mcp-actors-loop' lagged" in text, text
    assert "(limit 100 ms)" in text, text
    assert "test_blocks_with_a_reason: the event loop" not in text, text
    assert result.ret == pytest.ExitCode.TESTS_FAILED


MODULE_FIXTURE_BLOCKING = """
import pytest
from test_lag import run_blocking

@pytest.fixture(scope="module")
def blocked():
    run_blocking()

def test_after_a_blocking_module_fixture(blocked):
    pass
"""


@pytest.mark.timeout(180)
def test_under_xdist_a_lag_outside_tests_on_a_worker_fails_the_run(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_lag=BLOCKING, test_module_fixture=MODULE_FIXTURE_BLOCKING)
    xdist = ("-n", "2", "--dist", "loadfile")
    result = inner.runpytest_subprocess(*PLUGINS, "-q", *xdist, "test_module_fixture.py")
    # The test itself passed: only the lag the worker handed over fails the run.
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*event loop lag outside tests*", "LAG [[]gw*before*test_after_a_blocking*"])


@pytest.mark.timeout(180)
def test_a_loop_lag_marker_needs_a_reason(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_marker="""
        import pytest

        @pytest.mark.loop_lag(limit=5.0)
        def test_no_reason():
            pass
        """
    )
    result = inner.runpytest_subprocess(*PLUGINS, "-q")
    result.assert_outcomes(errors=1)
    assert "limit=<seconds>, reason=<why>" in result.stdout.str()


SKIPPING = """
import pytest

def test_allowed():
    pytest.skip("the soak runs only when asked for")

def test_allowed_pattern_other_reason():
    pytest.skip("something else is missing")

def test_unlisted():
    pytest.skip("npm is missing")

@pytest.mark.xfail(strict=True, reason="a known limitation")
def test_xfail_allowed():
    assert False

@pytest.mark.xfail(reason="an unlisted limitation")
def test_xfail_unlisted():
    assert False

def test_passes():
    pass
"""


@pytest.mark.timeout(180)
def test_an_unlisted_skip_fails_the_run_and_is_named(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_skips=SKIPPING)
    (inner.path / "tests").mkdir()
    (inner.path / "tests" / "allowed-skips.txt").write_text(
        "# comment\n"
        "skip test_skips.py::test_allowed* | the soak runs only when asked for\n"
        "xfail test_skips.py::test_xfail_allowed | a known limitation\n"
    )
    result = inner.runpytest_subprocess(*PLUGINS, "-q")
    result.assert_outcomes(passed=1, skipped=3, xfailed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = [line for line in result.stdout.lines if line.startswith("UNLISTED")]
    assert lines == [
        "UNLISTED SKIP test_skips.py::test_allowed_pattern_other_reason - something else is missing",
        "UNLISTED SKIP test_skips.py::test_unlisted - npm is missing",
        "UNLISTED XFAIL test_skips.py::test_xfail_unlisted - an unlisted limitation",
    ], result.stdout.str()


@pytest.mark.timeout(180)
def test_listed_skips_pass_and_no_list_allows_none(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_one="import pytest\n\ndef test_a():\n    pytest.skip('allowed here')\n")
    assert inner.runpytest_subprocess(*PLUGINS, "-q").ret == pytest.ExitCode.TESTS_FAILED
    (inner.path / "tests").mkdir()
    (inner.path / "tests" / "allowed-skips.txt").write_text("skip test_one.py::test_a | allowed here\n")
    assert inner.runpytest_subprocess(*PLUGINS, "-q").ret == pytest.ExitCode.OK


def test_a_malformed_allow_list_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "allowed.txt"
    path.write_text("skip tests/x.py::test_y without a reason\n")
    with pytest.raises(ValueError, match=r"allowed\.txt:1"):
        read_allow_list(path)


def test_the_project_allow_list_is_short_and_each_entry_has_a_reason() -> None:
    entries = read_allow_list(ROOT / "tests" / "allowed-skips.txt")
    assert 1 <= len(entries) <= 3, entries
    assert [e.kind for e in entries].count("xfail") <= 1, "xfail is allowed for one known limitation at most"
    assert all(len(e.reason) >= 10 for e in entries), entries


def test_an_entry_matches_kind_id_and_reason() -> None:
    entry = Allowed("skip", "tests/a.py::test_*", "no soak")
    assert entry.allows(Skip("skip", "tests/a.py::test_b[1]", "Skipped: no soak here"))
    assert not entry.allows(Skip("xfail", "tests/a.py::test_b", "no soak"))
    assert not entry.allows(Skip("skip", "tests/b.py::test_b", "no soak"))
    assert not entry.allows(Skip("skip", "tests/a.py::test_b", "npm missing"))


BEHAVE_STEPS = """
import time

import anyio
from behave import given

from actors.mcp.loop import EventLoop


async def block():
    time.sleep(0.3)


def blocking_loop():
    loop = EventLoop.start()
    loop.run(block, timeout=30)
    loop.run(anyio.sleep, 0.05, timeout=30)
    loop.stop()


@given("the loop is blocked")
def step_blocked(context):
    blocking_loop()


@given("the loop is blocked in a cleanup")
def step_blocked_in_cleanup(context):
    context.add_cleanup(blocking_loop)


@given("the loop is not blocked")
def step_not_blocked(context):
    with EventLoop.start() as loop:
        loop.run(anyio.sleep, 0.1, timeout=30)
"""

BEHAVE_FEATURE = """
Feature: lag
  Scenario: blocks
    Given the loop is blocked

  Scenario: does not block
    Given the loop is not blocked

  Scenario: blocks in its cleanup
    Given the loop is blocked in a cleanup

  Scenario: follows one that blocked in its cleanup
    Given the loop is not blocked
"""


@pytest.mark.timeout(180)
def test_the_behave_watchdog_fails_a_scenario_that_blocks_the_loop(tmp_path: Path) -> None:
    features = tmp_path / "features"
    (features / "steps").mkdir(parents=True)
    (features / "environment.py").write_text((ROOT / "features" / "environment.py").read_text())
    (features / "steps" / "steps.py").write_text(BEHAVE_STEPS)
    (features / "lag.feature").write_text(BEHAVE_FEATURE)
    behave = Path(sys.executable).with_name("behave")
    run = subprocess.run(
        [str(behave), "--format", "plain", "--no-capture", "--no-capture-stderr", "features"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "2 scenarios passed, 0 failed, 2 hook_error" in out, out
    assert "lag.feature:3 'blocks': the event loop 'mcp-actors-loop' lagged" in out, out
    assert "cleanup of features/lag.feature:9 'blocks in its cleanup': the event loop" in out, out


def _loop_lag_markers() -> list[str]:
    """``path::test`` of every test function in tests/ with a ``loop_lag`` marker."""
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue  # collecting it fails the run anyway
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr == "loop_lag":
                    found.append(f"{path.relative_to(ROOT)}::{node.name}")
    return found


def test_every_raised_lag_limit_is_listed_in_docs_testing() -> None:
    listed = (ROOT / "docs" / "testing.md").read_text()
    marked = _loop_lag_markers()
    assert marked, "no loop_lag marker found: the scan is broken"
    assert len(marked) <= 5, f"keep the tests that may lag the loop few: {marked}"
    missing = [test for test in marked if test.split("::")[0] not in listed]
    assert not missing, f"docs/testing.md does not list these raised lag limits: {missing}"
