"""Per-call input: who answers what a server asks *for one call* (SEP-2322 multi round-trip).

A server asks for sampling, elicitation or roots while it serves a call: on 2026-07-28 in an
``InputRequiredResult`` (all of a round's requests at once, keyed), in the handshake era as
requests of its own on the session. Usually the host's `ClientHandlers` answer, whoever the call
was for. A caller that must answer for *its* call (the gateway, relaying to the client whose
request it is) gives the call `CallInputs`: the round's requests reach it together, as JSON,
and the capabilities it declares are the ones the server is told of for that call.

`CALL_INPUTS` carries them into the call's task on the event loop (set by the adapter, read by
the transport), so the transport seam keeps its shape.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from actors.mcp.transport import JSONObject

__all__ = ["CALL_INPUTS", "CallInputs", "InputRefused", "required_capabilities"]

_CAPABILITY_OF = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


@runtime_checkable
class CallInputs(Protocol):
    """Answers a server's requests for one call. Owned by whoever made the call."""

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        """The client capabilities to declare for this call (``sampling``, ``elicitation``,
        ``roots``), within the runtime's own; None: the runtime's own."""
        ...

    def ask(self, requests: Mapping[str, JSONObject]) -> concurrent.futures.Future[Mapping[str, JSONObject]]:
        """Ask for the answers to one round of requests, by key: ``{key: {"method": ...,
        "params": ...}}`` in; the future's result is ``{key: result}``, or `InputRefused` to
        refuse the round. Called on a worker thread; returns at once (no thread waits for the
        answers). The runtime stops waiting after its handler timeout and cancels the future."""
        ...


class InputRefused(Exception):
    """A round of input refused with a JSON-RPC error (the call fails with it)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


CALL_INPUTS: contextvars.ContextVar[CallInputs | None] = contextvars.ContextVar(
    "mcp_actors_call_inputs", default=None
)
"""The `CallInputs` of the call whose task is running (None: the host's handlers answer)."""


def required_capabilities(requests: Mapping[str, JSONObject]) -> dict[str, JSONObject]:
    """The client capabilities a round of requests needs: ``{"sampling": {}, ...}``."""
    needed: dict[str, JSONObject] = {}
    for request in requests.values():
        capability = _CAPABILITY_OF.get(str(request.get("method")))
        if capability is not None:
            needed[capability] = {}
    return needed
