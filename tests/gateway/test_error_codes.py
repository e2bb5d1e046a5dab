"""What the gateway's handlers raise reaches the client as a JSON-RPC error it can read: never
the SDK's catch-all ``{"code": 0, "message": ""}`` (a bare `TimeoutError`'s text is empty)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from actors.gateway.server import Handlers, build_server


async def _times_out(ctx: Any, params: Any) -> Any:
    raise TimeoutError


async def _breaks(ctx: Any, params: Any) -> Any:
    raise RuntimeError("the registry is gone")


async def _refuses(ctx: Any, params: Any) -> Any:
    raise MCPError(types.INVALID_PARAMS, "Unknown prompt: nope")


def _server() -> Any:
    names = [name for name in Handlers.__dataclass_fields__]
    handlers = dict.fromkeys(names, _breaks)
    handlers.update(list_tools=_times_out, list_prompts=_refuses)
    return build_server(Handlers(**handlers))


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_handler_that_times_out_or_breaks_answers_an_internal_error(era: str) -> None:
    raised: list[pytest.ExceptionInfo[MCPError]] = []

    async def session() -> None:
        async with Client(_server(), mode=era) as client:
            for ask in (client.list_tools, client.list_resources, client.list_prompts):
                with pytest.raises(MCPError) as error:
                    await ask()
                raised.append(error)

    anyio.run(session)
    timed_out, broke, refused = raised
    assert timed_out.value.error.code == types.INTERNAL_ERROR
    assert "no answer" in timed_out.value.error.message
    assert broke.value.error.code == types.INTERNAL_ERROR and broke.value.error.message
    # What a handler means to answer is passed on as it is.
    assert (refused.value.error.code, refused.value.error.message) == (
        types.INVALID_PARAMS,
        "Unknown prompt: nope",
    )
