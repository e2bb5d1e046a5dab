"""docs/agents/anthropic.md works exactly as written: its files are written and its commands
run, offline (a scripted Messages API stands in for Claude; conventions in tests/docs/runnable.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.runnable import Command, python_blocks, run_page, steps

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "anthropic.md"


def test_the_page_has_its_files_and_checks_its_output() -> None:
    found = steps(PAGE.read_text(encoding="utf-8"))
    files = {s[0] for s in found if isinstance(s, tuple)}
    assert files == {"mcp.json", "scripted_claude.py", "agent.py", "agent_loop.py"}
    commands = [s for s in found if isinstance(s, Command)]
    assert [c.line for c in commands] == ["python agent.py", "python agent_loop.py"]
    assert all(c.stdout for c in commands)


def test_the_snippets_that_are_not_run_are_python_at_least() -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert blocks, "the page shows the SDK's tool runner"
    for block in blocks:
        # Top-level await, as in a notebook: compile it inside a coroutine.
        body = "".join(f"    {line}\n" for line in block.splitlines())
        compile(f"async def snippet():\n{body}", f"{PAGE.name} snippet", "exec")


def test_the_page_runs_as_written(tmp_path: Path) -> None:
    run_page(PAGE, tmp_path)
