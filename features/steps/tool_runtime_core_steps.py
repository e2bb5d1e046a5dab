"""Steps for tool_runtime_core.feature: the registry, the runner and the result types."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from behave import given, then, when
from behave.runner import Context

from actors.tools import (
    ToolCapabilities,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    ToolSpec,
)

# The adder takes this long: the runner's duration must cover it (a runner that did not time
# the call would report 0). At least 50 ms is asked of 60 slept, for rounding; no upper bound.
ADDER_SLEEP = 0.06
ADDER_AT_LEAST_MS = 50.0


def _echo(inputs: dict[str, Any]) -> dict[str, Any]:
    return dict(inputs)


def _spec(name: str, handler: Any = _echo, **kwargs: Any) -> ToolSpec:
    return ToolSpec(name=name, description=f"test tool {name}", handler=handler, **kwargs)


def _capture(context: Context, action: Any) -> Any:
    context.error = None
    try:
        return action()
    except ToolError as exc:
        context.error = exc
        return None


@given("a tool registry")
def step_registry(context: Context) -> None:
    context.registry = ToolRegistry()


@given('a tool spec named "{name}" with a handler')
def step_spec_with_handler(context: Context, name: str) -> None:
    context.spec = _spec(name)


@given('a registered tool spec named "{name}"')
def step_registered(context: Context, name: str) -> None:
    context.registry.register(_spec(name))


@given('a registered tool spec named "{name}" with an adder handler')
def step_registered_adder(context: Context, name: str) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }

    def add(inputs: dict[str, Any]) -> dict[str, Any]:
        time.sleep(ADDER_SLEEP)
        return {"sum": inputs["a"] + inputs["b"]}

    context.registry.register(_spec(name, add, input_schema=schema))
    context.handler_at_least_ms = ADDER_AT_LEAST_MS


@given('a registered tool spec named "{name}" with a failing handler')
def step_registered_failing(context: Context, name: str) -> None:
    def fail(_: dict[str, Any]) -> Any:
        raise RuntimeError("handler exploded")

    context.registry.register(_spec(name, fail))


@given('a registered tool spec named "{name}" with a non-serialisable handler')
def step_registered_bad_output(context: Context, name: str) -> None:
    context.registry.register(_spec(name, lambda _: {"value": object()}))


@given('a registered tool spec named "{name}" with a scalar handler')
def step_registered_scalar(context: Context, name: str) -> None:
    context.registry.register(_spec(name, lambda _: 42))


@given('a tool spec named "{name}" with read_only capability')
def step_spec_read_only(context: Context, name: str) -> None:
    context.spec = _spec(name, capabilities=ToolCapabilities(read_only=True))


@given('a tool spec named "{name}" with writes capability')
def step_spec_writes(context: Context, name: str) -> None:
    context.spec = _spec(name, capabilities=ToolCapabilities(writes=True))


@given("a tool runner for the registry")
def step_runner(context: Context) -> None:
    context.lifecycle = []
    context.runner = ToolRunner(
        context.registry, hooks=[lambda stage, name: context.lifecycle.append((stage, name))]
    )


@given("an alternate registry with {count:d} tools")
def step_alternate_registry(context: Context, count: int) -> None:
    context.alternate = ToolRegistry()
    for i in range(count):
        context.alternate.register(_spec(f"alt/tool-{i}"))


@when("I register the tool spec")
def step_register(context: Context) -> None:
    context.registry.register(context.spec)


@when('I get the tool by name "{name}"')
def step_get(context: Context, name: str) -> None:
    context.retrieved = context.registry.get(name)


@when("I list all tools")
def step_list_all(context: Context) -> None:
    context.tools = context.registry.list()


@when('I list tools with namespace "{namespace}"')
def step_list_namespace(context: Context, namespace: str) -> None:
    context.tools = context.registry.list(namespace=namespace)


@when('I list tools with tool_type "{tool_type}"')
def step_list_type(context: Context, tool_type: str) -> None:
    context.tools = context.registry.list(tool_type=tool_type)


@when('I remove the tool "{name}"')
def step_remove(context: Context, name: str) -> None:
    context.removed = context.registry.remove(name)


@when('I try to register a duplicate tool "{name}"')
def step_register_duplicate(context: Context, name: str) -> None:
    _capture(context, lambda: context.registry.register(_spec(name)))


@when("I discover tools from the runner")
def step_discover(context: Context) -> None:
    context.discovered = context.runner.discover()


@when("I discover tools from the alternate registry")
def step_discover_alternate(context: Context) -> None:
    context.discovered = context.runner.discover(context.alternate)


@when('I activate tool "{name}"')
def step_activate(context: Context, name: str) -> None:
    context.runner.activate(name)


@when('I try to activate a missing tool "{name}"')
def step_activate_missing(context: Context, name: str) -> None:
    _capture(context, lambda: context.runner.activate(name))


@when('I execute tool "{name}" with inputs {inputs}')
def step_execute(context: Context, name: str, inputs: str) -> None:
    context.result = context.runner.execute(name, json.loads(inputs))


@when('I try to execute a missing tool "{name}" with inputs {inputs}')
def step_execute_missing(context: Context, name: str, inputs: str) -> None:
    _capture(context, lambda: context.runner.execute(name, json.loads(inputs)))


@when('I execute tool "{name}" with non-serialisable inputs')
def step_execute_non_serialisable(context: Context, name: str) -> None:
    context.result = context.runner.execute(name, {"value": {1, 2, 3}})


@when('I deactivate tool "{name}"')
def step_deactivate(context: Context, name: str) -> None:
    context.deactivated = context.runner.deactivate(name)


@when("I concurrently register {count:d} tools")
def step_concurrent_register(context: Context, count: int) -> None:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def register(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            context.registry.register(_spec(f"concurrent/tool-{i}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=register, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not errors, errors


@when('I create a ToolError with name "{name}" type "{error_type}" and details "{details}"')
def step_create_tool_error(context: Context, name: str, error_type: str, details: str) -> None:
    context.error = ToolError(name, error_type, details)


@when("I create a ToolResult with success True and metadata")
def step_create_result_ok(context: Context) -> None:
    # Made by the runtime's own constructor, which files its keywords as metadata.
    context.result = ToolResult.ok({"ok": True}, source="test")


@when('I create a ToolResult with success False and error "{error}"')
def step_create_result_fail(context: Context, error: str) -> None:
    context.result = ToolResult(success=False, error=error)


@then("the tool should be in the registry")
def step_in_registry(context: Context) -> None:
    assert context.registry.get(context.spec.name) is context.spec


@then('the retrieved tool spec name should be "{name}"')
def step_retrieved_name(context: Context, name: str) -> None:
    assert context.retrieved is not None and context.retrieved.name == name


@then("the retrieved tool spec should be None")
def step_retrieved_none(context: Context) -> None:
    assert context.retrieved is None


@then("the tool list should contain {count:d} tools")
def step_list_count(context: Context, count: int) -> None:
    assert len(context.tools) == count, [t.name for t in context.tools]


@then("the removal should succeed")
def step_removal_ok(context: Context) -> None:
    assert context.removed is True


@then("the removal should fail")
def step_removal_failed(context: Context) -> None:
    assert context.removed is False


@then('getting "{name}" should return None')
def step_get_none(context: Context, name: str) -> None:
    assert context.registry.get(name) is None


@then('a ToolError should be raised with type "{error_type}"')
def step_tool_error_raised(context: Context, error_type: str) -> None:
    assert isinstance(context.error, ToolError), context.error
    assert context.error.error_type == error_type


def _listed_capabilities(context: Context) -> dict[str, Any]:
    """The capabilities of the given spec as the runtime lists it to a host: registered, found by
    a runner's discover, in its JSON form (not the object the Given step built)."""
    registry = ToolRegistry()
    registry.register(context.spec)
    listed = [s for s in ToolRunner(registry).discover() if s.name == context.spec.name]
    assert len(listed) == 1, listed
    capabilities: dict[str, Any] = listed[0].model_dump(mode="json")["capabilities"]
    return capabilities


