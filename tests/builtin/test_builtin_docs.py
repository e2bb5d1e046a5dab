"""docs/reference/builtin.md lists every built-in tool with the schema the code declares."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actors.builtin import BuiltinAdapter

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "builtin.md"


def _sections() -> dict[str, str]:
    text = DOC.read_text()
    headings = list(re.finditer(r"^### `(builtin/[a-z-]+)`$", text, re.MULTILINE))
    sections = {}
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        sections[heading.group(1)] = text[heading.end() : end]
    return sections


def _json_blocks(section: str) -> list[object]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", section, re.DOTALL)]


def test_the_doc_lists_exactly_the_eleven_tools(tmp_path: Path) -> None:
    names = [s.name for s in BuiltinAdapter(tmp_path).discover()]
    assert sorted(_sections()) == sorted(names)
    assert len(names) == 11


@pytest.mark.parametrize("name", sorted(_sections()))
def test_each_documented_schema_matches_the_code(tmp_path: Path, name: str) -> None:
    spec = {s.name: s for s in BuiltinAdapter(tmp_path).discover()}[name]
    schema, example_call, example_result = _json_blocks(_sections()[name])
    assert schema == spec.input_schema, f"regenerate the schema of {name} in {DOC.name}"
    assert spec.input_validator.is_valid(example_call)
    assert isinstance(example_result, dict)


def test_the_doc_states_the_sandbox_rules() -> None:
    text = DOC.read_text()
    for phrase in ["## Sandbox rules", "realpath", "NUL byte", ".git", "os.replace", "GIT_TERMINAL_PROMPT=0"]:
        assert phrase in text
