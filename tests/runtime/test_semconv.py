"""`actors.runtime.semconv`: span names and attributes as the OpenTelemetry semantic conventions
for MCP give them, pinned per request type, and content cut at its limit without serialising
more (no threads, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.mcp.config import ServerConfig
from actors.runtime.messages import CallTool, Complete, GetPrompt, ReadResource, ServerRequest
from actors.runtime.semconv import CAPTURE_CONTENT, bounded_json, request_attributes, span_name
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, UpdateTask

ROWS: list[tuple[ServerRequest, str, dict[str, Any]]] = [
    (
        CallTool("ns", "echo", {"text": "x"}),
        "tools/call echo",
        {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "echo",
        },
    ),
    (
        StartTask("ns", "slow", {}),
        "tools/call slow",
        {"mcp.method.name": "tools/call", "gen_ai.tool.name": "slow"},
    ),
    (ReadResource("ns", "file:///a"), "resources/read", {"mcp.resource.uri": "file:///a"}),
    (GetPrompt("ns", "greet", {}), "prompts/get greet", {"gen_ai.prompt.name": "greet"}),
    (
        Complete("ns", {"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "a"}),
        "completion/complete",
        {},
    ),
    (GetTask("ns", "t1"), "tasks/get", {"mcp.method.name": "tasks/get"}),
    (UpdateTask("ns", "t1", {}), "tasks/update", {"mcp.method.name": "tasks/update"}),
    (CancelTask("ns", "t1"), "tasks/cancel", {"mcp.method.name": "tasks/cancel"}),
]


@pytest.mark.parametrize(("call", "name", "expected"), ROWS)
def test_each_request_has_its_conventional_name_and_attributes(
    call: ServerRequest, name: str, expected: dict[str, Any]
) -> None:
    assert span_name(call) == name
    attributes = request_attributes(call, "ns")
    assert attributes.items() >= expected.items()
    assert attributes["mcp.method.name"] == name.split(" ", maxsplit=1)[0]
    assert attributes["mcp_actors.namespace"] == "ns"


def test_the_network_attributes_follow_the_transport() -> None:
    call = CallTool("ns", "echo", {})
    stdio = ServerConfig.model_validate({"name": "ns", "command": "x"})
    http = ServerConfig.model_validate({"name": "ns", "transport": "http", "url": "https://mcp.example.com/mcp"})
    local = ServerConfig.model_validate({"name": "ns", "transport": "http", "url": "http://127.0.0.1:8765/mcp"})
    assert request_attributes(call, "ns", stdio)["network.transport"] == "pipe"
    assert (
        request_attributes(call, "ns", http).items()
        >= {
            "network.transport": "tcp",
            "server.address": "mcp.example.com",
            "server.port": 443,
        }.items()
    )
    assert request_attributes(call, "ns", local)["server.port"] == 8765
    assert request_attributes(call, "ns", stdio, "2025-11-25")["mcp.protocol.version"] == "2025-11-25"


def test_arguments_only_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    call = CallTool("ns", "echo", {"text": "secret"})
    monkeypatch.delenv(CAPTURE_CONTENT, raising=False)
    assert "gen_ai.tool.call.arguments" not in request_attributes(call, "ns")
    monkeypatch.setenv(CAPTURE_CONTENT, "True")
    assert json.loads(request_attributes(call, "ns")["gen_ai.tool.call.arguments"]) == {"text": "secret"}


@pytest.mark.parametrize(
    "value",
    [{}, [], None, 3.5, "text", {"a": [1, {"b": None}], "c": 'é\n"'}, [["x"] * 3, {"k": True}]],
)
def test_a_value_within_the_limit_is_its_json(value: Any) -> None:
    assert json.loads(bounded_json(value)) == value


def test_a_value_past_the_limit_is_cut_and_says_so() -> None:
    for value in ({"a": "x" * 10_000}, ["yyy"] * 10_000, {str(n): n for n in range(5000)}):
        text = bounded_json(value, 100)
        assert text.endswith("…(cut)") and len(text) == 100 + len("…(cut)")
    exact = {"a": [1, 2, 3]}
    whole = json.dumps(exact, separators=(",", ":"))
    assert bounded_json(exact, len(whole)) == whole
    assert bounded_json(exact, len(whole) - 1).endswith("…(cut)")


def test_a_huge_string_is_never_serialised_whole() -> None:
    """The cost is the limit's, not the value's: a 50 MB string is sliced before it is encoded."""

    class Counted(str):
        sliced: list[int] = []

        def __getitem__(self, key: Any) -> str:
            Counted.sliced.append(key.stop if isinstance(key, slice) else 1)
            return str.__getitem__(self, key)

    huge = Counted("z" * 50_000_000)
    bounded_json({"text": huge}, 64)
    assert Counted.sliced and max(Counted.sliced) <= 64
