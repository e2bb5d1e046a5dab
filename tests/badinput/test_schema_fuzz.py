"""Arguments generated from each real tool's input schema, valid and spoiled, through one Runtime.

The schemas are read from the running servers (``rt.list_tools()``), not copied here. Every
answer must be a `ToolResult` (a success or a classified failure) within its timeout plus a
second, arguments that break the schema must be refused as ``validation``, and the server must
keep serving without a restart.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from actors import Runtime
from actors.tools import ToolSpec
from tests.badinput.conftest import assert_classified, assert_serving, call
from tests.badinput.schema_strategies import (
    JSON_KINDS,
    NON_JSON_KINDS,
    Mutation,
    is_strict_json,
    mutations,
    narrow,
    valid_arguments,
)
from tests.harness.lag_report import settle_heap

VALID_EXAMPLES = 25
INVALID_EXAMPLES = 40


def fuzz(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# Tool -> extra constraints on its properties, so that valid calls stay quick.
MCP_TOOLS: dict[str, dict[str, dict[str, Any]]] = {
    "fx/echo": {},
    "fx/add": {},
    "fx/sleep": {"seconds": {"minimum": 0, "maximum": 0.05}},
    "fx/fail": {},
    "fx/stderr": {},
    "fx/header": {},
    "fx/ask_client": {},
    "big/echo": {},
    "big/length": {},
    "big/blob": {"size": {"minimum": 0, "maximum": 100_000}},
    "big/blob_structured": {"size": {"minimum": 0, "maximum": 100_000}},
}
MCP_EXCLUDED = {
    "fx/crash": "exits the server process by design (chaos tests kill servers)",
    "fx/add_tool": "changes the server's tool list; generated names could shadow the tools under test",
}
BUILTIN_TOOLS = (
    "builtin/file-edit",
    "builtin/file-list",
    "builtin/file-read",
    "builtin/file-search",
    "builtin/file-write",
    "builtin/git-commit",
    "builtin/git-diff",
    "builtin/git-log",
    "builtin/git-status",
    "builtin/plan-status",
    "builtin/plan-subplan",
)
VIAS = st.sampled_from(["facade", "tell", "ask"])


def spec_of(rt: Runtime, name: str) -> ToolSpec:
    specs = {t.name: t for t in rt.list_tools()}
    assert name in specs, f"{name} is not offered: {sorted(specs)}"
    return specs[name]


def restarts_of(rt: Runtime, name: str) -> int:
    return rt.status(name.partition("/")[0])[0].restarts


def test_every_tool_is_fuzzed_or_excluded_with_a_reason(
    mcp_runtime: Runtime, builtin_runtime: Runtime
) -> None:
    assert {t.name for t in mcp_runtime.list_tools()} == set(MCP_TOOLS) | set(MCP_EXCLUDED)
    assert {t.name for t in builtin_runtime.list_tools()} == set(BUILTIN_TOOLS)


def _check_valid_mcp_answer(name: str, arguments: dict[str, Any], result: Any) -> None:
    if name == "fx/fail":
        assert result.error_type == "server_error", result
        return
    assert result.success, (arguments, result)
    if name.endswith("/echo"):
        assert result.text == arguments["text"]
    elif name == "fx/add":
        assert result.output["structuredContent"] == {"result": arguments["a"] + arguments["b"]}
    elif name == "big/length":
        assert result.output["structuredContent"] == {"result": len(arguments["text"])}
    elif name == "big/blob":
        assert len(result.text) == max(arguments["size"], 0)


@pytest.mark.parametrize("name", sorted(MCP_TOOLS))
def test_valid_arguments_are_served(mcp_runtime: Runtime, name: str) -> None:
    spec = spec_of(mcp_runtime, name)
    validator = Draft202012Validator(spec.input_schema)
    restarts = restarts_of(mcp_runtime, name)

    @fuzz(VALID_EXAMPLES)
    @given(arguments=valid_arguments(narrow(spec.input_schema, MCP_TOOLS[name])), via=VIAS)
    def run(arguments: dict[str, Any], via: str) -> None:
        settle_heap()
        assert validator.is_valid(arguments), "the generator made an invalid value"
        answer = call(mcp_runtime, name, arguments, via=via)
        assert_classified(answer)
        _check_valid_mcp_answer(name, arguments, answer.result)

    run()
    assert_serving(mcp_runtime, name.partition("/")[0], restarts)


@pytest.mark.parametrize("name", sorted(MCP_TOOLS))
def test_invalid_arguments_are_refused_or_classified(mcp_runtime: Runtime, name: str) -> None:
    spec = spec_of(mcp_runtime, name)
    validator = Draft202012Validator(spec.input_schema)
    schema = narrow(spec.input_schema, MCP_TOOLS[name])
    narrowed = Draft202012Validator(schema)
    restarts = restarts_of(mcp_runtime, name)
    seen: dict[str, int] = {}

    @fuzz(INVALID_EXAMPLES)
    # Lone surrogates are left out here: they cut the whole session off (see test_bugs.py).
    @given(mutation=mutations(schema, JSON_KINDS + NON_JSON_KINDS), via=VIAS)
    def run(mutation: Mutation, via: str) -> None:
        settle_heap()
        arguments = mutation.arguments
        if mutation.is_json and validator.is_valid(arguments) and not narrowed.is_valid(arguments):
            reject()  # valid, just slow (a "wrong type" of 7 for a sleep's seconds)
        if mutation.kind == "root_type" and via == "facade":
            via = "tell"  # the facade raises on these (see test_bugs.py)
        seen[mutation.kind] = seen.get(mutation.kind, 0) + 1
        answer = call(mcp_runtime, name, arguments, via=via)
        assert_classified(answer)
        if mutation.is_json and not validator.is_valid(arguments):
            assert answer.result.error_type == "validation", (mutation.note, answer.result)

    run()
    assert_serving(mcp_runtime, name.partition("/")[0], restarts)
    assert len(seen) >= 5, f"too few kinds of mutation were tried: {seen}"


@pytest.mark.parametrize("name", BUILTIN_TOOLS)
def test_builtin_valid_arguments_get_a_classified_answer(builtin_runtime: Runtime, name: str) -> None:
    spec = spec_of(builtin_runtime, name)
    validator = Draft202012Validator(spec.input_schema)

    @fuzz(VALID_EXAMPLES)
    @given(arguments=valid_arguments(spec.input_schema), via=VIAS)
    def run(arguments: dict[str, Any], via: str) -> None:
        settle_heap()
        assert validator.is_valid(arguments), "the generator made an invalid value"
        answer = call(builtin_runtime, name, arguments, via=via)
        assert_classified(answer)

    run()
    assert call(builtin_runtime, "builtin/git-status", {}).result.success


@pytest.mark.parametrize("name", BUILTIN_TOOLS)
def test_builtin_invalid_arguments_are_refused_as_validation(builtin_runtime: Runtime, name: str) -> None:
    spec = spec_of(builtin_runtime, name)
    validator = Draft202012Validator(spec.input_schema)

    @fuzz(INVALID_EXAMPLES)
    @given(mutation=mutations(spec.input_schema, JSON_KINDS + NON_JSON_KINDS), via=VIAS)
    def run(mutation: Mutation, via: str) -> None:
        settle_heap()
        arguments = mutation.arguments
        if mutation.kind == "root_type" and via == "facade":
            via = "tell"
        answer = call(builtin_runtime, name, arguments, via=via)
        assert_classified(answer)
        # The built-in path checks strict JSON before the schema: NaN, sets, objects are refused too.
        if not is_strict_json(arguments) or not validator.is_valid(arguments):
            assert answer.result.error_type == "validation", (mutation.note, answer.result)

    run()
    assert call(builtin_runtime, "builtin/git-status", {}).result.success
