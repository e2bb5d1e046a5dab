"""Multi round-trip requests (SEP-2322) for the gateway's 2026-07-28 clients.

Such a client has no back-channel: what a backend asks while it serves the client's call
(sampling, elicitation, roots) cannot be sent to it as a request. The gateway holds the
backend's call instead (`HeldCall`, the call's `CallInputs`), answers the client's request with
an ``InputRequiredResult`` carrying the round's requests and a sealed ``requestState``, and
resumes the held call with the ``inputResponses`` of the client's retry. Whatever era the
backend speaks: a 2026-07-28 backend's rounds reach the inputs whole, a handshake-era backend's
requests one at a time.

``requestState`` is sealed (`StateSeal`: HMAC-SHA256 under a key from
``MCP_ACTORS_REQUEST_STATE_KEY``, or one made per process) and bound to one round of one held
call on one replica (named: the cluster's replica id, else one made per process): a tampered,
replayed or unknown state is refused with -32602; one another replica holds raises `HeldElsewhere`
(a -32602 too, unless the gateway sends the retry there).

`HeldCalls` and each `HeldCall`'s round are owned by the gateway's loop; `HeldCall.ask` runs on
a runtime worker thread, returns at once, and reaches the loop through `LoopHandoff`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import concurrent.futures
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError

from actors.gateway.handoff import LoopHandoff
from actors.mcp.inputs import InputRefused, required_capabilities
from actors.mcp.transport import JSONObject
from actors.tools import ToolResult

__all__ = [
    "KEY_ENV",
    "Asked",
    "Held",
    "HeldCall",
    "HeldCalls",
    "HeldElsewhere",
    "StateSeal",
    "capabilities_json",
    "declared",
    "missing_capabilities",
    "settle",
    "without_capability",
]

logger = logging.getLogger(__name__)

KEY_ENV: Final = "MCP_ACTORS_REQUEST_STATE_KEY"
"""The environment variable holding the key that seals ``requestState`` (shared by replicas)."""

_RETRY_WAIT = 120.0
"""How long a held round waits for its client's retry before its backend is told no."""


class StateSeal:
    """Seals a small JSON payload into an opaque ``requestState`` and opens it again."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def from_environment(cls) -> StateSeal:
        """The key of ``MCP_ACTORS_REQUEST_STATE_KEY``, or a random one for this process."""
        configured = os.environ.get(KEY_ENV)
        return cls(configured.encode("utf-8") if configured else secrets.token_bytes(32))

    def seal(self, payload: JSONObject) -> str:
        body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).rstrip(b"=")
        tag = base64.urlsafe_b64encode(hmac.digest(self._key, body, hashlib.sha256)).rstrip(b"=")
        return f"{body.decode()}.{tag.decode()}"

    def open(self, state: str) -> JSONObject | None:
        """The payload of ``state``, or None when it was not sealed with this key as it is."""
        body, dot, tag = state.partition(".")
        if not dot:
            return None
        expected = base64.urlsafe_b64encode(hmac.digest(self._key, body.encode(), hashlib.sha256)).rstrip(
            b"="
        )
        if not hmac.compare_digest(expected, tag.encode()):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (ValueError, binascii.Error):
            return None
        return payload if isinstance(payload, dict) else None


@dataclass(frozen=True)
class Held:
    """What a held request is: its method, and how its backend's result answers the client."""

    method: str
    namespace: str
    answer: Callable[[ToolResult], Any]


@dataclass(frozen=True)
class Asked:
    """One round of a backend's requests, waiting for the client's answers."""

    requests: Mapping[str, JSONObject]
    slot: concurrent.futures.Future[Mapping[str, JSONObject]]


