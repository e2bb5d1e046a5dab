"""Steps for mcp_tool_adapter.feature: the adapter over a `MockTransport`."""

from __future__ import annotations

import json
from typing import Any

from behave import given, then, when
from behave.runner import Context
from pydantic import ValidationError

from actors.mcp.config import ServerConfig, ToolFilter
from actors.mcp.inference import infer_capabilities
from actors.mcp.transport import RemoteTool
from actors.testing import BlockingAdapter, MockTransport
from actors.tools import ToolError, ToolRegistry, ToolResult

ISSUE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
    "required": ["title"],
    "additionalProperties": False,
}


def _config(name: str = "github", **keys: Any) -> ServerConfig:
    return ServerConfig(name=name, command="github-mcp-server", **keys)


def _adapter(context: Context, transport: MockTransport, *, connect: bool, **keys: Any) -> BlockingAdapter:
    context.transport = transport
    context.adapter = BlockingAdapter(_config(**keys), transport)
    context.add_cleanup(context.adapter.disconnect)
    # The connects the server should have seen so far: a connect of a connected adapter adds none.
    context.expected_connects = 0
    if connect:
        context.adapter.connect()
        context.expected_connects = 1
    return context.adapter


def _capture(context: Context, action: Any) -> None:
    context.adapter_error = None
    try:
        action()
    except (ToolError, ValidationError, ValueError) as exc:
        context.adapter_error = exc


# ---- configs and adapters --------------------------------------------------------------


@given('an MCP server config for "{name}" with stdio transport')
def step_stdio_config(context: Context, name: str) -> None:
    context.config_keys = {"name": name, "type": "stdio", "command": "npx", "args": ["-y", "server-github"]}


@given('an MCP server config for "{name}" with sse transport and url "{url}"')
def step_sse_config(context: Context, name: str, url: str) -> None:
    context.config_keys = {"name": name, "type": "sse", "url": url}


@given('an MCP server config for "{name}" with stdio transport but no command')
def step_stdio_no_command(context: Context, name: str) -> None:
    context.config_keys = {"name": name, "type": "stdio"}


@given('an MCP server config for "{name}" with sse transport but no url')
def step_sse_no_url(context: Context, name: str) -> None:
    context.config_keys = {"name": name, "type": "sse"}


@when("I create an MCP adapter from the config")
def step_create_adapter(context: Context) -> None:
    context.adapter = BlockingAdapter(ServerConfig.model_validate(context.config_keys))
    context.add_cleanup(context.adapter.disconnect)


@when("I create an MCP adapter from the config expecting validation error")
def step_create_adapter_invalid(context: Context) -> None:
    _capture(context, lambda: BlockingAdapter(ServerConfig.model_validate(context.config_keys)))
    assert context.adapter_error is not None, "the config was accepted"


# What the plain mock server declares at its handshake: tools and logging, not resources or
# prompts, so the adapter's view of them can only come from the handshake.
MOCK_CAPABILITIES = {"tools": {"listChanged": True}, "logging": {}}


@given("an MCP adapter with a mock transport")
def step_adapter_mock(context: Context) -> None:
    _adapter(context, MockTransport(["list_repos"], capabilities=MOCK_CAPABILITIES), connect=False)


@given("a connected MCP adapter with a mock transport")
def step_connected_adapter(context: Context) -> None:
    _adapter(context, MockTransport(["list_repos"]), connect=True)


@given("a connected MCP adapter with {count:d} mock tools")
def step_connected_with_tools(context: Context, count: int) -> None:
    # Each with its own argument, so a schema can be told from the default ``{"type": "object"}``.
    tools = [
        RemoteTool(
            name=f"tool_{i}",
            description=f"mock tool {i}",
            input_schema={"type": "object", "properties": {f"arg_{i}": {"type": "string"}}},
        )
        for i in range(count)
    ]
    _adapter(context, MockTransport(tools), connect=True)


@given('a connected MCP adapter with a callable mock tool "{tool}"')
def step_connected_callable(context: Context, tool: str) -> None:
    transport = MockTransport([tool], {tool: lambda args: {"id": 101, "echo": args}})
    _adapter(context, transport, connect=True)


@given('a connected MCP adapter with a schema-validated mock tool "{tool}"')
def step_connected_validated(context: Context, tool: str) -> None:
    remote = RemoteTool(name=tool, input_schema=ISSUE_SCHEMA)
    transport = MockTransport([remote], {tool: lambda args: {"id": 7}})
    _adapter(context, transport, connect=True)


@given('a connected MCP adapter with a failing mock tool "{tool}"')
def step_connected_failing(context: Context, tool: str) -> None:
    from actors.mcp.transport import CallOutcome

    failure = CallOutcome(content=[{"type": "text", "text": "upstream said no"}], is_error=True)
    _adapter(context, MockTransport([tool], {tool: lambda args: failure}), connect=True)


