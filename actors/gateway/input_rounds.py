"""A 2026-07-28 client's ``tools/call`` or ``prompts/get`` as a multi round-trip request (SEP-2322).

The backend's request is held (`actors.gateway.rounds.HeldCall`) while the client answers each
round the backend asks for; the client's retry carries the answers and the sealed
``requestState``. A round that needs a capability the client did not declare for its request is
refused with -32021 (HTTP 400 on Streamable HTTP), and the held request is dropped; except that a
handshake-era backend (which cannot be told what each request declares) asking only for an
elicitation or the roots of a client that declared neither is answered as that client would
(declined; no roots), and goes on.
Handshake-era clients keep the direct path, where a backend's requests reach the client as
requests (`actors.gateway.forwarding`). In a cluster, a request for a server that runs on another
replica is held here all the same, and forwarded from here (its rounds come back as rounds); a
retry whose ``requestState`` names another replica is sent to that one (`RuntimeRequests.resume_at`).

Run on the gateway's loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError

from actors.gateway.handoff import LoopHandoff
from actors.gateway.relays import ClientRelay
from actors.gateway.rounds import (
    Held,
    HeldCall,
    HeldCalls,
    HeldElsewhere,
    declared,
    missing_capabilities,
    without_capability,
)
from actors.gateway.routing import RuntimeRequests
from actors.mcp.inputs import CallInputs, InputRefused
from actors.mcp.revisions import Input, revision_of
from actors.runtime.messages import ServerRequest
from actors.tools import ToolResult

__all__ = ["InputRounds"]

logger = logging.getLogger(__name__)

_REQUESTS: pydantic.TypeAdapter[types.InputRequests] = pydantic.TypeAdapter(types.InputRequests)


class InputRounds:
    """RuntimeRequests held across rounds. No state of its own: the held calls are `HeldCalls`'."""

    def __init__(
        self, requests: RuntimeRequests, handoff: LoopHandoff, held: HeldCalls | None = None
    ) -> None:
        self._requests = requests
        self._handoff = handoff
        self._held = held if held is not None else HeldCalls(handoff)

    def applies(self, ctx: Any, namespace: str) -> bool:
        """Whether a request of the client of ``ctx`` to ``namespace`` goes in rounds."""
        return revision_of(getattr(ctx, "protocol_version", None)).input is Input.ROUNDS

    async def start(
        self, ctx: Any, namespace: str, message: Callable[[CallInputs], ServerRequest], what: Held
    ) -> Any:
        """Send ``message(inputs)`` held: the client's answer, or the first round asked for."""
        self._requests.seen(ctx)
        held = self._held.open(what, declared(ctx))
        relay = ClientRelay(ctx, target=lambda: held.serving)
        held.task = self._handoff.start(self._requests.held(ctx, namespace, message(held), relay))
        return await self._next(ctx, held)

    async def resume(self, ctx: Any, method: str, params: types.InputResponseRequestParams) -> Any:
        """The client's retry: its answers go to the held request's waiting round."""
        self._requests.seen(ctx)
        assert params.request_state is not None
        try:
            held = self._held.take(params.request_state)
        except HeldElsewhere as elsewhere:
            if not self._requests.clustered:
                raise
            return await self._requests.resume_at(ctx, elsewhere.replica, method, params, ClientRelay(ctx))
        if held.what.method != method:
            raise MCPError(types.INVALID_PARAMS, f"requestState is not for a {method} request")
        responses = {
            key: response.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, response in (params.input_responses or {}).items()
        }
        held.resume(responses)
        return await self._next(ctx, held)

    async def _next(self, ctx: Any, held: HeldCall) -> Any:
        while True:
            try:
                held.serving = ctx
                event = await self._requests.serving(ctx, held.what.namespace, held.next())
            except BaseException:
                self._abandon(held)
                raise
            finally:
                held.serving = None
            if isinstance(event, ToolResult):
                self._held.close(held)
                return held.what.answer(event)
            missing = missing_capabilities(event.requests, declared(ctx))
            if not missing:
                break
            answered = without_capability(event.requests, missing)
            if answered is None:
                names = ", ".join(sorted(missing))
                error = InputRefused(
                    types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"the request needs the client capability {names}, which the request did not declare",
                    {"requiredCapabilities": missing},
                )
                held.refuse(error)
                self._abandon(held)
                raise MCPError(error.code, error.message, error.data)
            # A handshake-era backend cannot be told what this request declares: what it asks
            # of a capability the client lacks is answered as that client would.
            held.resume(answered)
        try:
            requests = _REQUESTS.validate_python(dict(event.requests))
        except pydantic.ValidationError as exc:
            held.refuse(InputRefused(types.INTERNAL_ERROR, "the gateway could not relay the request"))
            self._abandon(held)
            raise MCPError(types.INTERNAL_ERROR, f"the backend asked for malformed input: {exc}") from None
        return types.InputRequiredResult(input_requests=requests, request_state=self._held.state(held))

    def _abandon(self, held: HeldCall) -> None:
        held.abandon()
        self._held.close(held)
