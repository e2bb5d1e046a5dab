"""docs/agents/pydantic-ai.md works exactly as written: its files are written and its commands
run against the real time server, with a scripted model (conventions in tests/docs/runnable.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.runnable import Command, python_blocks, run_page, steps

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "pydantic-ai.md"


def test_the_page_has_a_runnable_example() -> None:
    found = steps(PAGE.read_text(encoding="utf-8"))
    assert {s[0] for s in found if isinstance(s, tuple)} == {"mcp.json", "agent.py"}
    commands = [s for s in found if isinstance(s, Command)]
    assert [c.line for c in commands] == ["python agent.py"]
    assert all(c.stdout for c in commands), "a command that checks nothing"


def test_the_snippets_that_are_not_run_are_python_at_least() -> None:
    snippets = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(snippets) == 2
    for block in snippets:
        compile(block, f"{PAGE.name} snippet", "exec")


def test_the_page_runs_as_written(tmp_path: Path) -> None:
    run_page(PAGE, tmp_path)
