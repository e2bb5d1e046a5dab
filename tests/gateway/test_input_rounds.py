"""What a backend asks while it serves a call reaches the gateway's client in the client's era:
as an ``InputRequiredResult`` and a sealed ``requestState`` for a 2026-07-28 client (SEP-2322),
as server requests for a handshake-era one, whichever era the backend speaks, over stdio and
Streamable HTTP. Real processes: ``mcp-actors serve --http`` before tests/servers/everything_server.py,
clients of the SDK (``mcp.Client``) and of fastmcp. One gateway per backend serves every test of
the module: each test opens clients of its own, as separate agents would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.gateway.conftest import GatewayProcess

BACKENDS = ["2026-07-28", "legacy", "http-2026-07-28", "http-legacy"]

MULTIPLE = "test_input_required_result_multiple_inputs"
"""Asks for a name (elicitation), a greeting (sampling) and the roots; says all three back."""
ELICITS = "test_input_required_result_elicitation"
"""Asks for a name; answers ``Hello, <name>!``."""


async def _elicit(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Alice"})


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


@pytest.mark.parametrize("client_era", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_a_backends_questions_reach_the_sdk_client_in_its_era(
    everything: GatewayProcess, backend: str, client_era: str
) -> None:
    async def scenario(url: str) -> None:
        async with Client(
            url,
            mode=client_era,
            elicitation_callback=_elicit,
            sampling_callback=_sample,
            list_roots_callback=_roots,
        ) as client:
            assert _text(await client.call_tool(MULTIPLE, {})) == "Hello Alice, roots: 1"
            if client_era != "2026-07-28":
                return
            # The rounds as the client sees them: every question of a 2026-07-28 backend's round
            # at once; a handshake-era backend's one at a time.
            first = await client.session.call_tool(MULTIPLE, {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            assert first.request_state and first.input_requests
            methods = {request.method for request in first.input_requests.values()}
            if backend.endswith("2026-07-28"):
                assert methods == {"elicitation/create", "sampling/createMessage", "roots/list"}
            else:
                assert len(methods) == 1
            with pytest.raises(MCPError) as tampered:
                await client.session.call_tool(
                    MULTIPLE, {}, request_state=first.request_state + "-TAMPERED", allow_input_required=True
                )
            assert tampered.value.error.code == types.INVALID_PARAMS

    asyncio.run(scenario(everything.url))


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_a_2026_client_without_sampling_is_refused_with_32021(
    everything: GatewayProcess, backend: str
) -> None:
    async def scenario(url: str) -> None:
        async with Client(url, mode="2026-07-28", elicitation_callback=_elicit) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("test_missing_capability", {})
            assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            data = refused.value.error.data
            assert isinstance(data, dict) and "sampling" in data["requiredCapabilities"]
            # The refusal held nothing: the next call of the same client is answered.
            assert _text(await client.call_tool("test_input_required_result_elicitation", {}))

    asyncio.run(scenario(everything.url))


@pytest.mark.parametrize("backend", ["2026-07-28", "legacy"], scope="module")
def test_a_backends_questions_reach_the_fastmcp_client(everything: GatewayProcess, backend: str) -> None:
    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> dict[str, str]:
        return {"name": "Alice"}

    async def sample(messages: Any, params: Any, context: Any) -> str:
        return "Hello"

    async def scenario(url: str) -> None:
        async with FastMCPClient(
            url, elicitation_handler=elicit, sampling_handler=sample, roots=["file:///work"]
        ) as client:
            result = await client.call_tool(MULTIPLE, {})
            assert _text(result) == "Hello Alice, roots: 1"  # type: ignore[arg-type]

    asyncio.run(scenario(everything.url))


@pytest.mark.parametrize("backend", BACKENDS, scope="module")
def test_each_handshake_era_clients_question_reaches_that_client(
    everything: GatewayProcess, backend: str
) -> None:
    """Two clients' calls in flight on one backend at once: each question goes to the client
    whose call it is for, not to whichever call is oldest (the first client's question is still
    open when the second client's call asks its own)."""
    first_asked, second_asked = asyncio.Event(), asyncio.Event()
    asked = {"first": 0, "second": 0}

    def answering(who: str) -> Any:
        async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
            asked[who] += 1
            if who == "first":
                first_asked.set()
                await asyncio.wait_for(second_asked.wait(), 60)
            else:
                second_asked.set()
            return types.ElicitResult(action="accept", content={"name": who})

        return elicit

    async def scenario(url: str) -> None:
        async with (
            Client(url, mode="legacy", elicitation_callback=answering("first")) as first,
            Client(url, mode="legacy", elicitation_callback=answering("second")) as second,
        ):
            one = asyncio.create_task(first.call_tool(ELICITS, {}))
            await asyncio.wait_for(first_asked.wait(), 60)
            assert _text(await second.call_tool(ELICITS, {})) == "Hello, second!"
            assert _text(await one) == "Hello, first!"
        assert asked == {"first": 1, "second": 1}

    asyncio.run(scenario(everything.url))
