"""`infer_resource_slots`: resource slots of MCP tools from their parameter names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.mcp.slots import SLOT_RULES, infer_resource_slots
from actors.tools import ResourceSlot


def schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}}


@pytest.mark.parametrize("name", ["file_path", "filepath", "file", "path", "filePath", "FILE-PATH"])
def test_file_parameters(name: str) -> None:
    assert infer_resource_slots(schema(name)) == [
        ResourceSlot(
            name="file", resource_type="file", access="read_write", binding="parameter", parameter=name
        )
    ]


@pytest.mark.parametrize("name", ["directory", "dir", "folder", "Directory"])
def test_directory_parameters(name: str) -> None:
    assert infer_resource_slots(schema(name)) == [
        ResourceSlot(
            name="directory",
            resource_type="directory",
            access="read_only",
            binding="parameter",
            parameter=name,
        )
    ]


@pytest.mark.parametrize("name", ["repo_path", "repository", "repo", "repoPath"])
def test_repository_parameters(name: str) -> None:
    assert infer_resource_slots(schema(name)) == [
        ResourceSlot(
            name="repository",
            resource_type="git-checkout",
            access="read_write",
            binding="contextual",
            parameter=name,
        )
    ]


def test_one_slot_per_kind_bound_to_the_preferred_name() -> None:
    slots = infer_resource_slots(schema("path", "file", "filepath", "file_path", "dir", "folder", "repo"))
    assert [(s.name, s.parameter) for s in slots] == [
        ("file", "file_path"),
        ("directory", "dir"),
        ("repository", "repo"),
    ]


@pytest.mark.parametrize(
    "input_schema",
    [
        {},
        {"type": "object"},
        {"type": "object", "properties": {}},
        {"type": "object", "properties": None},
        {"type": "object", "properties": ["path"]},
        schema("query", "limit", "pathway", "filename", "directory_listing"),
    ],
)
def test_nothing_inferred(input_schema: dict[str, Any]) -> None:
    assert infer_resource_slots(input_schema) == []


@given(st.dictionaries(st.text(max_size=12), st.just({"type": "string"}), max_size=8))
def test_at_most_one_slot_per_kind(properties: dict[str, Any]) -> None:
    slots = infer_resource_slots({"type": "object", "properties": properties})
    kinds = [s.name for s in slots]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) <= {rule.slot for rule in SLOT_RULES}
    assert all(s.parameter in properties for s in slots)
