"""docs/agents/langchain.md works exactly as written: its example servers, configuration and
agents are written in an empty folder and its commands run, offline (a scripted model); the
snippets that are not run are Python at least (conventions in tests/docs/runnable.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.runnable import Command, python_blocks, run_page, steps

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "langchain.md"


def test_the_page_has_a_runnable_example() -> None:
    found = steps(PAGE.read_text(encoding="utf-8"))
    assert {s[0] for s in found if isinstance(s, tuple)} == {
        "build_server.py",
        "mcp.json",
        "agent.py",
        "progress.py",
    }
    commands = [s for s in found if isinstance(s, Command)]
    assert [c.line for c in commands] == ["python agent.py", "python progress.py"]
    assert all(c.stdout for c in commands), "a command that checks nothing"


def test_the_snippets_that_are_not_run_are_python_at_least() -> None:
    snippets = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert snippets
    for block in snippets:
        # Top-level await, as in an async function's body.
        compile(
            "async def snippet():\n" + "".join(f"    {line}\n" for line in block.splitlines()),
            "snippet",
            "exec",
        )


def test_the_page_runs_as_written(tmp_path: Path) -> None:
    run_page(PAGE, tmp_path)
