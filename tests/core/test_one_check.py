"""The one check (`actors.tools.check.check_call`): every path refuses the same call the same
way, with a classified `Refusal` (an `ErrorType` and a `RefusalReason`), never text to match."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import CallTool, ErrorType, Runtime
from actors.mcp.config import ServerConfig
from actors.mcp.transport import RemoteTool
from actors.testing import BlockingAdapter, MockTransport
from actors.tools import RefusalReason, ToolRegistry, ToolResult, ToolRunner, ToolSpec, check_call

WAIT = 30.0

SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "^[a-z]+$"}},
    "required": ["code"],
}


def offered() -> dict[str, ToolSpec]:
    return {"lookup": ToolSpec(name="s/lookup", input_schema=SCHEMA)}


@pytest.mark.parametrize("timeout", [True, False, 0, -1, float("nan"), float("inf"), "5"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: Any) -> None:
    refusal = check_call({}, timeout=timeout)
    assert refusal is not None
    assert (refusal.error_type, refusal.reason) == (ErrorType.VALIDATION, RefusalReason.BAD_TIMEOUT)
    message = CallTool("s", "lookup", {}, timeout=timeout)
    assert message.refusal() == refusal


@pytest.mark.parametrize("timeout", [None, 1, 0.5, 30])
def test_a_positive_timeout_passes(timeout: Any) -> None:
    assert check_call({}, timeout=timeout) is None


def test_each_step_has_its_reason() -> None:
    cases: list[tuple[Any, dict[str, Any], RefusalReason, ErrorType]] = [
        ([1], {}, RefusalReason.MALFORMED, ErrorType.VALIDATION),
        ({"x": float("nan")}, {}, RefusalReason.NOT_JSON, ErrorType.VALIDATION),
        ({"x": "a" * 100}, {"max_argument_bytes": 50}, RefusalReason.TOO_LARGE, ErrorType.VALIDATION),
        ({}, {"tool": "lookpu", "offered": offered()}, RefusalReason.NOT_OFFERED, ErrorType.NOT_FOUND),
        (
            {"code": "A1"},
            {"tool": "lookup", "offered": offered()},
            RefusalReason.SCHEMA,
            ErrorType.VALIDATION,
        ),
    ]
    for arguments, keys, reason, error_type in cases:
        refusal = check_call(arguments, server="s", **keys)
        assert refusal is not None, (arguments, keys)
        assert (refusal.reason, refusal.error_type) == (reason, error_type), refusal
        result = refusal.result()
        assert result.error_type is error_type and result.refusal is reason
    assert check_call({"code": "abc"}, tool="lookup", offered=offered()) is None


def test_schema_false_leaves_the_schema_and_shape_false_the_shape() -> None:
    assert check_call({"code": "A1"}, tool="lookup", offered=offered(), schema=False) is None
    assert check_call({"x": "a" * 100}, max_argument_bytes=50, shape=False) is None


HEADERS = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "quiet": {"type": "boolean"},
    },
    "required": ["region"],
}


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        ({"region": "eu", "verbose": None}, False),  # optional header parameter: null is "not given"
        ({"region": "eu", "verbose": True}, False),
        ({"region": "eu", "verbose": "yes"}, True),
        ({"region": None}, True),  # required: null is no string
        ({"region": "eu", "quiet": None}, True),  # not a header parameter: null is no boolean
    ],
)
def test_null_counts_as_not_given_only_for_an_optional_header_parameter(
    arguments: dict[str, Any], refused: bool
) -> None:
    """SEP-2243: a client omits the ``Mcp-Param-*`` header of a parameter passed as null."""
    tools = {"headers": ToolSpec(name="s/headers", input_schema=HEADERS)}
    refusal = check_call(arguments, tool="headers", offered=tools, server="s")
    assert (refusal is not None) == refused, refusal
    if refusal is not None:
        assert refusal.reason is RefusalReason.SCHEMA


def test_a_tool_that_is_not_offered_is_a_classified_result_with_a_hint() -> None:
    refusal = check_call({}, tool="lookpu", offered=offered(), server="s")
    assert refusal is not None
    result = refusal.result()
    assert result.refusal is RefusalReason.NOT_OFFERED
    assert (
        result.error
        == "not found: tool 'lookpu' is not offered by server 's'; did you mean 'lookup'? (its tools: lookup)"
    )
    # A failure that was not refused carries no reason, whatever its text says.
    assert ToolResult.fail(ErrorType.NOT_FOUND, "tool 'x' is not offered by server 's'").refusal is None


def test_the_runner_checks_with_the_same_function() -> None:
    registry = ToolRegistry()
    registry.register(ToolSpec(name="s/lookup", input_schema=SCHEMA, handler=lambda inputs: {"ok": True}))
    runner = ToolRunner(registry)
    assert runner.execute("s/lookup", {"code": "A1"}).refusal is RefusalReason.SCHEMA
    assert runner.execute("s/lookup", {"code": "abc"}).success


# ---- the adapter path ----------------------------------------------------------------


@pytest.fixture
def adapter() -> Iterator[tuple[BlockingAdapter, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    tool = RemoteTool(name="lookup", input_schema=SCHEMA)
    mock = MockTransport([tool], {"lookup": lambda args: seen.append(args) or {"ok": True}})
    blocking = BlockingAdapter(ServerConfig(name="s", command="unused", max_argument_bytes=1024), mock)
    blocking.connect(WAIT)
    try:
        yield blocking, seen
    finally:
        blocking.disconnect()


def test_the_adapter_refuses_arguments_over_the_servers_max_argument_bytes(
    adapter: tuple[BlockingAdapter, list[dict[str, Any]]],
) -> None:
    blocking, seen = adapter
    result = blocking.invoke("lookup", {"code": "a" * 2000}, timeout=WAIT)
    assert result.error_type == "validation" and result.refusal is RefusalReason.TOO_LARGE, result
    assert "maxArgumentBytes" in (result.error or "")
    assert seen == []
    assert blocking.invoke("lookup", {"code": "abc"}, timeout=WAIT).success
    assert seen == [{"code": "abc"}]


def test_the_adapter_classifies_a_tool_it_does_not_offer(
    adapter: tuple[BlockingAdapter, list[dict[str, Any]]],
) -> None:
    blocking, seen = adapter
    result = blocking.invoke("nope", {}, timeout=WAIT)
    assert result.error_type == "not_found" and result.refusal is RefusalReason.NOT_OFFERED, result
    schema = blocking.invoke("lookup", {"code": "A1"}, timeout=WAIT)
    assert schema.refusal is RefusalReason.SCHEMA, schema
    assert seen == []


def test_the_adapter_checks_only_the_schema_when_the_rest_was_checked(
    adapter: tuple[BlockingAdapter, list[dict[str, Any]]],
) -> None:
    blocking, seen = adapter
    spec = offered()["lookup"]
    future = blocking.adapter.invoke_future("lookup", {"code": "A1"}, WAIT, schema_of=spec)
    assert future.result(WAIT).refusal is RefusalReason.SCHEMA
    future = blocking.adapter.invoke_future("lookup", {"code": "abc"}, WAIT, schema_of=spec)
    assert future.result(WAIT).success
    assert seen == [{"code": "abc"}]


# ---- the facade, the messages, the built-in actor, a server actor ----------------------


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    mock = MockTransport(
        [RemoteTool(name="lookup", input_schema=SCHEMA)], {"lookup": lambda args: {"ok": True}}
    )
    config = {
        "mcpServers": {"s": {"command": "unused", "maxArgumentBytes": 1024}},
        "builtin": {"enabled": True, "workspace": str(tmp_path)},
    }
    with Runtime.start(config, transports={"s": mock}) as rt:
        yield rt


@pytest.mark.parametrize("name", ["s/lookup", "builtin/read_file"])
def test_every_path_refuses_a_bool_timeout_the_same_way(runtime: Runtime, name: str) -> None:
    facade = runtime.call_tool(name, {}, timeout=True)
    namespace, _, tool = name.partition("/")
    message = CallTool(namespace, tool, {}, timeout=True)
    runtime.registry.tell(message)
    sent = message.reply.result(timeout=WAIT)
    for result in (facade, sent):
        assert result.error_type == "validation" and result.refusal is RefusalReason.BAD_TIMEOUT, result
    assert facade.error == sent.error


def test_a_server_actor_and_the_built_in_actor_classify_what_they_do_not_offer(runtime: Runtime) -> None:
    assert runtime.call_tool("s/lookup", {"code": "abc"}, timeout=WAIT).success
    for name in ("s/nope", "builtin/nope"):
        result = runtime.call_tool(name, {}, timeout=WAIT)
        assert result.error_type == "not_found" and result.refusal is RefusalReason.NOT_OFFERED, result
    oversized = runtime.call_tool("s/lookup", {"code": "a" * 2000}, timeout=WAIT)
    assert oversized.refusal is RefusalReason.TOO_LARGE, oversized
    schema = runtime.call_tool("s/lookup", {"code": "A1"}, timeout=WAIT)
    assert schema.refusal is RefusalReason.SCHEMA, schema
