"""What a backend asks while it serves a handshake-era client's request, asked of that client.

Such a client has a back-channel: the backend's sampling, elicitation and roots requests reach
it as requests of the gateway's own, sent with the request they are for
(``related_request_id``, so Streamable HTTP sends them on that request's stream). `ClientInputs`
is the request's `CallInputs`: the runtime gives it exactly the questions asked for that call
(a 2026-07-28 backend's rounds; a handshake-era backend's requests while the call is in flight),
so no guess decides which client a question is for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from actors.gateway.handoff import LoopHandoff
from actors.gateway.rounds import capabilities_json, missing_capabilities, settle, without_capability
from actors.mcp.inputs import InputRefused
from actors.mcp.transport import JSONObject

__all__ = ["ClientInputs"]

logger = logging.getLogger(__name__)

_MODELS: Final[Mapping[str, tuple[type[pydantic.BaseModel], type[pydantic.BaseModel]]]] = {
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}
"""Each request a backend may ask of a client: its model, and its result's."""

_Answers = concurrent.futures.Future[Mapping[str, JSONObject]]


class ClientInputs:
    """Answers a backend's questions for one request of a handshake-era client, by asking it.

    ``capabilities`` is read on a runtime thread: from what the client declared at
    ``initialize`` (an immutable model, taken on the loop), worked out only then, as most calls
    ask nothing. `ask` is called there too and hands each round to the gateway's loop, which
    alone sends.
    """

    def __init__(self, ctx: Any, handoff: LoopHandoff) -> None:
        self._declared = getattr(ctx.session, "client_capabilities", None)
        self._session = ctx.session
        self._related = ServerMessageMetadata(related_request_id=ctx.request_id)
        self._handoff = handoff

    @functools.cached_property
    def capabilities(self) -> Mapping[str, Any]:
        return capabilities_json(self._declared)

    def ask(self, requests: Mapping[str, JSONObject]) -> _Answers:
        slot: _Answers = concurrent.futures.Future()
        missing = missing_capabilities(requests, self.capabilities)
        if missing:
            # What the backend was not told (a handshake-era backend learns the capabilities
            # once, for every client): answered as a client without them would, or refused.
            answered = without_capability(requests, missing)
            if answered is None:
                names = ", ".join(sorted(missing))
                slot.set_exception(
                    InputRefused(
                        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                        f"the client did not declare the capability {names}",
                        {"requiredCapabilities": missing},
                    )
                )
            else:
                slot.set_result(answered)
        elif not self._handoff.call(self._ask_on_loop, dict(requests), slot):
            slot.set_exception(InputRefused(types.INTERNAL_ERROR, "the gateway is not serving"))
        return slot

    def _ask_on_loop(self, requests: Mapping[str, JSONObject], slot: _Answers) -> None:
        if slot.done():
            return  # the runtime gave up on the round before it reached the loop
        task = self._handoff.start(self._answers(requests))
        # The runtime cancels the round it gives up on (from its own thread).
        slot.add_done_callback(lambda _: slot.cancelled() and self._handoff.call(task.cancel))
        task.add_done_callback(lambda done: settle(slot, _outcome(done)))

    async def _answers(self, requests: Mapping[str, JSONObject]) -> Mapping[str, JSONObject]:
        try:
            # One refusal ends the round: the other questions are withdrawn, not left open.
            async with asyncio.TaskGroup() as group:
                asked = {key: group.create_task(self._answer(request)) for key, request in requests.items()}
        except* InputRefused as refused:
            raise refused.exceptions[0] from None
        return {key: task.result() for key, task in asked.items()}

    async def _answer(self, request: JSONObject) -> JSONObject:
        method = str(request.get("method"))
        models = _MODELS.get(method)
        if models is None:
            raise InputRefused(types.METHOD_NOT_FOUND, f"the gateway cannot relay {method!r} to its client")
        model, result_model = models
        try:
            message = model.model_validate({"method": method, "params": request.get("params") or {}})
        except pydantic.ValidationError as exc:
            raise InputRefused(types.INVALID_PARAMS, f"the backend asked for malformed input: {exc}") from exc
        try:
            result = await self._session.send_request(message, result_model, metadata=self._related)
        except MCPError as exc:  # the client's error, or the SDK's NoBackChannelError
            raise InputRefused(exc.error.code, exc.error.message, exc.error.data) from None
        dumped: JSONObject = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped


def _outcome(task: asyncio.Task[Mapping[str, JSONObject]]) -> Mapping[str, JSONObject] | InputRefused:
    """How ``task`` ended, as the round's answers or its refusal."""
    if task.cancelled():
        return InputRefused(types.INTERNAL_ERROR, "the client's request ended")
    error = task.exception()
    if error is None:
        return task.result()
    if isinstance(error, InputRefused):
        return error
    logger.debug("gateway: could not ask the client: %r", error)
    return InputRefused(types.INTERNAL_ERROR, f"the client could not be asked: {error}")
