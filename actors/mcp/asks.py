"""Requests beyond tools as what `MCPToolAdapter` sends on a transport: one coroutine function
per request, run on the loop in the request's task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.mcp.inputs import CALL_INPUTS, CallInputs
from actors.mcp.transport import ClientTransport, JSONObject

__all__ = ["completion_request", "prompt_request"]


def prompt_request(
    name: str, arguments: dict[str, str], timeout: float, inputs: CallInputs | None
) -> Callable[[ClientTransport], Any]:
    async def get(t: ClientTransport) -> JSONObject:
        if inputs is not None:
            CALL_INPUTS.set(inputs)  # this task's own context: it ends with the request
        return await t.get_prompt(name, arguments, timeout)

    return get


def completion_request(
    ref: JSONObject, argument: dict[str, str], arguments_so_far: dict[str, str] | None, timeout: float
) -> Callable[[ClientTransport], Any]:
    async def complete(t: ClientTransport) -> JSONObject:
        answer = await t.complete(ref, argument, arguments_so_far, timeout)
        completion = answer.get("completion")
        return dict(completion) if isinstance(completion, dict) else {"values": []}

    return complete
