"""Arguments no schema fuzzer makes: values that are not JSON, lone surrogates, extreme nesting,
arguments that are not an object at all. Each gets a classified answer in time, and the server
keeps serving."""

from __future__ import annotations

import math
from typing import Any

import pytest

from actors import Runtime
from actors.runtime.messages import CallTool
from tests.badinput.conftest import QUIET, assert_classified, assert_serving, call
from tests.badinput.schema_strategies import nest
from tests.runtime.conftest import config, stdio_server


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


NON_JSON: dict[str, dict[str, Any]] = {
    "nan-in-number": {"seconds": math.nan},
    "inf-in-number": {"seconds": math.inf},
    "nan-in-extra": {"seconds": 0, "extra": math.nan},
    "set-in-extra": {"seconds": 0, "extra": {1, 2}},
    "bytes-in-extra": {"seconds": 0, "extra": b"raw"},
    "complex-in-extra": {"seconds": 0, "extra": 1j},
    "object-in-extra": {"seconds": 0, "extra": Opaque()},
    "int-key": {"seconds": 0, 1: "one"},
}


@pytest.mark.parametrize("case", sorted(NON_JSON))
def test_non_json_arguments_get_a_classified_answer(mcp_runtime: Runtime, case: str) -> None:
    for via in ("facade", "tell"):
        assert_classified(call(mcp_runtime, "fx/sleep", NON_JSON[case], via=via))
    assert_serving(mcp_runtime, "fx")


@pytest.mark.parametrize("case", sorted(NON_JSON))
def test_non_json_arguments_to_an_mcp_tool_are_refused_as_validation(mcp_runtime: Runtime, case: str) -> None:
    answer = call(mcp_runtime, "fx/sleep", NON_JSON[case])
    assert answer.result.error_type == "validation", answer.result


def test_a_lone_surrogate_is_refused_without_cutting_off_other_calls() -> None:
    with Runtime.start(config({"fx": stdio_server(**QUIET)})) as rt:
        rt.start_server("fx")
        slow = CallTool("fx", "sleep", {"seconds": 1.0}, timeout=10)
        rt.registry.tell(slow)
        bad = call(rt, "fx/echo", {"text": "bad \ud800 text"})
        assert_classified(bad)
        assert slow.reply.result(timeout=15).success, slow.reply.result()
        assert bad.result.error_type == "validation", bad.result
        assert_serving(rt, "fx")


@pytest.mark.parametrize(
    ("depth", "kind"), [(300, "list"), (300, "dict"), (50_000, "list"), (50_000, "dict")]
)
def test_deep_nesting_in_an_extra_property_is_classified(mcp_runtime: Runtime, depth: int, kind: str) -> None:
    answer = call(mcp_runtime, "fx/echo", {"text": "x", "deep": nest(depth, kind=kind)}, timeout=3)
    assert_classified(answer, timeout=3)
    assert_serving(mcp_runtime, "fx")


def test_nesting_the_server_cannot_parse_times_out_and_the_server_keeps_serving(mcp_runtime: Runtime) -> None:
    # 200 levels: the client still encodes it, the SDK server drops what it cannot parse.
    before = mcp_runtime.status("fx")[0]
    answer = call(mcp_runtime, "fx/echo", {"text": "x", "deep": nest(200)}, timeout=1)
    assert_classified(answer, timeout=1)
    assert answer.result.error_type == "timeout", answer.result
    # The same process, not a restarted one, answers the next call.
    assert_serving(mcp_runtime, "fx")
    after = mcp_runtime.status("fx")[0]
    assert after.pid == before.pid, (before, after)
    assert after.calls == before.calls + 2, (before, after)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("echo", {"text": nest(5000)}), (["echo"], {"text": "x"})],
    ids=["deep-nesting-in-a-checked-property", "unhashable-tool-name"],
)
def test_a_call_the_server_actor_cannot_check_is_still_answered(
    mcp_runtime: Runtime, tool: Any, arguments: dict[str, Any]
) -> None:
    message = CallTool("fx", tool, arguments, timeout=1)
    mcp_runtime.registry.tell(message)
    result = message.reply.result(timeout=3)  # TimeoutError: no answer at all
    assert result.error_type == "validation", result


@pytest.mark.parametrize("arguments", [None, [], ["text"], "text", 7, True], ids=repr)
def test_arguments_that_are_not_an_object_are_refused_through_the_message_api(
    mcp_runtime: Runtime, arguments: Any
) -> None:
    for via in ("tell", "ask"):
        answer = call(mcp_runtime, "fx/echo", arguments, via=via)
        assert_classified(answer)
        assert answer.result.error_type == "validation", answer.result


@pytest.mark.parametrize("arguments", [["text"], "text", 7], ids=repr)
def test_call_tool_with_arguments_that_are_not_an_object_returns_validation(
    mcp_runtime: Runtime, arguments: Any
) -> None:
    result = mcp_runtime.call_tool("fx/echo", arguments, timeout=5)
    assert result.error_type == "validation", result


def test_unknown_tool_and_namespace_names_are_not_found(mcp_runtime: Runtime) -> None:
    for name in ("fx/", "/echo", "fx", "", "fx/no_such_tool", "nope/echo", "fx/echo/extra", "fx/\ud800"):
        answer = call(mcp_runtime, name, {"text": "x"})
        assert_classified(answer)
        assert answer.result.error_type == "not_found", (name, answer.result)
    assert_serving(mcp_runtime, "fx")
