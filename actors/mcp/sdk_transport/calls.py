"""The MCP client's requests, each one SDK call run by `SessionRequests` and converted to plain data.

The composition (`SDKTransport`) picks the published client and the timeout; these functions
say which SDK call each `ClientTransport` method is, how its pages follow, and what it returns
(`convert`). A list comes back as a `Listing`, its pages' caching hints combined beside the
items (`convert.freshness`: none on handshake-era sessions). Run on the event-loop thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import ConfigDict

from actors.mcp.freshness import CACHE_HINT, ListFreshness, Listing, combined
from actors.mcp.inputs import CallInputs
from actors.mcp.listen import ListenStreams
from actors.mcp.revisions import Input, revision_of
from actors.mcp.sdk_transport import convert
from actors.mcp.sdk_transport.requests import SessionRequests
from actors.mcp.sdk_transport.rounds import call_tool_in_rounds, get_prompt_in_rounds
from actors.mcp.transport import (
    CallOutcome,
    JSONObject,
    Progress,
    RemoteTool,
    Request,
)

__all__ = [
    "call_tool",
    "follow",
    "get_prompt",
    "list_tools",
    "read_resource",
    "send",
]


async def list_tools(requests: SessionRequests, client: Client, timeout: float | None) -> Listing[RemoteTool]:
    hints: list[ListFreshness | None] = []

    async def page(cursor: str | None) -> tuple[Sequence[types.Tool], str | None]:
        answer = await client.list_tools(cursor=cursor)
        hints.append(convert.freshness(answer, client.protocol_version))
        return answer.tools, answer.next_cursor

    tools = await requests.paged("tools/list", page, timeout)
    return Listing(tuple(convert.remote_tool(tool) for tool in tools), combined(hints))


async def call_tool(
    requests: SessionRequests,
    client: Client,
    name: str,
    arguments: dict[str, Any],
    timeout: float | None,
    progress: Progress | None = None,
    rounds: tuple[CallInputs, float] | None = None,
) -> CallOutcome:
    """``rounds``: the call's inputs and how long they may take to answer a round (2026-07-28
    sessions only): its ``InputRequiredResult`` rounds go to them (`rounds.call_tool_in_rounds`)."""
    # The SDK's callback protocol names the parameters; ours is the same positional shape.
    callback = cast(ProgressFnT, progress) if progress is not None else None

    async def send() -> types.CallToolResult:
        if rounds is not None:
            return await call_tool_in_rounds(client, name, arguments, rounds[0], callback, rounds[1])
        if callback is None:
            return await client.call_tool(name, arguments)
        return await client.call_tool(name, arguments, progress_callback=callback)

    return convert.outcome(await requests.run(f"tools/call {name!r}", send, timeout))


async def read_resource(
    requests: SessionRequests, client: Client, uri: str, timeout: float | None
) -> JSONObject:
    """The read's result as JSON; on a 2026-07-28 session answered in one round, with its hint
    under `CACHE_HINT` (a read that needed the client's input is retried with its answers, and a
    retry's result must not be cached: it carries none)."""
    hint: ListFreshness | None = None

    async def send() -> types.ReadResourceResult:
        nonlocal hint
        if revision_of(client.protocol_version).input is not Input.ROUNDS:
            return await client.read_resource(uri)
        first = await client.session.read_resource(uri, allow_input_required=True)
        if isinstance(first, types.InputRequiredResult):
            # Sent again through the SDK's driver, which answers the rounds: the first round
            # holds nothing the server must see twice (the state travels in the request).
            return await client.read_resource(uri)
        hint = convert.freshness(first, client.protocol_version)
        return first

    answer = convert.to_json(await requests.run(f"resources/read {uri}", send, timeout))
    if hint is not None:
        answer[CACHE_HINT] = hint.to_json()
    return answer


async def get_prompt(
    requests: SessionRequests,
    client: Client,
    name: str,
    arguments: dict[str, str],
    timeout: float | None,
    rounds: tuple[CallInputs, float] | None = None,
) -> JSONObject:
    async def send() -> types.GetPromptResult:
        if rounds is not None:
            return await get_prompt_in_rounds(client, name, arguments, rounds[0], rounds[1])
        return await client.get_prompt(name, arguments)

    return convert.to_json(await requests.run(f"prompts/get {name!r}", send, timeout))


async def follow(
    requests: SessionRequests,
    client: Client,
    streams: ListenStreams | None,
    uri: str,
    *,
    on: bool,
    timeout: float | None,
) -> None:
    """Follow ``uri`` (``on``) or stop: on the listen ``streams`` of a 2026-07-28 session, else
    with ``resources/subscribe`` or ``resources/unsubscribe``."""
    if streams is not None:
        change = streams.follow if on else streams.unfollow
        await requests.run(f"subscriptions/listen {uri}", lambda: change(uri), timeout)
        return
    # Sent as requests: the SDK's methods for them warn on every call (deprecated in 2026-07-28).
    request: types.SubscribeRequest | types.UnsubscribeRequest
    if on:
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
    else:
        request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))

    async def send() -> None:
        await client.session.send_request(request, types.EmptyResult)

    await requests.run(f"{request.method} {uri}", send, timeout)


class _Request(types.Request[dict[str, Any] | None, str]):
    """Any request, for the SDK's session to send as it sends its own (`send`)."""


class _Result(types.Result):
    """Any result: its fields kept as they came."""

    model_config = ConfigDict(extra="allow")


async def send(
    requests: SessionRequests, client: Client, request: Request, timeout: float | None
) -> JSONObject:
    """``request`` through the session (which stamps it for its era), its result as JSON."""
    sdk_request = _Request(method=request.method, params=dict(request.params))

    async def answer() -> _Result:
        return await client.session.send_request(sdk_request, _Result)

    result = await requests.run(request.method, answer, timeout)
    return dict(result.model_extra or {})
