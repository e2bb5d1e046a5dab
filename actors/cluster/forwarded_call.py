"""One forwarded request, as its client here sees it: the rounds of input the owner asks for,
and the log messages and progress the owner sends meanwhile.

The owner speaks 2026-07-28 to the forwarder: what its backend asks (sampling, elicitation,
roots) comes back as an ``InputRequiredResult``. The forwarder asks the request's `CallInputs`
for each round (the gateway's: a handshake-era client is asked with server requests, a
2026-07-28 client gets a round of its own) and retries with the answers and the owner's
``requestState``, until the owner answers. What the client here declared is declared to the
owner (`CallRelay.capabilities`), so the owner refuses what the client cannot answer as it
would refuse the client itself.

A log message names no request, and one connection carries many: each forwarded request is
tagged (`actors.mcp.meta_keys.FORWARDED_CALL` in its ``_meta``), the owner tags the log messages
it sends for it the same, and `CallTags` hands each to its request's relay.

Everything here runs on the loop that forwards (the gateway's).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, cast

import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import HEADER_MISMATCH, LOG_LEVEL_META_KEY

from actors.mcp.inputs import CallInputs, InputRefused
from actors.mcp.meta_keys import FORWARDED_CALL
from actors.tools import ErrorType, ToolResult

__all__ = [
    "MAX_ROUNDS",
    "CallRelay",
    "CallTags",
    "Send",
    "capability_names",
    "dumped",
    "in_rounds",
    "prompt_answer",
    "prompt_rounds",
    "tool_answer",
    "tool_rounds",
]

MAX_ROUNDS: Final = 16
"""Rounds of input one forwarded request may take (the SDK's own client stops at as many)."""

_LIST_PAGES: Final = 100
"""Pages of tools a re-list after a HEADER_MISMATCH reads at most."""

_RESPONSES: pydantic.TypeAdapter[types.InputResponses] = pydantic.TypeAdapter(types.InputResponses)
_CAPABILITIES: Final = ("sampling", "elicitation", "roots")


class CallRelay(Protocol):
    """What the gateway here knows of the client whose request is forwarded (`actors.gateway.relays`)."""

    @property
    def capabilities(self) -> Mapping[str, Any]:
        """The client capabilities the request declared (``sampling``, ``elicitation``, ``roots``)."""

    @property
    def log_level(self) -> types.LoggingLevel | None:
        """The lowest level of log message the client takes on this request (None: none)."""

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Send the client one of the owner's log messages (before the answer)."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Send the client the owner's progress (a request without a progress token: nothing)."""

    @property
    def reports_progress(self) -> bool:
        """Whether the client asked for progress on this request."""


def capability_names(relay: CallRelay | None) -> frozenset[str]:
    """Which of sampling, elicitation and roots the request declares (what a client to the
    owner must declare for it)."""
    if relay is None:
        return frozenset()
    return frozenset(name for name in _CAPABILITIES if name in relay.capabilities)


class CallTags:
    """The relays of the forwarded requests in flight, by tag. Owned by the forwarding loop."""

    def __init__(self) -> None:
        self._relays: dict[str, CallRelay] = {}

    def open(self, relay: CallRelay | None) -> tuple[str, types.RequestParamsMeta]:
        """A tag for a request, and the ``_meta`` that carries it (and the client's log level)."""
        tag = secrets.token_urlsafe(9)
        meta: dict[str, Any] = {FORWARDED_CALL: tag}
        if relay is not None:
            self._relays[tag] = relay
            if relay.log_level is not None:
                meta[LOG_LEVEL_META_KEY] = relay.log_level
        return tag, cast(types.RequestParamsMeta, meta)

    def close(self, tag: str) -> None:
        self._relays.pop(tag, None)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """The owner's log message, to the relay of the request it is tagged with (untagged or
        for a request that ended: dropped; every request the owner serves gets its own copy)."""
        tag = (params.meta or {}).get(FORWARDED_CALL)
        relay = self._relays.get(tag) if isinstance(tag, str) else None
        if relay is not None:
            meta = {k: v for k, v in (params.meta or {}).items() if k != FORWARDED_CALL} or None
            await relay.log(params.model_copy(update={"meta": meta}))


Send = Callable[
    [dict[str, Any] | None, str | None, types.RequestParamsMeta],
    Awaitable[types.Result],
]
"""``send(input_responses, request_state, meta)``: one round of the request to the owner."""


async def in_rounds(
    send: Send, meta: types.RequestParamsMeta, inputs: CallInputs | None
) -> types.Result | ToolResult:
    """The owner's answer to the request ``send`` makes, its rounds of input answered by
    ``inputs``; a `ToolResult` failure when a round cannot be answered."""
    responses: dict[str, Any] | None = None
    state: str | None = None
    for _ in range(MAX_ROUNDS):
        answer = await send(responses, state, meta)
        if not isinstance(answer, types.InputRequiredResult):
            return answer
        if inputs is None:
            nobody = "the server asked for input, and nobody here can answer"
            return ToolResult.fail(ErrorType.EXECUTION, nobody)
        requests = {
            key: request.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, request in (answer.input_requests or {}).items()
        }
        asked = inputs.ask(requests)
        try:
            answers = await asyncio.wrap_future(asked)
        except InputRefused as refused:
            return ToolResult.fail(ErrorType.EXECUTION, f"the input asked for was refused: {refused.message}")
        except asyncio.CancelledError:
            asked.cancel()
            raise
        responses = dict(_RESPONSES.validate_python(dict(answers)))
        state = answer.request_state
    return ToolResult.fail(ErrorType.EXECUTION, f"the server asked for input more than {MAX_ROUNDS} times")


def tool_rounds(
    client: Client, *, name: str, arguments: dict[str, Any] | None, progress: ProgressFnT | None
) -> Send:
    """One round of ``tools/call`` of ``name`` to the owner ``client`` speaks to; the owner's
    progress of the round reaches ``progress`` before the round's answer is returned."""

    async def send(responses: Any, state: str | None, meta: types.RequestParamsMeta) -> types.Result:
        ordered = _ProgressBeforeAnswer(progress) if progress is not None else None

        async def call() -> types.Result:
            return await client.session.call_tool(
                name,
                arguments,
                progress_callback=ordered,
                input_responses=responses,
                request_state=state,
                meta=meta,
                allow_input_required=True,
            )

        answer = await _listed_once(client, call)
        if ordered is not None:
            await ordered.relayed()
        return answer

    return send


PROGRESS_DRAIN: Final = 5.0
"""Seconds a forwarded answer waits for the owner's progress, received before it, to be relayed."""


class _ProgressBeforeAnswer:
    """The progress callback of one forwarded round. The SDK runs each progress callback as a
    task of its own, so the owner's answer could reach the client here before its last progress
    notifications do, and a client drops progress that comes after the answer. `relayed` waits
    for the callbacks already begun (a task the SDK spawned before the answer arrived has begun
    by the time the answer's waiter runs: the loop runs ready tasks in order). On the loop."""

    def __init__(self, progress: ProgressFnT) -> None:
        self._progress = progress
        self._running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._running += 1
        self._idle.clear()
        try:
            await self._progress(progress, total, message)
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    async def relayed(self) -> None:
        await asyncio.sleep(0)  # once more round the loop: a callback task just spawned begins
        # A client slow to take progress does not hold the answer back for long.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), PROGRESS_DRAIN)


def prompt_rounds(client: Client, *, name: str, arguments: dict[str, str] | None) -> Send:
    """One round of ``prompts/get`` of ``name`` to the owner ``client`` speaks to."""

    async def send(responses: Any, state: str | None, meta: types.RequestParamsMeta) -> types.Result:
        return await client.session.get_prompt(
            name,
            arguments,
            input_responses=responses,
            request_state=state,
            meta=meta,
            allow_input_required=True,
        )

    return send


async def _listed_once(client: Client, call: Callable[[], Awaitable[types.Result]]) -> types.Result:
    """``call()``; once more after listing the owner's tools if it refused the call's headers
    (HEADER_MISMATCH: the client mirrors ``x-mcp-header`` arguments of the tools it listed)."""
    try:
        return await call()
    except MCPError as exc:
        if exc.error.code != HEADER_MISMATCH:
            raise
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await client.session.list_tools(params=params)
        cursor = page.next_cursor
        if not cursor:
            break
    return await call()


def dumped(result: Any) -> dict[str, Any]:
    """An SDK result as MCP JSON."""
    return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def tool_answer(answer: types.Result) -> ToolResult:
    """The owner's ``tools/call`` answer, shaped as the runtime shapes a server's (the gateway
    reads it)."""
    if not isinstance(answer, types.CallToolResult):
        return ToolResult.fail(ErrorType.SERVER_ERROR, f"unexpected answer {type(answer).__name__}")
    shaped = dumped(answer)
    content = shaped.get("content", [])
    if answer.is_error:
        texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return ToolResult.fail(
            ErrorType.SERVER_ERROR, "; ".join(t for t in texts if t) or "error", content=content
        )
    output: dict[str, Any] = {"content": content}
    if "structuredContent" in shaped:
        output["structuredContent"] = shaped["structuredContent"]
    return ToolResult.ok(output)


def prompt_answer(answer: types.Result) -> ToolResult:
    """The owner's ``prompts/get`` answer, as the gateway answers from."""
    if not isinstance(answer, types.GetPromptResult):
        return ToolResult.fail(ErrorType.SERVER_ERROR, f"unexpected answer {type(answer).__name__}")
    return ToolResult.ok(dumped(answer))
