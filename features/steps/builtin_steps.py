"""Steps for builtin_adapter_and_slots.feature: the built-in adapter and MCP slot inference."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from behave import given, then, when
from behave.runner import Context

from actors.builtin import BuiltinAdapter
from actors.mcp.slots import infer_resource_slots
from actors.tools import ResourceSlot

FILE_TOOL_NAMES = {
    "builtin/file-read",
    "builtin/file-write",
    "builtin/file-edit",
    "builtin/file-list",
    "builtin/file-search",
}
GIT_TOOL_NAMES = {"builtin/git-status", "builtin/git-diff", "builtin/git-log", "builtin/git-commit"}
PLAN_TOOL_NAMES = {"builtin/plan-subplan", "builtin/plan-status"}


def _discovered_names(context: Context) -> set[str]:
    return {spec.name for spec in context.discovered_specs}


def _slot(context: Context, name: str) -> ResourceSlot:
    matching = [slot for slot in context.inferred_slots if slot.name == name]
    assert matching, f"no {name!r} slot in {context.inferred_slots}"
    slot: ResourceSlot = matching[0]
    return slot


# ---- BuiltinAdapter ----


@given("a builtin adapter")
def step_builtin_adapter(context: Context) -> None:
    workspace = tempfile.mkdtemp(prefix="builtin-steps-")
    context.add_cleanup(shutil.rmtree, workspace, ignore_errors=True)
    context.builtin_adapter = BuiltinAdapter(workspace)


@then("the builtin adapter should not be discovered yet")
def step_not_discovered(context: Context) -> None:
    assert context.builtin_adapter.discovered is False


@then("the builtin adapter should be discovered")
def step_discovered(context: Context) -> None:
    assert context.builtin_adapter.discovered is True


@when("I call discover on the builtin adapter")
def step_discover(context: Context) -> None:
    context.discovered_specs = context.builtin_adapter.discover()


@then("the discovered tools should include all file tools")
def step_all_file_tools(context: Context) -> None:
    missing = FILE_TOOL_NAMES - _discovered_names(context)
    assert not missing, f"missing file tools: {sorted(missing)}"


@then("the discovered tools should include all git tools")
def step_all_git_tools(context: Context) -> None:
    missing = GIT_TOOL_NAMES - _discovered_names(context)
    assert not missing, f"missing git tools: {sorted(missing)}"


@then("the discovered tools should include all subplan tools")
def step_all_plan_tools(context: Context) -> None:
    missing = PLAN_TOOL_NAMES - _discovered_names(context)
    assert not missing, f"missing plan tools: {sorted(missing)}"


@then("the total discovered tool count should be {count:d}")
def step_discovered_count(context: Context, count: int) -> None:
    assert len(context.discovered_specs) == count, sorted(_discovered_names(context))


@when("I call register on the builtin adapter")
def step_register(context: Context) -> None:
    context.registered_specs = context.builtin_adapter.register(context.registry)


@then("the registry should contain {count:d} tools")
def step_registry_count(context: Context, count: int) -> None:
    assert len(context.registry) == count, [t.name for t in context.registry.list()]


@then('the registry should contain tool "{name}"')
def step_registry_contains(context: Context, name: str) -> None:
    assert name in context.registry, [t.name for t in context.registry.list()]


@when("I call activate on the builtin adapter")
def step_activate(context: Context) -> None:
    _record_lifecycle(context, context.builtin_adapter.activate)


@when("I call deactivate on the builtin adapter")
def step_deactivate(context: Context) -> None:
    _record_lifecycle(context, context.builtin_adapter.deactivate)


def _record_lifecycle(context: Context, call: Any) -> None:
    if not hasattr(context, "lifecycle_errors"):
        context.lifecycle_errors = []
    try:
        call()
    except Exception as exc:
        context.lifecycle_errors.append(exc)


@then("the builtin adapter lifecycle calls should succeed without error")
def step_lifecycle_ok(context: Context) -> None:
    assert context.lifecycle_errors == [], context.lifecycle_errors


@then('all registered tools should have source "{source}"')
def step_all_source(context: Context, source: str) -> None:
    tools = context.registry.list()
    assert tools, "the registry is empty"
    wrong = [t.name for t in tools if t.source != source]
    assert not wrong, f"tools with another source: {wrong}"


# ---- MCP resource slot inference ----


@given('an MCP tool input schema with a "{prop}" property')
def step_schema_with_property(context: Context, prop: str) -> None:
    context.input_schema = {"type": "object", "properties": {prop: {"type": "string"}}}


@given("an MCP tool with an empty input schema")
def step_empty_schema(context: Context) -> None:
    context.input_schema = {}


@given("an MCP tool with an input schema missing the properties key")
def step_schema_without_properties(context: Context) -> None:
    context.input_schema = {"type": "object"}


@given('an MCP tool with both "{first}" and "{second}" properties')
def step_schema_with_two(context: Context, first: str, second: str) -> None:
    context.input_schema = {
        "type": "object",
        "properties": {first: {"type": "string"}, second: {"type": "string"}},
    }


@when("I infer resource slots for the schema")
def step_infer(context: Context) -> None:
    context.inferred_slots = infer_resource_slots(context.input_schema)


@then('the inferred slots should contain a "{name}" slot')
def step_contains_slot(context: Context, name: str) -> None:
    _slot(context, name)


@then('the "{name}" slot should have {field} "{value}"')
def step_slot_field(context: Context, name: str, field: str, value: str) -> None:
    assert field in ("resource_type", "access", "binding"), f"unknown slot field {field!r}"
    actual = getattr(_slot(context, name), field)
    assert actual == value, f"{name} slot {field} is {actual!r}, expected {value!r}"


@then("the inferred slots should be empty")
def step_slots_empty(context: Context) -> None:
    assert context.inferred_slots == [], context.inferred_slots


@then("the inferred slot count should be {count:d}")
def step_slot_count(context: Context, count: int) -> None:
    assert len(context.inferred_slots) == count, context.inferred_slots