@given('a connected MCP adapter with a transport-error mock tool "{tool}"')
def step_connected_transport_error(context: Context, tool: str) -> None:
    def explode(_: dict[str, Any]) -> Any:
        raise RuntimeError("transport exploded")

    _adapter(context, MockTransport([tool], {tool: explode}), connect=True)


@given("a connected MCP adapter with a transport that errors on close")
def step_connected_close_error(context: Context) -> None:
    _adapter(context, MockTransport(["list_repos"], fail_on_close=True), connect=True)


@given("an MCP adapter with a transport that fails to connect")
def step_adapter_connect_fails(context: Context) -> None:
    _adapter(context, MockTransport(connect_failures=1), connect=False)


@given("a connected MCP adapter with a transport that fails to reconnect")
def step_adapter_reconnect_fails(context: Context) -> None:
    _adapter(context, MockTransport(["list_repos"]), connect=True)
    context.transport.connect_failures = 1


@given("an MCP adapter with a transport that hangs on connect")
def step_adapter_hangs(context: Context) -> None:
    _adapter(context, MockTransport(hang_on_connect=True), connect=False)


@given("a connected MCP adapter with a tool that times out")
def step_adapter_slow(context: Context) -> None:
    _adapter(context, MockTransport(["slow_tool"], call_delay=30.0), connect=True, call_timeout=0.2)


@given('a tool filter including only "{name}"')
def step_filter_include(context: Context, name: str) -> None:
    context.tool_filter = ToolFilter(include=(name,))


@given('a tool filter excluding "{name}"')
def step_filter_exclude(context: Context, name: str) -> None:
    context.tool_filter = ToolFilter(exclude=(name,))


@given("an empty MCP tool registry")
def step_empty_registry(context: Context) -> None:
    context.mcp_registry = ToolRegistry()


# ---- actions ---------------------------------------------------------------------------


@when("I connect the adapter")
def step_connect(context: Context) -> None:
    was_connected = context.adapter.connected
    context.adapter.connect()
    if not was_connected:
        context.expected_connects += 1


@when("I connect the adapter expecting error")
def step_connect_error(context: Context) -> None:
    _capture(context, context.adapter.connect)
    assert context.adapter_error is not None, "connect succeeded"


@when("I connect the adapter with timeout {timeout:g} expecting error")
def step_connect_timeout(context: Context, timeout: float) -> None:
    _capture(context, lambda: context.adapter.connect(timeout=timeout))
    assert context.adapter_error is not None, "connect succeeded"


@when("I disconnect the adapter")
def step_disconnect(context: Context) -> None:
    context.adapter.disconnect()


@when("I reconnect the adapter")
def step_reconnect(context: Context) -> None:
    context.adapter.reconnect()
    context.expected_connects += 1


@when("I reconnect the adapter expecting error")
def step_reconnect_error(context: Context) -> None:
    _capture(context, context.adapter.reconnect)
    assert context.adapter_error is not None, "reconnect succeeded"


@when("I discover tools from the adapter")
def step_discover(context: Context) -> None:
    context.adapter.discover()


@when("I discover tools from the adapter with filter")
def step_discover_filtered(context: Context) -> None:
    context.adapter.discover(context.tool_filter)


@when("I discover tools expecting an error")
def step_discover_error(context: Context) -> None:
    _capture(context, context.adapter.discover)
    assert context.adapter_error is not None, "discover succeeded"


@when('I invoke "{tool}" with arguments {arguments}')
def step_invoke(context: Context, tool: str, arguments: str) -> None:
    context.invoked = (tool, json.loads(arguments))
    context.invocation = context.adapter.invoke(tool, json.loads(arguments))


@when('I invoke MCP tool "{tool}" while disconnected')
def step_invoke_disconnected(context: Context, tool: str) -> None:
    assert not context.adapter.connected
    result: ToolResult = context.adapter.invoke(tool, {})
    assert not result.success
    context.adapter_error = result.error


@when('I register MCP tools in the registry with namespace "{namespace}"')
def step_register(context: Context, namespace: str) -> None:
    context.adapter.register(context.mcp_registry, namespace)


@when('the MCP server adds a new tool "{tool}"')
def step_server_adds_tool(context: Context, tool: str) -> None:
    context.transport.add_tool(tool)


@when('I re-register MCP tools in the registry with namespace "{namespace}"')
def step_reregister(context: Context, namespace: str) -> None:
    context.adapter.reregister(context.mcp_registry, namespace)


@when('I infer capabilities for tool name "{name}"')
def step_infer(context: Context, name: str) -> None:
    context.inferred = infer_capabilities(name)


# ---- outcomes --------------------------------------------------------------------------


@then('the adapter server name should be "{name}"')
def step_server_name(context: Context, name: str) -> None:
    assert context.adapter.server_name == name


@then('the adapter transport should be "{kind}"')
def step_transport_name(context: Context, kind: str) -> None:
    assert context.adapter.transport_name == kind


@then("the adapter should be connected")
def step_connected(context: Context) -> None:
    assert context.adapter.connected
    assert context.transport.connected, "the adapter says connected, the server does not"
    assert context.transport.connects == context.expected_connects, (
        f"{context.transport.connects} connects, expected {context.expected_connects}"
    )


