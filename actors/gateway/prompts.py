"""Prompts and completion through the gateway: ``prompts/list``, ``prompts/get``,
``completion/complete``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway import hints
from actors.gateway.conversion import prompt, protocol_error
from actors.gateway.input_rounds import InputRounds
from actors.gateway.rounds import Held
from actors.gateway.routing import Requests, Serving
from actors.mcp.catalog import PromptSpec
from actors.mcp.inputs import CallInputs
from actors.runtime.messages import Complete, GetPrompt, ListPrompts
from actors.tools import ToolResult

__all__ = ["Prompts"]


class Prompts:
    """The prompt handlers. Run on the gateway's loop; no state of their own."""

    def __init__(
        self,
        requests: Requests,
        serving: Callable[[], Serving],
        owner_of: Callable[[str], Any],
        rounds: InputRounds,
        cache_hints: hints.CacheHints,
    ) -> None:
        self._requests = requests
        self._serving = serving
        self._owner_of = owner_of
        """The namespace serving a resource URI (`actors.gateway.resources.Resources.owner_of`)."""
        self._rounds = rounds
        self._hints = cache_hints

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        self._requests.seen(ctx)
        asked = ListPrompts()
        prompts: list[PromptSpec] = await self._requests.ask(asked)
        names = self._serving().names
        answer = [prompt(p, names) for p in prompts]
        return types.ListPromptsResult(prompts=answer, **self._hints.of(ctx, hints.listed(asked)))

    async def _internal(self, external: str) -> tuple[str, str]:
        name = await self._requests.internal(self._serving(), external, ListPrompts(refresh=False))
        if name is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {external}")
        namespace, _, bare = name.partition("/")
        return namespace, bare

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        if params.request_state is not None:
            return await self._rounds.resume(ctx, "prompts/get", params)  # type: ignore[no-any-return]
        namespace, name = await self._internal(params.name)
        arguments = dict(params.arguments or {})
        if self._rounds.applies(ctx, namespace):

            def held(inputs: CallInputs) -> GetPrompt:
                return GetPrompt(namespace, name, arguments, inputs=inputs)

            answer = await self._rounds.start(
                ctx, namespace, held, Held("prompts/get", namespace, _prompt_answer)
            )
            return answer  # type: ignore[no-any-return]
        return _prompt_answer(
            await self._requests.request(ctx, namespace, GetPrompt(namespace, name, arguments))
        )

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            namespace, name = await self._internal(ref.name)
            backend_ref: dict[str, Any] = {"type": "ref/prompt", "name": name}
        else:
            namespace = await self._owner_of(ref.uri)
            backend_ref = {"type": "ref/resource", "uri": ref.uri}
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else None
        result = await self._requests.request(
            ctx, namespace, Complete(namespace, backend_ref, argument, context)
        )
        if not result.success:
            raise protocol_error(result)
        return types.CompleteResult(
            completion=types.Completion.model_validate(result.output or {"values": []})
        )


def _prompt_answer(result: ToolResult) -> types.GetPromptResult:
    if not result.success:
        raise protocol_error(result)
    return types.GetPromptResult.model_validate(result.output or {"messages": []})
