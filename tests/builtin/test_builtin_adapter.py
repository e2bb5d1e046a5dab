"""`BuiltinAdapter`: the 11 tools it declares and how they are registered."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from actors.builtin import BUILTIN_TOOLS, BuiltinAdapter, BuiltinTool, ExecutionFailure, InvalidInput
from actors.builtin.workspace import Workspace
from actors.tools import ErrorType, ToolCapabilities, ToolError, ToolRegistry, ToolRunner, ToolSpec

EXPECTED = {
    # name: (read_only, writes, checkpointable, slot name, slot access, slot binding)
    "builtin/file-read": (True, False, True, "file", "read_only", "parameter"),
    "builtin/file-write": (False, True, True, "file", "read_write", "parameter"),
    "builtin/file-edit": (False, True, True, "file", "read_write", "parameter"),
    "builtin/file-list": (True, False, True, "directory", "read_only", "parameter"),
    "builtin/file-search": (True, False, True, "directory", "read_only", "parameter"),
    "builtin/git-status": (True, False, False, "repository", "read_only", "contextual"),
    "builtin/git-diff": (True, False, False, "repository", "read_only", "contextual"),
    "builtin/git-log": (True, False, False, "repository", "read_only", "contextual"),
    "builtin/git-commit": (False, True, False, "repository", "read_write", "contextual"),
    "builtin/plan-subplan": (False, True, True, "plan", "read_write", "parameter"),
    "builtin/plan-status": (False, True, True, "plan", "read_write", "parameter"),
}


def test_discover_declares_eleven_tools(adapter: BuiltinAdapter) -> None:
    assert adapter.discovered is False
    specs = adapter.discover()
    assert adapter.discovered is True
    assert [s.name for s in specs] == list(EXPECTED)
    assert adapter.discover() == specs


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_tool_is_fully_declared(adapter: BuiltinAdapter, name: str) -> None:
    spec = {s.name: s for s in adapter.discover()}[name]
    read_only, writes, checkpointable, slot, access, binding = EXPECTED[name]
    assert (spec.source, spec.tool_type, spec.namespace) == ("builtin", "tool", "builtin")
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", spec.tool_name)
    assert spec.description
    assert spec.capabilities == ToolCapabilities(
        read_only=read_only, writes=writes, checkpointable=checkpointable
    )
    assert [(s.name, s.access, s.binding) for s in spec.resource_slots] == [(slot, access, binding)]
    if binding == "parameter":
        assert spec.resource_slots[0].parameter in spec.input_schema["properties"]
    schema = spec.input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert spec.handler is not None


def test_register_adds_all_or_nothing(adapter: BuiltinAdapter) -> None:
    registry = ToolRegistry()
    assert [s.name for s in adapter.register(registry)] == list(EXPECTED)
    assert [t.name for t in registry.list(namespace="builtin")] == sorted(EXPECTED)

    taken = ToolRegistry()
    squatter = ToolSpec(name="builtin/git-log", description="someone else's")
    taken.register(squatter)
    with pytest.raises(ToolError) as caught:
        BuiltinAdapter(adapter.workspace.root).register(taken)
    assert caught.value.error_type == "RegistrationError"
    assert taken.list() == [squatter]


def test_lifecycle_is_a_no_op(adapter: BuiltinAdapter) -> None:
    adapter.activate()
    adapter.deactivate()
    adapter.deactivate()
    assert adapter.namespace == "builtin" and BuiltinAdapter.namespace == "builtin"


def test_workspace_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        BuiltinAdapter(tmp_path / "missing")


def test_runner_lifecycle_over_builtin_tools(
    adapter: BuiltinAdapter, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The write takes 60 ms (a slow disk): the result's duration must cover it.
    write_text = Workspace.write_text

    def slow_write(self: Workspace, path: str, *texts: str) -> Any:
        time.sleep(0.06)
        return write_text(self, path, *texts)

    monkeypatch.setattr(Workspace, "write_text", slow_write)
    registry = ToolRegistry()
    adapter.register(registry)
    stages: list[tuple[str, str]] = []
    runner = ToolRunner(registry, hooks=[lambda stage, name: stages.append((stage, name))])
    assert len(runner.discover()) == 11
    runner.activate("builtin/file-write")
    result = runner.execute("builtin/file-write", {"path": "x.txt", "content": "x"})
    runner.deactivate("builtin/file-write")
    assert result.success, result
    assert (workspace / "x.txt").read_text() == "x"
    # At least the 60 ms it slept (50 allows for rounding); 0 if the runner did not time it.
    assert result.duration_ms >= 50, result
    assert [s for s, _ in stages] == ["discover", "activate", "execute", "deactivate"]


@pytest.mark.parametrize(
    ("raised", "error_type"),
    [
        (InvalidInput("bad"), ErrorType.VALIDATION),
        (ExecutionFailure("broke"), ErrorType.EXECUTION),
        (TimeoutError("slow"), ErrorType.TIMEOUT),
        (PermissionError("denied"), ErrorType.EXECUTION),
        (KeyError("surprise"), ErrorType.EXECUTION),
    ],
)
def test_tool_exceptions_become_classified_results(
    adapter: BuiltinAdapter, raised: Exception, error_type: ErrorType
) -> None:
    def code(context: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        raise raised

    tool = BuiltinTool("boom", "raises", {"type": "object"}, ToolCapabilities(), (), code)
    registry = ToolRegistry()
    registry.register(tool.spec("test", adapter.context))
    result = ToolRunner(registry).execute("test/boom", {})
    assert not result.success
    assert result.error_type == error_type
    assert "test/boom" in (result.error or "") or error_type == ErrorType.EXECUTION


def test_declarations_are_unique() -> None:
    names = [t.name for t in BUILTIN_TOOLS]
    assert len(names) == len(set(names)) == 11
