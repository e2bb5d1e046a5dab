"""The policy through a real gateway (``mcp-actors serve --http`` with ``access.auth`` and
``access.policy``), two users of different groups with tokens from our own issuer, and real
`mcp.Client`s: each sees only what the policy gives them in every list, and every way around it
fails the same way as asking for what does not exist (by external name, a resource template's
URI, a completion, a subscription, a listen stream); a denial of what they may see names its rule.

One gateway serves the module: the tests only read (and touch resources).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated

from actors.gateway.access.gate import POLICY_REFUSED
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import GatewayProcess, fixture, write_config
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)

POLICY = """
// dev: the whole of fx, but never echo a secret.
@id("dev-fx")
permit (principal in Group::"dev", action in Action::"use", resource in Server::"fx");

@id("no-secrets")
forbid (principal, action == Action::"call", resource == Tool::"fx/echo")
when { context.arguments has text && context.arguments.text like "*secret*" };

// ops: the whole of ops; of fx, small sums, the greeting (read and followed), the blob (read).
@id("ops-own")
permit (principal in Group::"ops", action in Action::"use", resource in Server::"ops");

@id("ops-small-sums")
permit (principal in Group::"ops", action == Action::"call", resource == Tool::"fx/add")
when { context.arguments.a < 100 };

@id("ops-greeting")
permit (
  principal in Group::"ops",
  action in [Action::"read", Action::"subscribe"],
  resource == Resource::"fixture://greeting"
);