@then("the tool spec capabilities read_only should be {value}")
def step_cap_read_only(context: Context, value: str) -> None:
    assert _listed_capabilities(context)["read_only"] is (value == "True"), _listed_capabilities(context)


@then("the tool spec capabilities writes should be {value}")
def step_cap_writes(context: Context, value: str) -> None:
    assert _listed_capabilities(context)["writes"] is (value == "True"), _listed_capabilities(context)


@then("the lifecycle should complete in order")
def step_lifecycle_order(context: Context) -> None:
    assert [stage for stage, _ in context.lifecycle] == [
        "discover",
        "activate",
        "execute",
        "deactivate",
    ], context.lifecycle
    assert context.result.success, context.result
    assert not context.runner.is_active("test/lifecycle")


@then("the tool result should be successful")
def step_result_ok(context: Context) -> None:
    assert context.result.success, context.result


@then("the tool result should not be successful")
def step_result_failed(context: Context) -> None:
    assert not context.result.success, context.result


@then('the tool result output should contain key "{key}"')
def step_result_key(context: Context, key: str) -> None:
    assert key in context.result.output, context.result.output


@then("the tool result duration_ms should be non-negative")
def step_result_duration(context: Context) -> None:
    # Not merely >= 0 (true of a runner that never timed the call): the handler of the scenario
    # took a known time, and the duration must cover it.
    at_least = getattr(context, "handler_at_least_ms", None)
    assert at_least is not None, "the scenario's handler took no known time to check against"
    assert context.result.duration_ms >= at_least, context.result


@then("the tool result error should not be empty")
def step_result_error(context: Context) -> None:
    assert context.result.error


@then('the tool result error should mention "{text}"')
def step_result_error_mentions(context: Context, text: str) -> None:
    assert text in (context.result.error or ""), context.result.error


@then("all {count:d} tools should be in the registry")
def step_all_registered(context: Context, count: int) -> None:
    assert len(context.registry.list(namespace="concurrent")) == count


@then('the ToolError tool_name should be "{name}"')
def step_error_name(context: Context, name: str) -> None:
    assert context.error.tool_name == name


@then('the ToolError error_type should be "{error_type}"')
def step_error_type(context: Context, error_type: str) -> None:
    assert context.error.error_type == error_type


@then('the ToolError details should be "{details}"')
def step_error_details(context: Context, details: str) -> None:
    assert context.error.details == details


@then('the ToolError message should contain "{text}"')
def step_error_message(context: Context, text: str) -> None:
    assert text in str(context.error)


@then("the ToolResult success should be {value}")
def step_result_success(context: Context, value: str) -> None:
    assert context.result.success is (value == "True")


@then("the ToolResult metadata should not be empty")
def step_result_metadata(context: Context) -> None:
    assert context.result.metadata == {"source": "test"}, context.result
    assert context.result.output == {"ok": True}, context.result


@then('the ToolResult error should be "{error}"')
def step_result_error_is(context: Context, error: str) -> None:
    assert context.result.error == error


@then("the deactivation should return False")
def step_deactivation_false(context: Context) -> None:
    assert context.deactivated is False


@then("the discovered list should contain {count:d} tools")
def step_discovered_count(context: Context, count: int) -> None:
    assert len(context.discovered) == count