@then("the adapter should not be connected")
def step_not_connected(context: Context) -> None:
    assert not context.adapter.connected


@then("the adapter server capabilities should be set")
def step_capabilities(context: Context) -> None:
    # What the adapter made of the handshake: the server's capabilities as declared (not a
    # default that happens to hold "tools"), and the features it reads from them.
    adapter, server = context.adapter, context.transport
    assert adapter.capabilities == server.capabilities, adapter.capabilities
    assert adapter.adapter.capability_metadata == {
        "tools": True,
        "resources": False,
        "prompts": False,
        "logging": True,
        "completions": False,
    }, adapter.adapter.capability_metadata
    assert adapter.server_info is not None and adapter.server_info.name == server.server_name


@then("the adapter should have {count:d} discovered tools")
def step_discovered_count(context: Context, count: int) -> None:
    assert len(context.adapter.discovered_tools) == count, context.adapter.discovered_tools


@then("discovered tool {index:d} should have a name")
def step_discovered_name(context: Context, index: int) -> None:
    # The name the server gave that tool, in the server's order: not just any non-empty name.
    discovered = context.adapter.discovered_tools[index]
    assert discovered.name == context.transport.tools[index].name, context.adapter.discovered_tools
    assert discovered.description == context.transport.tools[index].description, discovered


@then("discovered tool {index:d} should have an input schema")
def step_discovered_schema(context: Context, index: int) -> None:
    # The schema the server gave, with its own properties: not a stand-in ``{"type": "object"}``.
    schema = context.adapter.discovered_tools[index].input_schema
    assert schema == context.transport.tools[index].input_schema, schema
    assert schema["properties"], schema


@then('the adapter error should mention "{text}"')
def step_adapter_error(context: Context, text: str) -> None:
    assert context.adapter_error is not None
    assert text in str(context.adapter_error), str(context.adapter_error)


@then("the invocation should succeed")
def step_invocation_ok(context: Context) -> None:
    assert context.invocation.success, context.invocation


@then("the invocation should fail")
def step_invocation_failed(context: Context) -> None:
    assert not context.invocation.success, context.invocation


@then('the invocation result should contain key "{key}"')
def step_invocation_key(context: Context, key: str) -> None:
    structured = context.invocation.output["structuredContent"]
    assert key in structured, context.invocation.output
    # The server got the arguments invoked (its answer echoes what it received), once.
    tool, arguments = context.invoked
    assert context.transport.calls == [(tool, arguments)], context.transport.calls
    assert structured.get("echo") == arguments, structured


@then('the invocation error should mention "{text}"')
def step_invocation_error(context: Context, text: str) -> None:
    assert text in (context.invocation.error or ""), context.invocation.error


@then("the registry should have {count:d} tools")
def step_registry_count(context: Context, count: int) -> None:
    assert len(context.mcp_registry) == count, [t.name for t in context.mcp_registry.list()]


@then('registry tool {index:d} name should start with "{prefix}"')
def step_registry_prefix(context: Context, index: int, prefix: str) -> None:
    assert context.mcp_registry.list()[index].name.startswith(prefix)


def _run_registry_tool(context: Context, name: str) -> ToolResult:
    from actors.tools import ToolRunner

    return ToolRunner(context.mcp_registry).execute(name, {})


@then('calling registry tool "{name}" should succeed')
def step_registry_call_ok(context: Context, name: str) -> None:
    result = _run_registry_tool(context, name)
    assert result.success, result


@then('calling registry tool "{name}" should return an error')
def step_registry_call_error(context: Context, name: str) -> None:
    result = _run_registry_tool(context, name)
    assert not result.success
    assert result.error_type == "server_error", result


@then("the inferred capabilities should have read_only {value}")
def step_inferred_read_only(context: Context, value: str) -> None:
    assert context.inferred.read_only is (value == "true")


@then("the inferred capabilities should have writes {value}")
def step_inferred_writes(context: Context, value: str) -> None:
    assert context.inferred.writes is (value == "true")


def _registered(context: Context, name: str) -> Any:
    spec = context.mcp_registry.get(name)
    assert spec is not None, name
    return spec


@then('registry tool "{name}" should have read_only capability')
def step_registered_read_only(context: Context, name: str) -> None:
    assert _registered(context, name).capabilities.read_only


@then('registry tool "{name}" should have writes capability')
def step_registered_writes(context: Context, name: str) -> None:
    assert _registered(context, name).capabilities.writes


@then('registry tool "{name}" should have source "{source}"')
def step_registered_source(context: Context, name: str, source: str) -> None:
    assert _registered(context, name).source == source


@then('registry tool "{name}" should have checkpointable false')
def step_registered_not_checkpointable(context: Context, name: str) -> None:
    assert _registered(context, name).capabilities.checkpointable is False


@then("the adapter discovered_tools property should have {count:d} items")
def step_discovered_property(context: Context, count: int) -> None:
    assert len(context.adapter.discovered_tools) == count
