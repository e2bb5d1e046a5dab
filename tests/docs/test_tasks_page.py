"""docs/tasks.md: its snippets are Python, name only what the package exports, and the index
links the page. What the page describes runs in tests/runtime/test_tasks.py."""

from __future__ import annotations

import ast
from pathlib import Path

import actors
from tests.docs.runnable import python_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def test_the_snippets_compile_and_import_what_the_package_exports() -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    for block in blocks:
        tree = ast.parse(block, "docs/tasks.md snippet")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "actors":
                for alias in node.names:
                    assert alias.name in actors.__all__, alias.name


def test_the_index_links_the_page() -> None:
    assert "](tasks.md)" in (PAGE.parent / "index.md").read_text(encoding="utf-8")
