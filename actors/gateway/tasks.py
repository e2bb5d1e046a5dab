"""Tasks through the gateway (the tasks extension, SEP-2663): passed through to the backends
that make them.

The gateway advertises ``io.modelcontextprotocol/tasks``. A ``tools/call`` from a client that
declared it goes to the backend as a task start (`StartTask`), the client's capabilities (its
extensions included) being what the backend is told: a backend that makes a task of the call
answers with one, and the client gets a ``CreateTaskResult`` whose ``taskId`` names the backend
and the caller too (``namespace/caller/backendTaskId``), so any later ``tasks/get``,
``tasks/update`` or ``tasks/cancel`` finds its way there, and only for the caller that made it
(another caller is told there is no such task); a backend that answers at once is answered at
once. The input a task waits on is the client's to answer: ``tasks/get`` reports it,
``tasks/update`` carries the answers to the backend.

A call that asks for progress notifications, or to a server whose calls the cluster routes to
the replica that holds its lease, goes as a plain call (a task reports progress as its
``statusMessage``, and a task's later requests could reach a replica that does not run it).

The handlers run on the gateway's loop and hold no state: a task's record is the backend's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

import mcp_types as types
import pydantic
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from starlette.requests import Request

from actors.config import TaskKeys
from actors.gateway.access.principal import principal_of
from actors.gateway.held_tasks import HELD_PREFIX, HeldTasks
from actors.gateway.routing import RuntimeRequests
from actors.mcp.revisions import revision_of
from actors.mcp.tasks import TASKS_EXTENSION, TaskState
from actors.runtime.messages import CallTool
from actors.runtime.task_handles import result_of_state
from actors.runtime.task_messages import CancelTask, GetTask, UpdateTask
from actors.tools import ErrorType, ToolResult

__all__ = [
    "TaskAnswer",
    "TaskIdParams",
    "TaskUpdateParams",
    "Tasks",
    "caller_of",
    "declares_tasks",
]


class TaskIdParams(types.RequestParams):
    """Params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str


class TaskUpdateParams(TaskIdParams):
    """Params of ``tasks/update``: answers keyed as the task's ``inputRequests``."""

    input_responses: dict[str, Any]


class TaskAnswer(types.Result):
    """A task as the extension writes it (``CreateTaskResult``, ``DetailedTask``) or its ack:
    the fields given, as given."""

    model_config = pydantic.ConfigDict(extra="allow")

    result_type: Literal["task", "complete"] = "complete"


def declares_tasks(ctx: Any) -> bool:
    """Whether the client of this request follows tasks: a 2026-07-28 request whose declared
    capabilities (the request's own, on that wire) name the extension."""
    if not revision_of(getattr(ctx, "protocol_version", None)).extensions:
        return False
    capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def created(result: ToolResult, namespace: str, ctx: Any) -> TaskAnswer | None:
    """The client's ``CreateTaskResult`` for a start the backend made a task of, else None
    (it answered the call itself: ``result``'s output is that answer, a task that ended)."""
    state = _state(result)
    if state is None or state.task_id is None:
        return None
    return _answer(state, f"{namespace}/{caller_of(ctx)}", "task", detailed=False)


def answered(result: ToolResult) -> ToolResult:
    """A start the backend answered itself, as the call's `ToolResult` would have been."""
    state = _state(result)
    return result if state is None else result_of_state(state, str(result.metadata.get("server", "")))