@id("ops-blob")
permit (principal in Group::"ops", action == Action::"read", resource == Resource::"fixture://blob");
"""

GREETING, BLOB, APPLE = "fixture://greeting", "fixture://blob", "fixture://items/apple"
TEMPLATE = "fixture://items/{item}"


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("policy-gateway")
    yield from policy_gateway(folder, issuer, POLICY)


def policy_gateway(folder: Path, issuer: OIDCIssuer, policy: str, **top: Any) -> Iterator[GatewayProcess]:
    """A gateway with ``fx`` (the fixture server with resources, prompts, completion) and ``ops``
    (the plain fixture server), tokens from ``issuer``, and ``policy`` in ``policy.cedar``."""
    (folder / "policy.cedar").write_text(policy)
    port = free_port()
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"), "policy": "policy.cedar"}
    servers = {"fx": fixture("--surface"), "ops": fixture()}
    with GatewayProcess(write_config(folder, servers, access=access, **top), folder, port=port) as gateway:
        yield gateway


def token(issuer: OIDCIssuer, gateway: GatewayProcess, user: str, group: str) -> str:
    return issuer.mint(sub=user, aud=gateway.url, scope=SCOPE, groups=[group])


def alice(issuer: OIDCIssuer, gateway: GatewayProcess) -> str:
    return token(issuer, gateway, "alice", "dev")


def bob(issuer: OIDCIssuer, gateway: GatewayProcess) -> str:
    return token(issuer, gateway, "bob", "ops")


async def refusal(request: Any) -> types.ErrorData:
    """The JSON-RPC error ``request`` (an awaitable) is answered with."""
    with pytest.raises(MCPError) as caught:
        await request
    return caught.value.error


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


# ---- lists --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_each_user_lists_only_what_the_policy_gives_them(
    issuer: OIDCIssuer, gateway: GatewayProcess, mode: str
) -> None:
    async def lists(token: str) -> dict[str, set[str]]:
        async with client(gateway, token, mode) as session:
            return {
                "tools": {t.name for t in (await session.list_tools()).tools},
                "resources": {str(r.uri) for r in (await session.list_resources()).resources},
                "templates": {
                    t.uri_template for t in (await session.list_resource_templates()).resource_templates
                },
                "prompts": {p.name for p in (await session.list_prompts()).prompts},
            }

    async def scenario() -> None:
        dev, ops = await lists(alice(issuer, gateway)), await lists(bob(issuer, gateway))
        assert {"fx__echo", "fx__add", "fx__touch"} <= dev["tools"]
        assert all(name.startswith("fx__") for name in dev["tools"]), dev["tools"]
        assert dev["resources"] == {GREETING, BLOB} and dev["templates"] == {TEMPLATE}
        assert dev["prompts"] == {"fx__greet", "fx__plain"}
        # bob: his own server, the one fx tool an argument condition gives him, two resources.
        assert {"ops__echo", "ops__add", "fx__add"} <= ops["tools"]
        assert {n for n in ops["tools"] if n.startswith("fx__")} == {"fx__add"}, ops["tools"]
        assert ops["resources"] == {GREETING, BLOB} and ops["templates"] == set()
        assert ops["prompts"] == set()

    anyio.run(scenario)


# ---- what a user may not see answers as what does not exist -------------------------------------


def test_a_hidden_tool_is_an_unknown_tool(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(gateway, bob(issuer, gateway)) as session:
            hidden = await refusal(session.call_tool("fx__echo", {"text": "hi"}))
            absent = await refusal(session.call_tool("fx__no_such_tool", {"text": "hi"}))
            nowhere = await refusal(session.call_tool("zz__echo", {"text": "hi"}))
        assert (hidden.code, hidden.message) == (types.INVALID_PARAMS, "Unknown tool: fx__echo")
        assert (absent.code, absent.message) == (types.INVALID_PARAMS, "Unknown tool: fx__no_such_tool")
        assert (nowhere.code, nowhere.message) == (types.INVALID_PARAMS, "Unknown tool: zz__echo")
        async with client(gateway, alice(issuer, gateway)) as session:
            # A tool fx does not offer: the backend's hint would list fx's tools; not under a policy.
            absent = await refusal(session.call_tool("fx__no_such_tool", {}))
            hidden = await refusal(session.call_tool("ops__echo", {"text": "hi"}))
        assert absent.message == "Unknown tool: fx__no_such_tool"
        assert hidden.message == "Unknown tool: ops__echo"

    anyio.run(scenario)


def test_a_hidden_template_prompt_or_completion_is_not_found(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    async def scenario() -> None:
        async with client(gateway, bob(issuer, gateway)) as session:
            read = await refusal(session.read_resource(APPLE))
            nothing = await refusal(session.read_resource("fixture://nothing"))
            prompt = await refusal(session.get_prompt("fx__greet", {"name": "Ann"}))
            no_prompt = await refusal(session.get_prompt("fx__no_such_prompt", {}))
            of_prompt = await refusal(
                session.complete(
                    types.PromptReference(type="ref/prompt", name="fx__greet"), {"name": "name", "value": "A"}
                )
            )
            of_template = await refusal(
                session.complete(
                    types.ResourceTemplateReference(type="ref/resource", uri=TEMPLATE),
                    {"name": "item", "value": "a"},
                )
            )
        assert (
            read.message == f"Resource not found: {APPLE}"
            and nothing.message == "Resource not found: fixture://nothing"
        )
        assert (
            prompt.message == "Unknown prompt: fx__greet"
            and no_prompt.message == "Unknown prompt: fx__no_such_prompt"
        )
        assert of_prompt.message == "Unknown prompt: fx__greet"
        assert of_template.message == f"Resource not found: {TEMPLATE}"
        assert {e.code for e in (read, nothing, prompt, no_prompt, of_prompt, of_template)} == {
            types.INVALID_PARAMS
        }
        async with client(gateway, alice(issuer, gateway)) as session:
            contents = (await session.read_resource(APPLE)).contents
            assert "apple" in contents[0].text  # type: ignore[union-attr]
            assert (await session.get_prompt("fx__greet", {"name": "Ann"})).messages
            ref = types.ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
            assert (await session.complete(ref, {"name": "item", "value": "a"})).completion.values

    anyio.run(scenario)


# ---- what a user may see, refused, names the rule -----------------------------------------------


def test_an_argument_condition_refuses_by_its_rule(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(gateway, bob(issuer, gateway)) as session:
            assert text_of(await session.call_tool("fx__add", {"a": 2, "b": 3})) == "5"
            refused = await session.call_tool("fx__add", {"a": 500, "b": 3})
        assert refused.is_error
        assert (
            text_of(refused)
            == "refused by policy ops-small-sums: this request does not meet their conditions"
        )

    anyio.run(scenario)


def test_a_forbid_on_arguments_refuses_by_its_rule(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(gateway, alice(issuer, gateway)) as session:
            assert text_of(await session.call_tool("fx__echo", {"text": "hello"})) == "hello"
            refused = await session.call_tool("fx__echo", {"text": "my secret key"})
        assert refused.is_error and text_of(refused) == "refused by policy no-secrets"

    anyio.run(scenario)


def test_a_subscription_needs_its_own_permission(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    async def scenario() -> None:
        async with client(gateway, bob(issuer, gateway)) as session:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.subscribe_resource(GREETING)
                readable = await refusal(session.subscribe_resource(BLOB))
                hidden = await refusal(session.subscribe_resource(APPLE))
        assert (readable.code, readable.message) == (
            POLICY_REFUSED,
            "refused by policy: no rule permits subscribe",
        )
        assert (hidden.code, hidden.message) == (types.INVALID_PARAMS, f"Resource not found: {APPLE}")

    anyio.run(scenario)


def test_a_listen_stream_hears_only_what_its_user_may_follow(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    """bob names a resource he may follow, one he may only read, and one he may not see; alice
    follows the last two, so their updates are on the bus, and bob hears only the first."""
    heard: dict[str, list[str]] = {"alice": [], "bob": []}

    async def collect(stream: Any, who: str, done: anyio.Event, wanted: set[str]) -> None:
        async for event in stream:
            if isinstance(event, ResourceUpdated):
                heard[who].append(event.uri)
                if wanted <= set(heard[who]):
                    done.set()

    async def touch_until(session: Any, uri: str, done: anyio.Event) -> None:
        with anyio.fail_after(60):
            while not done.is_set():
                await session.call_tool("fx__touch", {"uri": uri})
                with anyio.move_on_after(0.5):
                    await done.wait()

    async def scenario() -> None:
        a_done, b_done = anyio.Event(), anyio.Event()
        async with (
            client(gateway, alice(issuer, gateway), "2026-07-28") as dev,
            client(gateway, bob(issuer, gateway), "2026-07-28") as ops,
            dev.listen(resource_subscriptions=[BLOB, APPLE]) as dev_stream,
            ops.listen(resource_subscriptions=[GREETING, BLOB, APPLE]) as ops_stream,
            anyio.create_task_group() as tasks,
        ):
            # Acknowledged as asked, as a URI nobody serves would be: nothing said of the others.
            assert list(ops_stream.honored.resource_subscriptions or ()) == [GREETING, BLOB, APPLE]
            tasks.start_soon(collect, dev_stream, "alice", a_done, {BLOB, APPLE})
            tasks.start_soon(collect, ops_stream, "bob", b_done, {GREETING})
            for uri in (BLOB, APPLE):
                await dev.call_tool("fx__touch", {"uri": uri})
            await touch_until(dev, APPLE, a_done)
            await touch_until(dev, GREETING, b_done)
            tasks.cancel_scope.cancel()
        assert {BLOB, APPLE} <= set(heard["alice"])
        assert set(heard["bob"]) == {GREETING}, heard

    anyio.run(scenario)
