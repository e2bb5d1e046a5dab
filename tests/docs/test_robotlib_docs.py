"""docs/generated/robotlib.html (libdoc) documents every keyword of actors.testing.robotlib."""

from __future__ import annotations

import inspect
from pathlib import Path

from actors.testing.robotlib import robotlib

PAGE = Path(__file__).resolve().parents[2] / "docs" / "generated" / "robotlib.html"


def keyword_names() -> list[str]:
    return [
        name.replace("_", " ").title()
        for name, member in inspect.getmembers(robotlib, inspect.isfunction)
        if not name.startswith("_")
    ]


def test_every_keyword_is_in_the_generated_documentation() -> None:
    html = PAGE.read_text(encoding="utf-8")
    missing = [name for name in keyword_names() if f'"{name}"' not in html]
    assert not missing, f"docs/generated/robotlib.html is stale (run `make docs`): missing {missing}"
