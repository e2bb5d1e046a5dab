"""The pages on the client surface work exactly as written: each writes its example server,
its configuration and its host code in an empty folder and runs its commands, comparing the
output with the page (conventions in tests/docs/runnable.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.runnable import Command, python_blocks, run_page, steps

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "resources.md",
    "prompts.md",
    "progress.md",
    "sampling-and-roots.md",
    "logging.md",
    "tasks.md",
    "pins.md",
]


@pytest.mark.parametrize("name", PAGES)
def test_the_page_has_a_runnable_example(name: str) -> None:
    found = steps((DOCS / name).read_text(encoding="utf-8"))
    files = {s[0] for s in found if isinstance(s, tuple)}
    commands = [s for s in found if isinstance(s, Command)]
    assert "mcp.json" in files, f"{name} writes no configuration"
    assert any(f.endswith("_server.py") for f in files), f"{name} writes no example server"
    assert any(c.line.startswith("python ") for c in commands), f"{name} runs no Python"
    assert all(c.stdout or c.stderr for c in commands), f"{name} has a command that checks nothing"


# The pages with Python snippets for the reader (blocks not run as files), and how many each
# has. The other pages have none: a case for them would compile nothing and pass whatever the page
# said, so they have none here; `test_the_other_pages_have_no_snippet` makes a snippet added
# to one of them join this table to be checked.
SNIPPETS = {"resources.md": 1, "sampling-and-roots.md": 1, "tasks.md": 2}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_the_snippets_that_are_not_run_are_python_at_least(name: str) -> None:
    blocks = python_blocks((DOCS / name).read_text(encoding="utf-8"))
    assert len(blocks) == SNIPPETS[name], f"{name} has {len(blocks)} snippets, not {SNIPPETS[name]}"
    for block in blocks:
        compile(block, f"{name} snippet", "exec")


def test_the_other_pages_have_no_snippet() -> None:
    with_snippets = {name for name in PAGES if python_blocks((DOCS / name).read_text(encoding="utf-8"))}
    assert with_snippets == set(SNIPPETS), "a page's snippets are not checked: add it to SNIPPETS"


@pytest.mark.parametrize("name", PAGES)
def test_the_index_links_the_page(name: str) -> None:
    assert f"]({name})" in (DOCS / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", PAGES)
def test_the_page_runs_as_written(name: str, tmp_path: Path) -> None:
    run_page(DOCS / name, tmp_path)
