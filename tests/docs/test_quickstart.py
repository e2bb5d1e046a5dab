"""docs/quickstart.md works exactly as written: its files are written and its commands run
(the conventions are in tests/docs/runnable.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.runnable import Command, matches, run_page, steps

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "quickstart.md"


def test_the_page_has_files_and_commands() -> None:
    found = steps(PAGE.read_text())
    assert sum(isinstance(s, Command) for s in found) >= 6
    assert {s[0] for s in found if isinstance(s, tuple)} == {
        "mcp.json",
        "first_call.py",
        "first_async_call.py",
        "time.robot",
    }


def test_quickstart_runs_as_written(tmp_path: Path) -> None:
    run_page(PAGE, tmp_path)


def test_expected_lines_match_in_order_with_gaps_and_prefixes() -> None:
    actual = ["a", "b", "error: not_found: no such thing", "c"]
    assert matches(["a", "b"], actual)
    assert matches(["...", "c"], actual)
    assert matches(["a", "...", "c"], actual)
    assert matches(["b", "error: not_found: ...", "c"], actual)
    assert not matches(["a", "c"], actual), "lines without ... between them are adjacent"
    assert not matches(["c", "a"], actual)
    assert not matches(["error: validation: ..."], actual)
    assert not matches(["a", "b", "c", "d"], actual)
