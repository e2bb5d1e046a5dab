"""Steps for mcp_lifecycle.feature: `MCPClient` and `MCPRegistry` over the actors."""

from __future__ import annotations

import json
import time
from typing import Any

from behave import given, then, when
from behave.runner import Context

from actors.mcp.config import ServerConfig
from actors.testing import MockTransport
from tests.harness.handles import MCPClient, MCPRegistry

# How long "health check disabled" watches for probes: many times the intervals the other
# scenarios probe at (0.15 s), so probes at any short interval would be seen.
NO_PROBE_WINDOW = 1.0


class CountingMock(MockTransport):
    """A `MockTransport` that counts the health probes it answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.probes = 0

    async def probe(self) -> None:
        self.probes += 1
        await super().probe()


def _client_config(context: Context, name: str, **keys: Any) -> None:
    context.client_config = ServerConfig(name=name, command="github-mcp-server", **keys)


@given('an MCP client config for "{name}" with lazy start enabled')
def step_config_lazy(context: Context, name: str) -> None:
    _client_config(context, name, lazy_start=True)


@given('an MCP client config for "{name}" with lazy start disabled')
def step_config_eager(context: Context, name: str) -> None:
    _client_config(context, name, lazy_start=False)


@given('an MCP client config for "{name}" with idle timeout {seconds:g} seconds')
def step_config_idle(context: Context, name: str, seconds: float) -> None:
    _client_config(context, name, idle_timeout=seconds)


@given('an MCP client config for "{name}" with health check interval {seconds:g} seconds')
def step_config_health(context: Context, name: str, seconds: float) -> None:
    _client_config(context, name, health_check_interval=seconds)


@given('a mock MCP transport with tool "{tool}"')
def step_mock(context: Context, tool: str) -> None:
    context.mock = CountingMock([tool], {tool: lambda args: {"items": ["a", "b"]}})


@given('a mock MCP transport with tool "{tool}" that crashes after {count:d} call')
def step_mock_crashing(context: Context, tool: str, count: int) -> None:
    context.mock = CountingMock([tool], crash_after=count)


@given("a mock MCP transport with full capabilities")
def step_mock_full(context: Context) -> None:
    context.mock = CountingMock.full_capabilities(["list_repos"])


@when("I create an MCP client")
def step_create_client(context: Context) -> None:
    context.client = MCPClient(context.client_config, context.mock)
    context.add_cleanup(context.client.close)


@when('I call MCP tool "{tool}" with arguments {arguments}')
def step_call(context: Context, tool: str, arguments: str) -> None:
    context.result = context.client.call_tool(tool, json.loads(arguments), timeout=5)
    assert context.result.success, context.result


@when('I call MCP tool "{tool}" expecting a runtime error')
def step_call_error(context: Context, tool: str) -> None:
    context.result = context.client.call_tool(tool, {}, timeout=5)
    assert not context.result.success, context.result
    context.client_error = context.result.error


@when("I explicitly start the MCP client")
def step_start(context: Context) -> None:
    context.client.start(timeout=5)


@when("I wait {seconds:g} seconds")
def step_wait(context: Context, seconds: float) -> None:
    time.sleep(seconds)


@when("I shutdown the MCP client")
def step_shutdown(context: Context) -> None:
    context.client.shutdown()


@then('the MCP client state should be "{state}"')
def step_state(context: Context, state: str) -> None:
    assert context.client.state == state, context.client.status()


@then("the MCP client should be connected")
def step_connected(context: Context) -> None:
    assert context.client.connected, context.client.status()
    # Each scenario that checks this connects once: a second start (or an idle stop and a
    # lazy start again) would be a second connect.
    assert context.mock.connects == 1, f"{context.mock.connects} connects: {context.client.status()}"


@then("the MCP client should not be connected")
def step_not_connected(context: Context) -> None:
    assert not context.client.connected, context.client.status()


@then('the MCP client error should mention "{text}"')
def step_client_error(context: Context, text: str) -> None:
    assert text in context.client_error, context.client_error


@then("the MCP client restart count should be greater than {count:d}")
def step_restarts(context: Context, count: int) -> None:
    assert context.client.restart_count > count, context.client.status()


@then("the MCP client health check failures should be {count:d}")
def step_health_failures(context: Context, count: int) -> None:
    assert context.client.health_check_failures == count, context.client.status()
    if context.client_config.health_check_interval == 0:
        # Disabled means no probe at all: watch for a while, then count what the server saw.
        time.sleep(NO_PROBE_WINDOW)
        assert context.mock.probes == 0, f"{context.mock.probes} health probes ran"
        assert context.client.health_check_failures == 0, context.client.status()


@then("the MCP adapter capability metadata should have {feature} true")
def step_capability(context: Context, feature: str) -> None:
    assert context.client.capability_metadata.get(feature) is True, context.client.capability_metadata


# ---- the registry ----------------------------------------------------------------------


def _registry(context: Context) -> MCPRegistry:
    if not hasattr(context, "mcp_servers"):
        context.mcp_servers = MCPRegistry()
        context.add_cleanup(context.mcp_servers.close)
    registry: MCPRegistry = context.mcp_servers
    return registry


@given("an MCP registry")
def step_registry(context: Context) -> None:
    _registry(context)


@given("an MCP registry with {count:d} running servers")
def step_registry_running(context: Context, count: int) -> None:
    registry = _registry(context)
    for i in range(count):
        namespace = f"server{i}"
        registry.register(namespace, ServerConfig(name=namespace, command="srv"), MockTransport(["ping"]))
        registry.start(namespace)
        assert registry.is_connected(namespace)


@when('I register the MCP client in namespace "{namespace}"')
def step_register_client(context: Context, namespace: str) -> None:
    _registry(context).register(namespace, context.client_config, context.mock)


@when('I register another MCP client config for "{name}" in namespace "{namespace}"')
def step_register_another(context: Context, name: str, namespace: str) -> None:
    config = ServerConfig(name=name, command="jira-mcp-server")
    _registry(context).register(namespace, config, MockTransport(["search_issues"]))


@when('I call tool "{tool}" on MCP namespace "{namespace}" with arguments {arguments}')
def step_registry_call(context: Context, tool: str, namespace: str, arguments: str) -> None:
    result = _registry(context).call_tool(namespace, tool, json.loads(arguments), timeout=5)
    assert result.success, result


@when("I shutdown all MCP servers")
def step_shutdown_all(context: Context) -> None:
    _registry(context).shutdown_all()


@then("the MCP registry should have {count:d} namespaces")
def step_namespace_count(context: Context, count: int) -> None:
    assert len(_registry(context).namespaces) == count, _registry(context).namespaces


@then('MCP namespace "{namespace}" should be connected')
def step_namespace_connected(context: Context, namespace: str) -> None:
    assert _registry(context).is_connected(namespace)


@then('MCP namespace "{namespace}" should not be connected')
def step_namespace_not_connected(context: Context, namespace: str) -> None:
    assert not _registry(context).is_connected(namespace)


@then("all MCP servers should be stopped")
def step_all_stopped(context: Context) -> None:
    statuses = _registry(context).runtime.status()
    assert statuses
    assert all(s.state == "stopped" and not s.connected for s in statuses), statuses
