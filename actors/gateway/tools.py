"""Tools through the gateway: ``tools/list`` and ``tools/call``, and tool search.

A call is resolved to its backend's namespace and name once, then runs through the stages of
a `Pipeline`: the gate, tasks, input rounds, and the send; each stage answers or passes it on.

With tool search on (``"toolSearch": true``, ``serve --tool-search``) the list holds only
``search_tools`` and ``call_tool`` (`actors.gateway.search`), for catalogs too large to list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway import hints
from actors.gateway.absent import not_offered_result, shape_refusal
from actors.gateway.access.gate import AccessGate, refused_call
from actors.gateway.access.limits import RATE_LIMITED
from actors.gateway.access.principal import principal_of
from actors.gateway.access.use import Use
from actors.gateway.conversion import is_not_offered, refused, tool, tool_answer
from actors.gateway.forwarding import Forwarding
from actors.gateway.input_rounds import InputRounds
from actors.gateway.pipeline import Forwarded, Next, Pipeline
from actors.gateway.rounds import Held
from actors.gateway.routing import RuntimeRequests, Serving, plain_name
from actors.gateway.search import CALL_TOOL, DEFAULT_LIMIT, MAX_LIMIT, META_TOOLS, SEARCH_TOOLS, ToolIndex
from actors.gateway.tasks import TaskAnswer, Tasks, answered, created, declares_tasks
from actors.runtime.messages import CallTool, ListTools, StartTask
from actors.tools import ErrorType, ToolResult, ToolSpec

__all__ = ["Tools"]

_Answer = types.CallToolResult | types.InputRequiredResult | TaskAnswer


class Tools:
    """The tool handlers. Run on the gateway's loop; no state of their own (what is served
    comes from the current `Serving` snapshot)."""

    def __init__(
        self,
        requests: RuntimeRequests,
        forwarding: Forwarding,
        serving: Callable[[], Serving],
        rounds: InputRounds,
        cache_hints: hints.CacheHints,
        gate: AccessGate,
        tasks: Tasks,
    ) -> None:
        self._requests = requests
        self._forwarding = forwarding
        self._serving = serving
        self._rounds = rounds
        self._hints = cache_hints
        self._gate = gate
        self._tasks = tasks
        self._call: Pipeline[_Answer] = Pipeline(
            [("gate", self._gate_stage), ("tasks", self._tasks_stage), ("rounds", self._rounds_stage)],
            self._send,
        )

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self._requests.seen(ctx)
        serving = self._serving()
        if serving.tool_search:
            return types.ListToolsResult(tools=list(META_TOOLS), **self._hints.of(ctx, hints.OWN_VIEW))
        asked = ListTools()
        specs: list[ToolSpec] = await self._requests.ask(asked, ctx)
        specs = await self._gate.visible(principal_of(ctx), specs, _use)
        answer = [tool(spec, serving.names) for spec in specs]
        return types.ListToolsResult(tools=answer, **self._hints.of(ctx, hints.listed(asked)))

    def input_schema(self, external: str) -> Mapping[str, Any] | None:
        """The input schema of the tool a client calls ``external``, as offered now, for the
        SDK's check of a 2026-07-28 call's ``Mcp-Param-*`` headers over HTTP. Without it the
        SDK runs this gateway's whole ``tools/list`` for every such call. Not scoped to the
        caller: `build_server` asks only while no policy is in force and no server is per user.
        None when this process does not know the tool yet: that call goes unchecked, as the SDK
        leaves a tool its listing does not show."""
        serving = self._serving()
        if serving.tool_search:
            return next((dict(t.input_schema) for t in META_TOOLS if t.name == external), None)
        name = serving.names.internal(external) or plain_name(serving.config, external)
        spec = self._requests.offered(name) if name is not None else None
        return spec.input_schema if spec is not None else None

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | TaskAnswer:
        serving = self._serving()
        if serving.tool_search and params.name in (SEARCH_TOOLS, CALL_TOOL):
            return await self._meta_tool(ctx, params)
        if params.request_state is not None:
            return await self._rounds.resume(ctx, "tools/call", params)  # type: ignore[no-any-return]
        name = await self._requests.internal(serving, params.name, partial(ListTools, refresh=False))
        if name is None:
            raise _unknown(params.name)
        namespace, _, bare = name.partition("/")
        arguments = dict(params.arguments or {})
        return await self._call(
            Forwarded(ctx, "tools/call", params.name, namespace, bare, arguments, serving)
        )

    # ---- the stages of a call, in order: gate, tasks, rounds; then the send -----------------

    async def _gate_stage(self, call: Forwarded, rest: Next[_Answer]) -> _Answer:
        """Who may use what: a tool the caller may not see answers as one that does not exist;
        one it may not use, with the verdict; the gate hears when the rest has answered."""
        use = Use.call(call.namespace, call.name, call.arguments)
        async with self._gate.guard(principal_of(call.ctx), use) as admission:
            if admission.hidden:
                # What the runtime would answer a call of a tool it does not have (its shape
                # checked first), held as a task where a call of it would be.
                absent = CallTool(call.namespace, call.name, call.arguments)
                answer = shape_refusal(call.serving.config, absent) or not_offered_result(
                    call.namespace, call.name
                )
                keys = call.serving.config.gateway.tasks(call.namespace)
                if declares_tasks(call.ctx) and keys.hold:
                    return await self._tasks.hold(call.ctx, call.namespace, absent, keys, answer)
                return self._answer(answer, call.external)
            if admission.refused:
                return refused_call(admission)
            return await rest(call)

    async def _tasks_stage(self, call: Forwarded, rest: Next[_Answer]) -> _Answer:
        """A caller that follows tasks: the gateway's own task (``"tasks": {"hold": true}``), or
        the backend's (a call without a progress token, served on this replica)."""
        if not declares_tasks(call.ctx):
            return await rest(call)
        keys = call.serving.config.gateway.tasks(call.namespace)
        if keys.hold:
            # The call may take as long as its task lives, whatever the server's callTimeout.
            held = CallTool(call.namespace, call.name, call.arguments, timeout=keys.ttl_ms / 1000.0)
            return await self._tasks.hold(call.ctx, call.namespace, held, keys)
        if _progress_token(call.ctx) is None and not self._requests.routed(call.namespace):
            start = StartTask(call.namespace, call.name, call.arguments)
            return await self._start_task(call.ctx, call.namespace, start, call.external)
        return await rest(call)

    async def _rounds_stage(self, call: Forwarded, rest: Next[_Answer]) -> _Answer:
        """A 2026-07-28 caller of a backend that asks for input: the call runs in rounds."""
        if not self._rounds.applies(call.ctx, call.namespace):
            return await rest(call)
        external = call.external
        held = Held(call.method, call.namespace, lambda result: self._answer(result, external))
        return await self._rounds.start(call.ctx, call.namespace, self._message(call).with_inputs, held)  # type: ignore[no-any-return]

    async def _send(self, call: Forwarded) -> _Answer:
        """The call to its server (here, or on the replica the affinity router names)."""
        result = await self._requests.request(call.ctx, call.namespace, self._message(call))
        return self._answer(result, call.external)

    def _message(self, call: Forwarded) -> CallTool:
        token = _progress_token(call.ctx)
        progress = self._forwarding.progress_sender(call.ctx, token) if token is not None else None
        # Its client answers what the backend asks meanwhile (given here: a copy made to add
        # them later would cost a second message).
        inputs = self._requests.inputs(call.ctx)
        return CallTool(call.namespace, call.name, call.arguments, progress=progress, inputs=inputs)

    async def _start_task(
        self, ctx: Any, namespace: str, start: StartTask, external: str
    ) -> types.CallToolResult | types.InputRequiredResult | TaskAnswer:
        """A call from a client that follows tasks: the backend's task, or its answer."""

        def answer(result: ToolResult) -> types.CallToolResult | TaskAnswer:
            return created(result, namespace, ctx) or self._answer(answered(result), external)

        if self._rounds.applies(ctx, namespace):
            held = Held("tools/call", namespace, answer)
            return await self._rounds.start(ctx, namespace, start.with_inputs, held)  # type: ignore[no-any-return]
        return answer(await self._requests.request(ctx, namespace, start))

    def _answer(self, result: ToolResult, external: str) -> types.CallToolResult:
        if self._gate.polices and is_not_offered(result):
            # Under a policy the backend's hint (the tools it offers) would name what the
            # caller may not see: a tool it does not offer reads as one the caller may not see.
            raise _unknown(external)
        return tool_answer(result, external)

    async def _meta_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | TaskAnswer:
        arguments = dict(params.arguments or {})
        if params.name == SEARCH_TOOLS:
            return await self._search_tools(ctx, arguments)
        name, given = arguments.get("name"), arguments.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(given, Mapping):
            return refused(
                ErrorType.VALIDATION, "call_tool takes 'name' (a tool's name) and 'arguments' (an object)"
            )
        if name in (SEARCH_TOOLS, CALL_TOOL):
            return refused(ErrorType.VALIDATION, f"call {name} itself, not through call_tool")
        try:
            # The same call as a direct one, within this request: its progress token, its cancellation.
            return await self.call_tool(ctx, types.CallToolRequestParams(name=name, arguments=dict(given)))
        except MCPError as exc:
            if exc.code == RATE_LIMITED:
                raise  # as for a direct call: the client is to wait, not to search
            return refused(ErrorType.NOT_FOUND, f"{exc.error.message}; search_tools finds tools by keyword")

    async def _search_tools(self, ctx: Any, arguments: dict[str, Any]) -> types.CallToolResult:
        self._requests.seen(ctx)
        query, limit = arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT)
        if not isinstance(query, str) or not query.strip():
            return refused(ErrorType.VALIDATION, "search_tools needs a 'query': keywords, as text")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return refused(ErrorType.VALIDATION, f"'limit' must be a whole number from 1, got {limit!r}")
        specs: list[ToolSpec] = await self._requests.ask(ListTools(), ctx)
        specs = await self._gate.visible(principal_of(ctx), specs, _use)
        names = self._serving().names
        entries = [(names.external(spec.name), spec) for spec in specs]
        # Indexing a large catalog is CPU work: not on the loop every client is served on.
        matches = await asyncio.to_thread(lambda: ToolIndex(entries).search(query, min(limit, MAX_LIMIT)))
        found = {"tools": [match.to_json() for match in matches]}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(found, ensure_ascii=False))],
            structured_content=found,
        )


def _progress_token(ctx: Any) -> Any:
    return (ctx.meta or {}).get("progress_token") if isinstance(ctx.meta, Mapping) else None


def _use(spec: ToolSpec) -> Use:
    return Use.call(spec.namespace, spec.tool_name)


def _unknown(external: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Unknown tool: {external}")
