"""Server -> client requests: sampling, elicitation and roots, answered by the host.

The host's `ClientHandlers` are given JSON and give JSON; one that raises, hangs past
``handler_timeout`` or answers nonsense gives the server an error answer, and the session goes
on. Without a handler an elicitation gets its policy's answer (`actors.mcp.elicitation`); a
capability with neither is not declared.

A call made with `CallInputs` has them answer its server's requests instead (the handshake era
says no more of which call a request is for than that it came while the call ran: the oldest
such call in flight answers).

Owned by the event-loop thread: the SDK calls the callbacks there. The handlers themselves hand
the work to a host thread (see `ClientHandlers`); `CallInputs` run on a worker; nothing here runs
host code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp.client.session import ClientRequestContext

from actors.mcp.elicitation import answer as elicitation_answer
from actors.mcp.inputs import CallInputs, InputRefused
from actors.mcp.loop import offload
from actors.mcp.sdk_options import SDKOptions
from actors.mcp.sdk_transport.convert import to_json
from actors.mcp.sdk_transport.failures import exc_text, validation_text
from actors.mcp.transport import ClientHandlers, JSONObject

__all__ = ["ServerRequests"]

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=pydantic.BaseModel)


class ServerRequests:
    """The answers of one session's client to its server's requests."""

    def __init__(self, label: str, options: SDKOptions) -> None:
        self._label = label
        self._handlers = options.handlers or ClientHandlers()
        self._policy = options.elicitation
        self._limit = options.handler_timeout
        self._calls: list[CallInputs] = []
        """The inputs of the calls in flight that came with their own, the oldest first."""
        self._asking: list[CallInputs] = []
        """Those of them with a question out (one per request in flight)."""

    @contextmanager
    def answering(self, inputs: CallInputs) -> Iterator[None]:
        """While a call runs, its server's requests may go to its ``inputs``: those of the oldest
        call without a question out (a handshake-era server asks one thing at a time per call,
        so a call still waiting for its answer is not the one asking again), else the oldest's."""
        self._calls.append(inputs)
        try:
            yield
        finally:
            self._calls.remove(inputs)

    async def _from_call(
        self, method: str, params: pydantic.BaseModel | None, model: type[_M]
    ) -> _M | types.ErrorData:
        """The answer of a call's inputs to one request, as a one-request round keyed by what
        it asks for (``elicitation``, ``sampling``, ``roots``)."""
        inputs = next((c for c in self._calls if all(c is not a for a in self._asking)), self._calls[0])
        key = method.partition("/")[0]
        request: JSONObject = {"method": method, "params": to_json(params) if params is not None else {}}

        async def ask() -> JSONObject:
            self._asking.append(inputs)
            try:
                answers = await offload(inputs.ask, {key: request})
                try:
                    given = await asyncio.wrap_future(answers)
                except InputRefused as exc:
                    error = types.ErrorData(code=exc.code, message=exc.message, data=exc.data)
                    raise _Refused(error) from None
                finally:
                    answers.cancel()  # a no-op once answered; else the round is given up
            finally:
                self._asking.remove(inputs)
            return dict(given[key])

        return await self._host_answer(method, ask, model)

    def callbacks(self) -> dict[str, Any]:
        """The ``mcp.Client`` keywords: a callback for each capability the client declares."""
        handlers = self._handlers
        elicits = handlers.elicitation is not None or self._policy is not None
        return {
            "sampling_callback": self._on_sampling if handlers.sampling is not None else None,
            "list_roots_callback": self._on_roots if handlers.roots is not None else None,
            "elicitation_callback": self._on_elicit if elicits else None,
        }

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        sampling = self._handlers.sampling
        assert sampling is not None
        model: type[types.CreateMessageResult | types.CreateMessageResultWithTools] = (
            types.CreateMessageResultWithTools
            if params.tools is not None or params.tool_choice is not None
            else types.CreateMessageResult
        )
        if self._calls:
            return await self._from_call("sampling/createMessage", params, model)
        return await self._host_answer("sampling/createMessage", lambda: sampling(to_json(params)), model)

    async def _on_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        roots = self._handlers.roots
        assert roots is not None
        if self._calls:
            return await self._from_call("roots/list", None, types.ListRootsResult)

        async def listed() -> JSONObject:
            return {"roots": await roots()}

        return await self._host_answer("roots/list", listed, types.ListRootsResult)

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        elicitation = self._handlers.elicitation
        if self._calls:
            return await self._from_call("elicitation/create", params, types.ElicitResult)
        if elicitation is not None:
            return await self._host_answer(
                "elicitation/create", lambda: elicitation(to_json(params)), types.ElicitResult
            )
        policy = self._policy
        assert policy is not None
        mode = getattr(params, "mode", "form")
        requested = getattr(params, "requested_schema", None)
        if isinstance(requested, pydantic.BaseModel):
            requested = requested.model_dump(mode="json", by_alias=True, exclude_none=True)
        schema = requested if isinstance(requested, Mapping) else None
        reply = elicitation_answer(policy, mode, schema)
        logger.info("%s: answered an elicitation with %s", self._label, reply["action"])
        return types.ElicitResult.model_validate(reply)

    async def _host_answer(
        self, what: str, ask: Callable[[], Awaitable[Any]], model: type[_M]
    ) -> _M | types.ErrorData:
        """The host's answer to a server request as ``model``, or the error the server gets."""
        limit = self._limit
        try:
            with anyio.fail_after(limit):
                answer = await ask()
        except _Refused as exc:
            return exc.error
        except Exception as exc:
            text = exc_text(exc) if str(exc) else f"no answer within {limit:g} s"
            return self._refuse(what, text)
        try:
            return model.model_validate(answer)
        except pydantic.ValidationError as exc:
            return self._refuse(what, f"the answer is not a {model.__name__}: {validation_text(exc)}")

    def _refuse(self, what: str, why: str) -> types.ErrorData:
        logger.warning("%s: the host could not answer %s: %s", self._label, what, why)
        return types.ErrorData(
            code=types.INTERNAL_ERROR, message=f"the client could not answer {what}: {why}"
        )


class _Refused(Exception):
    """A call's inputs refused a request: the server gets their error as it is."""

    def __init__(self, error: types.ErrorData) -> None:
        super().__init__(error.message)
        self.error = error