class HeldCall:
    """A backend call held across its client's rounds: the call's `CallInputs`.

    ``capabilities`` is immutable (read on the worker thread); the rest is the loop's.
    """

    def __init__(self, ident: str, what: Held, capabilities: Mapping[str, Any], handoff: LoopHandoff) -> None:
        self.ident = ident
        self.what = what
        self.capabilities: Mapping[str, Any] = capabilities
        self.round = 0
        self.task: asyncio.Future[ToolResult] | None = None
        self.waiting: Asked | None = None
        self.serving: Any = None
        """The request (its SDK context) waiting on this call now: the one its log messages go to."""
        self._handoff = handoff
        self._asked: collections.deque[Asked] = collections.deque()
        self._wake: asyncio.Future[None] | None = None
        """While `next` waits: set when a round is asked or the call ends."""

    # ---- CallInputs, on a worker thread -------------------------------------------------------

    def ask(self, requests: Mapping[str, JSONObject]) -> concurrent.futures.Future[Mapping[str, JSONObject]]:
        slot: concurrent.futures.Future[Mapping[str, JSONObject]] = concurrent.futures.Future()
        if not self._handoff.call(self._asked_on_loop, Asked(dict(requests), slot)):
            slot.set_exception(InputRefused(types.INTERNAL_ERROR, "the gateway is not serving"))
        return slot

    # ---- on the loop --------------------------------------------------------------------------

    def _asked_on_loop(self, asked: Asked) -> None:
        self._asked.append(asked)
        _wake(self._wake)
        # A client that never comes back must not hold its backend's call for ever.
        timer = asyncio.get_running_loop().call_later(_RETRY_WAIT, self._expire, asked)
        asked.slot.add_done_callback(lambda _: timer.cancel())

    def _expire(self, asked: Asked) -> None:
        error = f"the client did not come back with the answers within {_RETRY_WAIT:g} s"
        settle(asked.slot, InputRefused(types.INTERNAL_ERROR, error))

    async def next(self) -> Asked | ToolResult:
        """The backend's next round of requests (first, if both are there), or the call's result."""
        task = self.task
        assert task is not None
        if not self._asked and not task.done():
            # One future either side wakes: most calls ask nothing, and end with no task or
            # wait machinery of their own beyond it.
            wake = self._wake = asyncio.get_running_loop().create_future()
            ended = lambda _: _wake(wake)  # noqa: E731
            task.add_done_callback(ended)
            try:
                await wake
            finally:
                self._wake = None
                task.remove_done_callback(ended)
        if self._asked:
            self.waiting = self._asked.popleft()
            return self.waiting
        return task.result()

    def resume(self, responses: Mapping[str, JSONObject]) -> None:
        """The client's answers to the round that is waiting."""
        waiting, self.waiting = self.waiting, None
        self.round += 1
        if waiting is not None:
            settle(waiting.slot, dict(responses))

    def refuse(self, error: InputRefused) -> None:
        """The round that is waiting is refused (its backend gets ``error``)."""
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            settle(waiting.slot, error)

    def abandon(self) -> None:
        """Nobody will come back for this call: its backend is told no, and its call cancelled."""
        self.refuse(InputRefused(types.INTERNAL_ERROR, "the client went away"))
        if self.task is not None:
            self.task.cancel()


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class HeldElsewhere(MCPError):
    """A ``requestState`` (intact) of a request another gateway process holds: ``replica``."""

    def __init__(self, replica: str) -> None:
        super().__init__(
            types.INVALID_PARAMS,
            "requestState belongs to a request held by another gateway process; retry there, "
            "or send the request again without it",
        )
        self.replica = replica


class HeldCalls:
    """The held calls of this gateway, by id. Owned by the gateway's loop."""

    def __init__(
        self, handoff: LoopHandoff, seal: StateSeal | None = None, *, replica: str | None = None
    ) -> None:
        self._handoff = handoff
        self._seal = seal if seal is not None else StateSeal.from_environment()
        self._held: dict[str, HeldCall] = {}
        self._replica = replica or secrets.token_hex(8)
        """Who holds this gateway's calls: a state sealed by another process names another."""

    def open(self, what: Held, capabilities: Mapping[str, Any]) -> HeldCall:
        held = HeldCall(secrets.token_urlsafe(12), what, capabilities, self._handoff)
        self._held[held.ident] = held
        return held

    def close(self, held: HeldCall) -> None:
        self._held.pop(held.ident, None)

    def state(self, held: HeldCall) -> str:
        """The ``requestState`` of ``held``'s waiting round."""
        return self._seal.seal({"c": held.ident, "r": held.round, "x": self._replica})

    def take(self, state: str) -> HeldCall:
        """The held call whose waiting round ``state`` answers; -32602 if there is none."""
        payload = self._seal.open(state)
        if payload is None:
            raise MCPError(types.INVALID_PARAMS, "requestState failed its integrity check")
        if payload.get("x") != self._replica:
            raise HeldElsewhere(str(payload.get("x")))
        held = self._held.get(str(payload.get("c")))
        if held is None:
            raise MCPError(types.INVALID_PARAMS, "requestState is for a request that is no longer held")
        if payload.get("r") != held.round or held.waiting is None:
            raise MCPError(types.INVALID_PARAMS, "requestState was already used")
        return held


def settle(slot: concurrent.futures.Future[Mapping[str, JSONObject]], outcome: Any) -> None:
    """Answer ``slot`` unless it is done (the runtime may have given up on it meanwhile)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if isinstance(outcome, BaseException):
            slot.set_exception(outcome)
        else:
            slot.set_result(outcome)


def declared(ctx: Any) -> dict[str, Any]:
    """The client capabilities of the request ``ctx`` (2026-07-28: declared per request)."""
    return capabilities_json(getattr(ctx.session, "client_capabilities", None))


def capabilities_json(capabilities: object) -> dict[str, Any]:
    """A client's declared ``ClientCapabilities`` as JSON (``{}`` for none)."""
    if isinstance(capabilities, pydantic.BaseModel):
        dumped = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dict(dumped) if isinstance(dumped, Mapping) else {}
    return {}


def missing_capabilities(requests: Mapping[str, JSONObject], declared: Mapping[str, Any]) -> JSONObject:
    """The capabilities ``requests`` need that the client did not declare."""
    return {name: value for name, value in required_capabilities(requests).items() if name not in declared}


_WITHOUT: Final[Mapping[str, JSONObject]] = {
    "elicitation/create": {"action": "decline"},
    "roots/list": {"roots": []},
}
"""What a client without the capability would answer, where one can answer at all (sampling has
no such answer)."""


def without_capability(requests: Mapping[str, JSONObject], missing: Mapping[str, Any]) -> JSONObject | None:
    """The answers of a client without the ``missing`` capabilities to ``requests``, when every
    request needs one of them and each has such an answer; else None."""
    answers: JSONObject = {}
    for key, request in requests.items():
        if not required_capabilities({key: request}).keys() <= missing.keys():
            return None
        answer = _WITHOUT.get(str(request.get("method")))
        if answer is None:
            return None
        answers[key] = dict(answer)
    return answers
