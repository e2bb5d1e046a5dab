"""The MCP client's requests, each one SDK call run by `Requests` and converted to plain data.

The composition (`SDKTransport`) picks the published client and the timeout; these functions
say which SDK call each `ClientTransport` method is, how its pages follow, and what it returns
(`convert`). Run on the event-loop thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT

from actors.mcp.inputs import CallInputs
from actors.mcp.listen import ListenStreams
from actors.mcp.sdk_transport import convert
from actors.mcp.sdk_transport.requests import Requests
from actors.mcp.sdk_transport.rounds import call_tool_in_rounds, get_prompt_in_rounds
from actors.mcp.transport import (
    CallOutcome,
    JSONObject,
    Progress,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    RemoteTool,
)

__all__ = [
    "call_tool",
    "complete",
    "follow",
    "get_prompt",
    "list_prompts",
    "list_resource_templates",
    "list_resources",
    "list_tools",
    "read_resource",
]


async def list_tools(requests: Requests, client: Client, timeout: float | None) -> list[RemoteTool]:
    async def page(cursor: str | None) -> tuple[Sequence[types.Tool], str | None]:
        answer = await client.list_tools(cursor=cursor)
        return answer.tools, answer.next_cursor

    return [convert.remote_tool(tool) for tool in await requests.paged("tools/list", page, timeout)]


async def call_tool(
    requests: Requests,
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


async def list_resources(requests: Requests, client: Client, timeout: float | None) -> list[RemoteResource]:
    async def page(cursor: str | None) -> tuple[Sequence[types.Resource], str | None]:
        answer = await client.list_resources(cursor=cursor)
        return answer.resources, answer.next_cursor

    resources = await requests.paged("resources/list", page, timeout)
    return [convert.remote_resource(resource) for resource in resources]


async def list_resource_templates(
    requests: Requests, client: Client, timeout: float | None
) -> list[RemoteResourceTemplate]:
    async def page(cursor: str | None) -> tuple[Sequence[types.ResourceTemplate], str | None]:
        answer = await client.list_resource_templates(cursor=cursor)
        return answer.resource_templates, answer.next_cursor

    templates = await requests.paged("resources/templates/list", page, timeout)
    return [convert.remote_template(template) for template in templates]


async def list_prompts(requests: Requests, client: Client, timeout: float | None) -> list[RemotePrompt]:
    async def page(cursor: str | None) -> tuple[Sequence[types.Prompt], str | None]:
        answer = await client.list_prompts(cursor=cursor)
        return answer.prompts, answer.next_cursor

    return [convert.remote_prompt(prompt) for prompt in await requests.paged("prompts/list", page, timeout)]


async def read_resource(requests: Requests, client: Client, uri: str, timeout: float | None) -> JSONObject:
    async def send() -> types.ReadResourceResult:
        return await client.read_resource(uri)

    return convert.to_json(await requests.run(f"resources/read {uri}", send, timeout))


async def get_prompt(
    requests: Requests,
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


async def complete(
    requests: Requests,
    client: Client,
    reference: types.PromptReference | types.ResourceTemplateReference,
    argument: dict[str, str],
    context: dict[str, str] | None,
    timeout: float | None,
) -> JSONObject:
    async def send() -> types.CompleteResult:
        return await client.complete(reference, argument, context)

    return convert.to_json(await requests.run("completion/complete", send, timeout))


async def follow(
    requests: Requests,
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