class Tasks:
    """The ``tasks/*`` handlers: each admits the request (the client declared the extension,
    ``Mcp-Name`` is the task's id), then asks the backend the id names, or the tasks the gateway
    holds (`HeldTasks`) for an id of theirs."""

    def __init__(self, requests: RuntimeRequests, held: HeldTasks) -> None:
        self._requests = requests
        self.held = held

    async def hold(
        self, ctx: Any, namespace: str, call: CallTool, keys: TaskKeys, answer: ToolResult | None = None
    ) -> TaskAnswer:
        """Answer a call with a task the gateway holds (`HeldTasks.start`; ``answer``: what it
        ends with, never sent)."""
        task = await self.held.start(ctx, namespace, call, keys, caller_of(ctx), answer)
        return TaskAnswer.model_validate({**task, "resultType": "task"})

    async def get(self, ctx: Any, params: TaskIdParams) -> TaskAnswer:
        if params.task_id.startswith(HELD_PREFIX):
            _check_header(ctx, params.task_id)
            held = await self.held.get(params.task_id, caller_of(ctx))
            return TaskAnswer.model_validate({**held, "resultType": "complete"})
        namespace, own = _admit(ctx, params.task_id)
        result = await self._requests.request(ctx, namespace, GetTask(namespace, own, answer=False))
        state = _state(_checked(result, params.task_id))
        if state is None:
            raise MCPError(types.INTERNAL_ERROR, f"the backend said no task of {params.task_id}")
        return _answer(state, f"{namespace}/{caller_of(ctx)}", "complete", detailed=True)

    async def update(self, ctx: Any, params: TaskUpdateParams) -> TaskAnswer:
        if params.task_id.startswith(HELD_PREFIX):
            _check_header(ctx, params.task_id)
            await self.held.update(params.task_id, caller_of(ctx), params.input_responses)
            return TaskAnswer(result_type="complete")
        namespace, own = _admit(ctx, params.task_id)
        message = UpdateTask(namespace, own, dict(params.input_responses))
        _checked(await self._requests.request(ctx, namespace, message), params.task_id)
        return TaskAnswer(result_type="complete")

    async def cancel(self, ctx: Any, params: TaskIdParams) -> TaskAnswer:
        if params.task_id.startswith(HELD_PREFIX):
            _check_header(ctx, params.task_id)
            await self.held.cancel(params.task_id, caller_of(ctx))
            return TaskAnswer(result_type="complete")
        namespace, own = _admit(ctx, params.task_id)
        _checked(await self._requests.request(ctx, namespace, CancelTask(namespace, own)), params.task_id)
        return TaskAnswer(result_type="complete")


def _check_header(ctx: Any, task_id: str) -> None:
    """``Mcp-Name`` is the task's id (a 2026-07-28 request on HTTP: the handshake era has no such
    header), and the client declared the extension."""
    request = getattr(ctx, "request", None)
    if (
        isinstance(request, Request)
        and revision_of(getattr(ctx, "protocol_version", None)).name_headers
        and decode_header_value(request.headers.get(MCP_NAME_HEADER)) != task_id
    ):
        raise MCPError(types.HEADER_MISMATCH, "Mcp-Name header does not match params.taskId")
    require_client_extension(ctx, TASKS_EXTENSION)


def _admit(ctx: Any, task_id: str) -> tuple[str, str]:
    _check_header(ctx, task_id)
    namespace, caller, own = [*task_id.split("/", 2), "", ""][:3]
    if not namespace or caller != caller_of(ctx) or not own:
        # Another caller's task is one that does not exist, as far as this caller can tell.
        raise MCPError(types.INVALID_PARAMS, f"Task not found: {task_id}")
    return namespace, own


def caller_of(ctx: Any) -> str:
    """Who made a task, in its id: a digest of the caller's identity (the same caller, the same
    digest; it is checked against the caller of each later request, never trusted as given)."""
    principal = principal_of(ctx)
    who = f"{principal.mode.value}|{principal.issuer or ''}|{principal.subject}"
    return hashlib.sha256(who.encode()).hexdigest()[:16]


def _checked(result: ToolResult, task_id: str) -> ToolResult:
    if result.success:
        return result
    if result.error_type in (ErrorType.NOT_FOUND, ErrorType.VALIDATION):
        raise MCPError(types.INVALID_PARAMS, f"Task not found: {task_id}")
    raise MCPError(types.INTERNAL_ERROR, result.error or f"task {task_id}: no answer")


def _state(result: ToolResult) -> TaskState | None:
    if not result.success or not isinstance(result.output, dict) or "status" not in result.output:
        return None
    try:
        return TaskState.from_json(result.output)
    except ValueError:
        return None


def _answer(state: TaskState, namespace: str, result_type: str, *, detailed: bool) -> TaskAnswer:
    data = state.to_json()
    data["taskId"] = f"{namespace}/{state.task_id}"
    if not detailed:
        data = {key: value for key, value in data.items() if key not in ("result", "error", "inputRequests")}
    data["resultType"] = result_type
    return TaskAnswer.model_validate(data)
