"""Prompts and completion through the gateway: ``prompts/list``, ``prompts/get``,
``completion/complete``. A ``prompts/get`` runs through a `Pipeline`: the gate, input rounds,
and the send."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway import hints
from actors.gateway.absent import shape_refusal
from actors.gateway.access.gate import AccessGate, Admission, refusal_error
from actors.gateway.access.principal import principal_of
from actors.gateway.access.use import Use
from actors.gateway.conversion import is_not_offered, prompt, protocol_error
from actors.gateway.input_rounds import InputRounds
from actors.gateway.pipeline import Forwarded, Next, Pipeline
from actors.gateway.rounds import Held
from actors.gateway.routing import RuntimeRequests, Serving
from actors.mcp.catalog import PromptSpec
from actors.mcp.inputs import CallInputs
from actors.runtime.messages import Complete, GetPrompt, ListPrompts
from actors.tools import ToolResult

__all__ = ["Prompts"]

_Answer = types.GetPromptResult | types.InputRequiredResult


class Prompts:
    """The prompt handlers. Run on the gateway's loop; no state of their own."""

    def __init__(
        self,
        requests: RuntimeRequests,
        serving: Callable[[], Serving],
        served_by: Callable[[str], Awaitable[tuple[str, str | None]]],
        rounds: InputRounds,
        cache_hints: hints.CacheHints,
        gate: AccessGate,
    ) -> None:
        self._requests = requests
        self._serving = serving
        self._served_by = served_by
        """The namespace serving a resource URI, and its template
        (`actors.gateway.resources.Resources.served_by`)."""
        self._rounds = rounds
        self._hints = cache_hints
        self._gate = gate
        self._get: Pipeline[_Answer] = Pipeline(
            [("gate", self._gate_stage), ("rounds", self._rounds_stage)], self._send
        )

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        self._requests.seen(ctx)
        asked = ListPrompts()
        prompts: list[PromptSpec] = await self._requests.ask(asked, ctx)
        prompts = await self._gate.visible(principal_of(ctx), prompts, _use)
        names = self._serving().names
        answer = [prompt(p, names) for p in prompts]
        return types.ListPromptsResult(prompts=answer, **self._hints.of(ctx, hints.listed(asked)))

    async def _internal(self, external: str) -> tuple[str, str]:
        name = await self._requests.internal(self._serving(), external, partial(ListPrompts, refresh=False))
        if name is None:
            raise _unknown(external)
        namespace, _, bare = name.partition("/")
        return namespace, bare

    def _answer(self, external: str) -> Callable[[ToolResult], types.GetPromptResult]:
        def answer(result: ToolResult) -> types.GetPromptResult:
            if self._gate.polices and is_not_offered(result):
                # The backend's hint would name prompts the caller may not see (`Tools._answer`).
                raise _unknown(external)
            return _prompt_answer(result)

        return answer

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        if params.request_state is not None:
            return await self._rounds.resume(ctx, "prompts/get", params)  # type: ignore[no-any-return]
        namespace, name = await self._internal(params.name)
        arguments = dict(params.arguments or {})
        serving = self._serving()
        return await self._get(
            Forwarded(ctx, "prompts/get", params.name, namespace, name, arguments, serving)
        )

    # ---- the stages of a prompts/get, in order: gate, rounds; then the send ----------------

    async def _gate_stage(self, get: Forwarded, rest: Next[_Answer]) -> _Answer:
        """A prompt the caller may not see answers as one that does not exist (its request's
        shape checked first, as the runtime would); one it may not use, with the verdict."""
        use = Use.prompt(get.namespace, get.name, get.arguments)
        async with self._gate.guard(principal_of(get.ctx), use) as admission:
            if admission.hidden:
                shaped = shape_refusal(get.serving.config, GetPrompt(get.namespace, get.name, get.arguments))
                if shaped is not None:
                    raise protocol_error(shaped)
            _check(admission, get.external)
            return await rest(get)

    async def _rounds_stage(self, get: Forwarded, rest: Next[_Answer]) -> _Answer:
        """A 2026-07-28 caller of a backend that asks for input: the get runs in rounds."""
        if not self._rounds.applies(get.ctx, get.namespace):
            return await rest(get)

        def held(inputs: CallInputs) -> GetPrompt:
            return GetPrompt(get.namespace, get.name, get.arguments, inputs=inputs)

        answer = Held(get.method, get.namespace, self._answer(get.external))
        return await self._rounds.start(get.ctx, get.namespace, held, answer)  # type: ignore[no-any-return]

    async def _send(self, get: Forwarded) -> _Answer:
        result = await self._requests.request(
            get.ctx, get.namespace, GetPrompt(get.namespace, get.name, get.arguments)
        )
        return self._answer(get.external)(result)

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            namespace, name = await self._internal(ref.name)
            backend_ref: dict[str, Any] = {"type": "ref/prompt", "name": name}
            completed, unknown = Use.prompt(namespace, name), _unknown(ref.name)
        else:
            namespace, serving = await self._served_by(ref.uri)
            backend_ref = {"type": "ref/resource", "uri": ref.uri}
            completed = Use.read(namespace, ref.uri, serving)
            unknown = MCPError(types.INVALID_PARAMS, f"Resource not found: {ref.uri}")
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else None
        async with self._gate.guard(principal_of(ctx), completed.completing()) as admission:
            if admission.hidden:
                raise unknown  # a completion of what the caller may not see: as of what is not
            if admission.refused:
                raise refusal_error(admission)
            result = await self._requests.request(
                ctx, namespace, Complete(namespace, backend_ref, argument, context)
            )
        if not result.success:
            if self._gate.polices and is_not_offered(result):
                raise unknown  # without the backend's hint, which names what the caller may not see
            raise protocol_error(result)
        return types.CompleteResult(
            completion=types.Completion.model_validate(result.output or {"values": []})
        )


def _prompt_answer(result: ToolResult) -> types.GetPromptResult:
    if not result.success:
        raise protocol_error(result)
    return types.GetPromptResult.model_validate(result.output or {"messages": []})


def _use(spec: PromptSpec) -> Use:
    return Use.prompt(spec.namespace, spec.prompt_name)


def _unknown(external: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Unknown prompt: {external}")


def _check(admission: Admission, external: str) -> None:
    """Raise what a denied ``prompts/get`` is answered with (`Resources`' ``_check``)."""
    if admission.hidden:
        raise _unknown(external)
    if admission.refused:
        raise refusal_error(admission)
