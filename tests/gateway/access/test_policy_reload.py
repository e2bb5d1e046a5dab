"""The policy through the tool-search view (``search_tools``, the ``call_tool`` meta-tool), and
reloaded with the config: a reload racing calls lets none through after its policy refused one,
clients are told the lists changed, and a policy file that does not load keeps the one in force.
A real gateway, tokens from our own issuer, real clients."""

from __future__ import annotations

import json
import signal
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.conftest import wait_until
from tests.gateway.access.identity import client
from tests.gateway.access.test_policy_gateway import GREETING, POLICY, alice, bob, policy_gateway, text_of
from tests.gateway.conftest import WAIT, GatewayProcess
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)

# alice (dev) loses fx: only ops's tools are left to anyone, and only to ops.
REVOKED = """
@id("ops-own")
permit (principal in Group::"ops", action in Action::"use", resource in Server::"ops");
"""


@pytest.fixture(scope="module")
def searching(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from policy_gateway(tmp_path_factory.mktemp("policy-search"), issuer, POLICY, toolSearch=True)


def without_rule(policy: str, rule: str) -> str:
    """``policy`` without the rule ``@id(rule)`` (up to the next rule)."""
    before, _, rest = policy.partition(f'@id("{rule}")')
    return before + rest[rest.index("@id(") :]


def found(result: types.CallToolResult) -> list[str]:
    return [tool["name"] for tool in json.loads(text_of(result))["tools"]]


# ---- tool search --------------------------------------------------------------------------------


def test_search_finds_only_what_the_user_may_call(issuer: OIDCIssuer, searching: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(searching, bob(issuer, searching)) as session:
            assert {t.name for t in (await session.list_tools()).tools} == {"search_tools", "call_tool"}
            echoes = found(await session.call_tool("search_tools", {"query": "echo", "limit": 50}))
            sums = found(await session.call_tool("search_tools", {"query": "add", "limit": 50}))
            named = found(await session.call_tool("search_tools", {"query": "fx__echo"}))
        assert "ops__echo" in echoes and "fx__echo" not in echoes, echoes
        assert {"ops__add", "fx__add"} <= set(sums), sums
        assert "fx__echo" not in named
        async with client(searching, alice(issuer, searching)) as session:
            named = found(await session.call_tool("search_tools", {"query": "fx__echo"}))
        assert named[0] == "fx__echo"

    anyio.run(scenario)


def test_the_call_meta_tool_is_the_same_gate(issuer: OIDCIssuer, searching: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(searching, bob(issuer, searching)) as session:
            hidden = await session.call_tool("call_tool", {"name": "fx__echo", "arguments": {"text": "x"}})
            absent = await session.call_tool("call_tool", {"name": "fx__nothing", "arguments": {"text": "x"}})
            refused = await session.call_tool(
                "call_tool", {"name": "fx__add", "arguments": {"a": 500, "b": 1}}
            )
            allowed = await session.call_tool("call_tool", {"name": "fx__add", "arguments": {"a": 1, "b": 1}})
            direct = await session.call_tool("ops__echo", {"text": "by name"})
        assert hidden.is_error and absent.is_error
        assert text_of(hidden).replace("fx__echo", "NAME") == text_of(absent).replace("fx__nothing", "NAME")
        assert text_of(hidden).startswith("not found: Unknown tool: fx__echo"), text_of(hidden)
        assert (
            text_of(refused)
            == "refused by policy ops-small-sums: this request does not meet their conditions"
        )
        assert text_of(allowed) == "2" and text_of(direct) == "by name"

    anyio.run(scenario)


# ---- reloads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    started: float
    ended: float
    allowed: bool
    said: str


def test_a_reload_racing_calls_lets_none_through_after_a_refusal(issuer: OIDCIssuer, tmp_path: Path) -> None:
    """Four clients call a tool without pause while the policy that gives it is revoked: once a
    call was refused, no call that began after it is allowed; every refusal is 'unknown tool'
    (the tool is gone from the user's view); the clients are told the tool list changed."""
    gateway_runs = policy_gateway(tmp_path, issuer, POLICY)
    gateway = next(gateway_runs)
    try:
        calls: list[Call] = []
        changed = anyio.Event()
        refused_seen = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        async def caller(session: Any) -> None:
            while not refused_seen.is_set() or sum(1 for c in calls if not c.allowed) < 40:
                started = time.monotonic()
                try:
                    said = text_of(await session.call_tool("fx__echo", {"text": "ping"}))
                    allowed = True
                except MCPError as exc:
                    said, allowed = exc.error.message, False
                    refused_seen.set()
                calls.append(Call(started, time.monotonic(), allowed, said))

        async def scenario() -> None:
            token = alice(issuer, gateway)
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with (
                Client(
                    streamable_http_client(gateway.url, http_client=http),
                    message_handler=on_message,
                    mode="legacy",
                ) as watcher,
                client(gateway, token) as a,
                client(gateway, token) as b,
                client(gateway, token) as c,
                client(gateway, token) as d,
                anyio.create_task_group() as tasks,
            ):
                await watcher.list_tools()  # a session the gateway tells of list changes
                for session in (a, b, c, d):
                    tasks.start_soon(caller, session)
                with anyio.fail_after(WAIT):
                    while sum(1 for call in calls if call.allowed) < 20:
                        await anyio.sleep(0.01)
                (tmp_path / "policy.cedar").write_text(REVOKED)
                gateway.process.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
                with anyio.fail_after(WAIT):
                    await refused_seen.wait()
                    await changed.wait()
                tools = {t.name for t in (await watcher.list_tools(cache_mode="refresh")).tools}
                assert not tools, tools

        anyio.run(scenario)
        first_refusal = min(call.ended for call in calls if not call.allowed)
        late = [call for call in calls if call.allowed and call.started > first_refusal]
        assert not late, f"{len(late)} calls allowed after a refusal"
        assert {call.said for call in calls if not call.allowed} == {"Unknown tool: fx__echo"}
        assert sum(1 for call in calls if call.allowed) >= 20
    finally:
        next(gateway_runs, None)


def test_a_policy_file_that_does_not_load_keeps_the_one_in_force(issuer: OIDCIssuer, tmp_path: Path) -> None:
    gateway_runs = policy_gateway(tmp_path, issuer, POLICY)
    gateway = next(gateway_runs)
    try:
        policy = tmp_path / "policy.cedar"
        policy.write_text('permit (principal in Team::"dev", action, resource);')
        gateway.process.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
        assert wait_until(lambda: "unrecognized entity type `Team`" in gateway.log(), WAIT), gateway.log()
        assert str(policy) in gateway.log()

        async def scenario() -> tuple[str, str]:
            async with (
                client(gateway, alice(issuer, gateway)) as dev,
                client(gateway, bob(issuer, gateway)) as ops,
            ):
                return (
                    text_of(await dev.call_tool("fx__echo", {"text": "still"})),
                    (await ops.call_tool("fx__add", {"a": 500, "b": 1})).content[0].text,  # type: ignore[union-attr]
                )

        assert anyio.run(scenario) == (
            "still",
            "refused by policy ops-small-sums: this request does not meet their conditions",
        )
    finally:
        next(gateway_runs, None)


def test_a_reload_that_takes_a_resource_away_stops_its_updates(issuer: OIDCIssuer, tmp_path: Path) -> None:
    """bob follows the greeting twice (a handshake-era subscription, a listen stream), alice once;
    the reload takes it from bob: alice still hears its updates, bob no more on either."""
    gateway_runs = policy_gateway(tmp_path, issuer, POLICY)
    gateway = next(gateway_runs)
    try:
        heard: dict[str, list[str]] = {"alice": [], "bob-stream": [], "bob-subscribed": []}

        async def legacy_updates(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                heard["bob-subscribed"].append(str(message.params.uri))

        async def collect(stream: Any, who: str) -> None:
            async for event in stream:
                heard[who].append(getattr(event, "uri", ""))

        async def touch_until(session: Any, *whose: str) -> None:
            counts = {who: len(heard[who]) for who in whose}
            with anyio.fail_after(WAIT):
                while any(len(heard[who]) == counts[who] for who in whose):
                    await session.call_tool("fx__touch", {"uri": GREETING})
                    await anyio.sleep(0.2)

        async def scenario() -> None:
            token = bob(issuer, gateway)
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with (
                client(gateway, alice(issuer, gateway), "2026-07-28") as dev,
                client(gateway, token, "2026-07-28") as ops,
                Client(
                    streamable_http_client(gateway.url, http_client=http),
                    message_handler=legacy_updates,
                    mode="legacy",
                ) as ops_legacy,
                dev.listen(resource_subscriptions=[GREETING]) as dev_stream,
                ops.listen(resource_subscriptions=[GREETING]) as ops_stream,
                anyio.create_task_group() as tasks,
            ):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await ops_legacy.subscribe_resource(GREETING)
                tasks.start_soon(collect, dev_stream, "alice")
                tasks.start_soon(collect, ops_stream, "bob-stream")
                await touch_until(dev, "alice", "bob-stream", "bob-subscribed")
                (tmp_path / "policy.cedar").write_text(without_rule(POLICY, "ops-greeting"))
                gateway.process.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
                with anyio.fail_after(WAIT):
                    while True:  # the reload is done once bob may no longer read it
                        try:
                            await ops.read_resource(GREETING)
                        except MCPError:
                            break
                        await anyio.sleep(0.1)
                before = {who: len(events) for who, events in heard.items()}
                for _ in range(3):
                    await touch_until(dev, "alice")
                tasks.cancel_scope.cancel()
            assert {who: len(events) for who, events in heard.items() if who != "alice"} == {
                who: count for who, count in before.items() if who != "alice"
            }, heard

        anyio.run(scenario)
    finally:
        next(gateway_runs, None)
