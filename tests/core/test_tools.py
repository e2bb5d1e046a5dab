"""The tool runtime core beyond the seed: concurrency, validation, JSON checks."""

from __future__ import annotations

import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tools import (
    ErrorType,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    ToolSpec,
    check_json,
)

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def adder(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"sum": inputs["a"] + inputs["b"]}


@pytest.fixture
def runner() -> ToolRunner:
    registry = ToolRegistry()
    registry.register(ToolSpec(name="math/add", input_schema=ADD_SCHEMA, handler=adder))
    return ToolRunner(registry)


def test_concurrent_register_and_execute_from_many_threads() -> None:
    registry = ToolRegistry()
    runner = ToolRunner(registry)
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(
            pool.map(
                lambda i: registry.register(
                    ToolSpec(name=f"ns{i % 4}/add-{i}", input_schema=ADD_SCHEMA, handler=adder)
                ),
                range(200),
            )
        )
        results = list(pool.map(lambda i: runner.execute(f"ns{i % 4}/add-{i}", {"a": i, "b": 1}), range(200)))
    assert len(registry) == 200
    assert all(len(registry.list(namespace=f"ns{k}")) == 50 for k in range(4))
    assert [r.output for r in results] == [{"sum": i + 1} for i in range(200)]


def test_concurrent_duplicate_registration_admits_exactly_one() -> None:
    registry = ToolRegistry()
    barrier = threading.Barrier(20)
    outcomes: list[str] = []
    lock = threading.Lock()

    def register() -> None:
        barrier.wait(timeout=5)
        try:
            registry.register(ToolSpec(name="x/same", handler=adder))
            outcome = "ok"
        except ToolError as exc:
            outcome = exc.error_type
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=register) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert sorted(outcomes) == ["RegistrationError"] * 19 + ["ok"]


@pytest.mark.parametrize(
    ("inputs", "fragment"),
    [
        ({"a": 1}, "'b' is a required property"),
        ({"a": "1", "b": 2}, "a: '1' is not of type 'integer'"),
        ({"a": 1, "b": 2, "c": 3}, "Additional properties are not allowed"),
    ],
)
def test_schema_violations_fail_before_the_handler_runs(inputs: dict[str, Any], fragment: str) -> None:
    calls: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register(ToolSpec(name="math/add", input_schema=ADD_SCHEMA, handler=calls.append))
    result = ToolRunner(registry).execute("math/add", inputs)
    assert not result.success
    assert result.error_type == ErrorType.VALIDATION == "validation"
    assert fragment in (result.error or "")
    assert calls == []


def test_schema_with_ref_is_followed(runner: ToolRunner) -> None:
    schema = {
        "$defs": {"pos": {"type": "integer", "minimum": 0}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/pos"}},
    }
    runner.registry.register(ToolSpec(name="math/pos", input_schema=schema, handler=lambda i: i))
    assert runner.execute("math/pos", {"n": 3}).success
    bad = runner.execute("math/pos", {"n": -1})
    assert bad.error_type == "validation" and "minimum" in (bad.error or "")


def test_invalid_schema_is_a_validation_failure_not_a_crash(runner: ToolRunner) -> None:
    runner.registry.register(
        ToolSpec(name="bad/schema", input_schema={"type": "no-such-type"}, handler=lambda i: i)
    )
    result = runner.execute("bad/schema", {})
    assert result.error_type == "validation" and "schema is invalid" in (result.error or "")


def test_handler_raising_tool_error_keeps_its_classification(runner: ToolRunner) -> None:
    def refuse(_: dict[str, Any]) -> Any:
        raise ToolError("x/refuse", ErrorType.NOT_FOUND, "nothing here")

    runner.registry.register(ToolSpec(name="x/refuse", handler=refuse))
    result = runner.execute("x/refuse", {})
    assert result.error_type == "not_found" and "nothing here" in (result.error or "")


def test_handler_exception_is_an_execution_failure_with_its_message(runner: ToolRunner) -> None:
    runner.registry.register(ToolSpec(name="x/boom", handler=lambda i: 1 / 0))
    result = runner.execute("x/boom", {})
    assert not result.success
    assert result.error_type == "execution"
    assert "ZeroDivisionError" in (result.error or "")


@pytest.mark.parametrize("outcome", ["answers", "raises"])
def test_the_duration_covers_the_handlers_run(runner: ToolRunner, outcome: str) -> None:
    # The handler sleeps 60 ms: the runner must report at least that (50 allows for rounding);
    # a runner that did not time the call would report 0. No upper bound: a busy machine is slow.
    def slow(_: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.06)
        if outcome == "raises":
            raise RuntimeError("slow and broken")
        return {"done": True}

    runner.registry.register(ToolSpec(name="x/slow", handler=slow))
    result = runner.execute("x/slow", {})
    assert result.success is (outcome == "answers"), result
    assert result.duration_ms >= 50, result


def test_nan_output_is_not_json(runner: ToolRunner) -> None:
    runner.registry.register(ToolSpec(name="x/nan", handler=lambda i: {"v": math.nan}))
    result = runner.execute("x/nan", {})
    assert result.error_type == "validation" and "JSON" in (result.error or "")


def test_replace_namespace_is_atomic_and_leaves_other_namespaces() -> None:
    registry = ToolRegistry()
    for name in ("gh/a", "gh/b", "jira/a"):
        registry.register(ToolSpec(name=name))
    registry.replace_namespace("gh", [ToolSpec(name="gh/b"), ToolSpec(name="gh/c")])
    assert [t.name for t in registry.list()] == ["gh/b", "gh/c", "jira/a"]
    with pytest.raises(ToolError, match="RegistrationError"):
        registry.replace_namespace("gh", [ToolSpec(name="jira/x")])


def test_tool_error_pickles_with_its_fields() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(ToolError("a/b", "TestError", "why")))
    assert (error.tool_name, error.error_type, error.details) == ("a/b", "TestError", "why")


def test_tool_result_text_joins_mcp_text_blocks() -> None:
    result = ToolResult.ok({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert result.text == "a\nb"
    assert ToolResult.fail("timeout", "too slow").text == "timeout: too slow"


def test_tool_result_fail_labels_its_error_once() -> None:
    assert ToolResult.fail("server_error", "boom").error == "server error: boom"
    assert ToolResult.fail("server_error", "server error: boom").error == "server error: boom"
    assert ToolResult.fail("timeout", "timeout").error == "timeout"
    assert ToolResult.fail("RegistrationError", "taken").error == "RegistrationError: taken"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_json_values_pass_the_check(value: Any) -> None:
    assert check_json(value, "inputs") is None


@given(
    json_values,
    st.sampled_from([object(), {1, 2}, b"bytes", math.nan, math.inf, complex(1, 2)]),
)
def test_a_non_json_leaf_anywhere_fails_the_check(value: Any, poison: Any) -> None:
    problem = check_json({"wrapped": [value, {"deep": poison}]}, "inputs")
    assert problem is not None and "JSON" in problem


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_runner_round_trips_any_json_input(inputs: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.register(ToolSpec(name="x/echo", handler=lambda i: i))
    result = ToolRunner(registry).execute("x/echo", inputs)
    assert result.success
    assert json.dumps(result.output, sort_keys=True) == json.dumps(inputs, sort_keys=True)
