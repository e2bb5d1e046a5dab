"""Through the gateway, a handshake-era client keeps what it gets from a dual-era backend directly.

tests/servers/era_specific_server.py speaks both eras, and its tools ask for input on the
session's back-channel (as the SDK's reference server's do): in the handshake era only. The
gateway discovers (``"protocol": "auto"``) that it speaks 2026-07-28 and speaks that to it; the
requests of a handshake-era client that can be asked for input then go to a copy of the server
pinned to the handshake era (`actors.gateway.era_copies`), so that its sampling, elicitation,
roots and log messages reach the client as they do when it goes direct. Real processes: the
gateway, the backend over stdio and over Streamable HTTP, the SDK's client. Two users' copies
are kept apart: tests/gateway/access/test_rounds_per_user.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tests.conformance.requirements import node22, required, run_set, suite_version, verdict
from tests.gateway.conftest import GatewayProcess, everything_gateway
from tests.servers.http_server import HTTPServer

MODULE = "tests.servers.era_specific_server"
BACKENDS = ["auto", "http-auto"]
HANDSHAKE_SET = "2025-11-25"
SET_TIMEOUT = 300.0
BACK_CHANNEL_SCENARIOS = (
    "tools-call-with-logging",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
)
"""The scenarios of the 2025-11-25 set that need the back-channel: what the gateway lost."""

pytestmark = pytest.mark.timeout(SET_TIMEOUT + 120)


@pytest.fixture(scope="module")
def era_specific(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp(f"gateway-era-{backend}")
    with everything_gateway(folder, backend, module=MODULE, logLevel="debug") as gateway:
        yield gateway


async def _elicit(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"response": "yes"})


async def _sample(ctx: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="Hello"), model="scripted"
    )


async def _roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _handshake_client_gets_everything(url: str) -> None:
    logs: list[str] = []

    async def _log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async with Client(
        url,
        mode="legacy",
        elicitation_callback=_elicit,
        sampling_callback=_sample,
        list_roots_callback=_roots,
        logging_callback=_log,
    ) as client:
        assert _text(await client.call_tool("test_sampling", {"prompt": "hi"})) == "LLM response: Hello"
        answer = _text(await client.call_tool("test_elicitation", {"message": "ok?"}))
        assert answer == 'User response: action=accept, content={"response":"yes"}'
        assert _text(await client.call_tool("test_list_roots", {})) == "roots: file:///work"
        await client.call_tool("test_tool_with_logging", {})
        assert logs[-3:] == ["Tool execution started", "Tool processing data", "Tool execution completed"]


def test_a_handshake_era_client_gets_everything_directly() -> None:
    """The premise: direct, the backend gives a handshake-era client all of it."""
    with HTTPServer(module=MODULE) as server:
        asyncio.run(_handshake_client_gets_everything(server.url))


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_a_handshake_era_client_gets_everything_through_the_gateway(
    era_specific: GatewayProcess, backend: str
) -> None:
    asyncio.run(_handshake_client_gets_everything(era_specific.url))


async def _modern_client_meets_what_it_meets_directly(url: str) -> None:
    """A 2026-07-28 client is served by the server in its own era: the back-channel tools
    tell it they have none (as they do when it goes direct), the others answer."""
    async with Client(url, mode="2026-07-28", sampling_callback=_sample) as client:
        answer = _text(await client.call_tool("test_sampling", {"prompt": "hi"}))
        assert answer.startswith("Sampling not supported or error:"), answer
        assert "back-channel" in answer, answer
        assert _text(await client.call_tool("test_simple_text", {})).startswith("This is a simple text")


def test_a_2026_07_28_client_meets_the_same_directly() -> None:
    with HTTPServer(module=MODULE) as server:
        asyncio.run(_modern_client_meets_what_it_meets_directly(server.url))


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_a_2026_07_28_client_meets_the_same_through_the_gateway(
    era_specific: GatewayProcess, backend: str
) -> None:
    asyncio.run(_modern_client_meets_what_it_meets_directly(era_specific.url))


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_each_era_lists_the_server_once_under_its_own_name(
    era_specific: GatewayProcess, backend: str
) -> None:
    async def names(mode: str) -> list[str]:
        async with Client(era_specific.url, mode=mode, sampling_callback=_sample) as client:
            if mode == "legacy":  # the copy exists once a handshake-era request was served
                await client.call_tool("test_simple_text", {})
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    legacy, modern = asyncio.run(names("legacy")), asyncio.run(names("2026-07-28"))
    assert legacy == modern, set(legacy) ^ set(modern)
    assert "test_list_roots" in legacy
    assert len(legacy) == len(set(legacy)), legacy
    assert not [name for name in legacy if "2025-11-25" in name], legacy


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_the_handshake_set_passes_through_the_gateway_as_it_does_directly(
    era_specific: GatewayProcess, tmp_path: Path, backend: str
) -> None:
    """Every required scenario of the 2025-11-25 set, the five that need the back-channel among
    them, passes against the gateway; tests/conformance/test_reference_server.py runs the set
    against this backend directly."""
    node = node22()
    scenarios, output = run_set(
        node, HANDSHAKE_SET, "server", ["--url", era_specific.url], tmp_path / "results", SET_TIMEOUT
    )
    expected = required(node, HANDSHAKE_SET, "server")
    assert set(BACK_CHANNEL_SCENARIOS) <= set(expected), expected
    failing, _, context = verdict(expected, scenarios, {}, output + "\n" + era_specific.log()[-1500:])
    where = f"conformance {suite_version()}, {HANDSHAKE_SET}, backend {backend}"
    assert not failing, f"{where}: failing {failing}{context}"


def test_only_a_client_that_can_be_asked_gets_a_handshake_era_session(tmp_path: Path) -> None:
    """A handshake-era client that declared no sampling, elicitation or roots has nothing to be
    asked: it shares the server's own session (one process). One that did gets a copy (two)."""
    with everything_gateway(tmp_path, "auto", module=MODULE) as gateway:

        async def plain() -> None:
            async with Client(gateway.url, mode="legacy") as client:
                assert _text(await client.call_tool("test_simple_text", {})).startswith("This is")

        async def asked() -> None:
            async with Client(gateway.url, mode="legacy", sampling_callback=_sample) as client:
                sampled = _text(await client.call_tool("test_sampling", {"prompt": "hi"}))
                assert sampled == "LLM response: Hello", sampled

        asyncio.run(plain())
        assert len(gateway.servers()) == 1, gateway.servers()
        asyncio.run(asked())
        assert len(gateway.servers()) == 2, gateway.servers()
