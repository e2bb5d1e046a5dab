"""A 2026-07-28 request (a tool call, a prompt) driven round by round for its `CallInputs`
(SEP-2322).

The SDK's ``Client.call_tool`` answers an ``InputRequiredResult`` itself, one callback per
request. A call with `CallInputs` is driven here instead: each round's requests go to the
inputs together (a gateway hands them to its client as one ``InputRequiredResult``), and the
answers come back in the retry with the server's ``requestState``, untouched. The capabilities
the server is told of for the call are the inputs' (within the session's own).

Run on the event-loop thread; `CallInputs.ask` runs on a worker (host code never on the loop),
and nothing waits for its answers but the call's own task.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from actors.mcp.inputs import CallInputs, InputRefused
from actors.mcp.loop import offload
from actors.mcp.sdk_transport.convert import to_json
from actors.mcp.sdk_transport.failures import validation_text

__all__ = ["MAX_ROUNDS", "call_tool_in_rounds", "get_prompt_in_rounds", "in_rounds", "narrowed"]

_R = TypeVar("_R")

logger = logging.getLogger(__name__)

MAX_ROUNDS = 10
"""Rounds before a call gives up (the SDK's and the other SDKs' default)."""

_STATE_ONLY_FIRST, _STATE_ONLY_CAP = 0.05, 0.25
"""Backoff of a round that carries only ``requestState`` (the SDK driver's)."""

_ANSWERED = ("sampling", "elicitation", "roots")
"""The capabilities a round's requests need: the ones a call's inputs may narrow."""

_RESPONSES: pydantic.TypeAdapter[types.InputResponses] = pydantic.TypeAdapter(types.InputResponses)

_DECLARED: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "mcp_actors_declared_capabilities", default=None
)


def narrowed(own: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """The session's own client capabilities with sampling, elicitation, roots and the
    extensions as ``declared`` says (never one the session does not have): a server must not
    make a task of a call whose caller cannot follow one."""
    kept = {key: value for key, value in own.items() if key not in (*_ANSWERED, "extensions")}
    for key in _ANSWERED:
        if key in own and key in declared:
            kept[key] = declared[key]
    mine, theirs = own.get("extensions"), declared.get("extensions")
    if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
        shared = {name: mine[name] for name in mine if name in theirs}
        if shared:
            kept["extensions"] = shared
    return kept


class _DeclaringStamp:
    """The session's request stamp, then the call's capabilities in place of the session's.

    The SDK stamps every 2026-07-28 request with the client's capabilities and has no per-request
    override; this wraps the session's stamp (a private hook, so a missing one is left alone).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, data: dict[str, Any], opts: Any) -> None:
        self.inner(data, opts)
        declared = _DECLARED.get()
        if declared is None:
            return
        meta = data.get("params", {}).get("_meta")
        own = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
        if isinstance(meta, dict) and isinstance(own, Mapping):
            meta[types.CLIENT_CAPABILITIES_META_KEY] = narrowed(own, declared)


@contextmanager
def _declaring(client: Client, declared: Mapping[str, Any] | None) -> Iterator[None]:
    if declared is None:
        yield
        return
    session = client.session
    stamp = getattr(session, "_stamp", None)
    if stamp is not None and not isinstance(stamp, _DeclaringStamp):
        session._stamp = _DeclaringStamp(stamp)
    token = _DECLARED.set(declared)
    try:
        yield
    finally:
        _DECLARED.reset(token)


async def call_tool_in_rounds(
    client: Client,
    name: str,
    arguments: dict[str, Any],
    inputs: CallInputs,
    progress: ProgressFnT | None,
    answer_timeout: float,
) -> types.CallToolResult:
    """``tools/call`` with each ``InputRequiredResult`` answered by ``inputs`` and retried."""
    session = client.session

    async def send(
        responses: types.InputResponses | None, state: str | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )

    # ``session.call_tool`` has checked the last round's result against the tool's output schema.
    return await in_rounds(client, send, inputs, answer_timeout)


async def get_prompt_in_rounds(
    client: Client, name: str, arguments: dict[str, str], inputs: CallInputs, answer_timeout: float
) -> types.GetPromptResult:
    """``prompts/get`` with each ``InputRequiredResult`` answered by ``inputs`` and retried."""

    async def send(
        responses: types.InputResponses | None, state: str | None
    ) -> types.GetPromptResult | types.InputRequiredResult:
        return await client.session.get_prompt(
            name, arguments, input_responses=responses, request_state=state, allow_input_required=True
        )

    return await in_rounds(client, send, inputs, answer_timeout)


async def in_rounds(
    client: Client,
    send: Callable[[types.InputResponses | None, str | None], Awaitable[_R | types.InputRequiredResult]],
    inputs: CallInputs,
    answer_timeout: float,
) -> _R:
    """``send(None, None)``, then again with the answers and the state of each round it asks."""
    with _declaring(client, inputs.capabilities):
        result = await send(None, None)
        rounds, delay = 0, _STATE_ONLY_FIRST
        while isinstance(result, types.InputRequiredResult):
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise MCPError(
                    types.INTERNAL_ERROR, f"the server asked for input more than {MAX_ROUNDS} rounds"
                )
            responses: types.InputResponses | None = None
            if result.input_requests:
                delay = _STATE_ONLY_FIRST
                responses = await _answers(inputs, result.input_requests, answer_timeout)
            else:
                await anyio.sleep(delay)
                delay = min(delay * 2, _STATE_ONLY_CAP)
            result = await send(responses, result.request_state)
    return result


async def _answers(
    inputs: CallInputs, requests: Mapping[str, types.InputRequest], limit: float
) -> types.InputResponses:
    asked = {key: to_json(request) for key, request in requests.items()}
    answers = await offload(inputs.ask, asked)
    try:
        with anyio.fail_after(limit):
            given = await asyncio.wrap_future(answers)
    except InputRefused as exc:
        raise MCPError(exc.code, exc.message, exc.data) from None
    except TimeoutError:
        answers.cancel()
        raise MCPError(types.INTERNAL_ERROR, f"no answer to the server's input within {limit:g} s") from None
    except BaseException:
        answers.cancel()
        raise
    try:
        return _RESPONSES.validate_python(dict(given))
    except pydantic.ValidationError as exc:
        raise MCPError(types.INTERNAL_ERROR, f"the answers are malformed: {validation_text(exc)}") from None
