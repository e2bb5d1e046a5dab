"""The tasks extension (SEP-2663) on the SDK's client: its capability, its ``resultType: "task"``
claim, and ``tasks/get``, ``tasks/update`` and ``tasks/cancel``.

`TasksExtension` is given to every `mcp.Client` the transport makes: the SDK advertises it (on
2026-07-28 sessions only, where its claim is active) and hands a ``tools/call`` answered with a
task to its claim. A plain call then ends the way the SDK's own claims do: `finish` asks
``tasks/get`` at the server's pace until the task ends, answering the input it asks for through
the session's handlers, and returns the tool's result. A caller that wants the task itself
(`start`) gets its `TaskState` and asks again (`get`): each ``tasks/get`` that finds the task
waiting on input answers it (``tasks/update``) before it reports.

Run on the event-loop thread, like the rest of the transport.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import mcp_types as types
import pydantic
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from actors.mcp.inputs import CallInputs
from actors.mcp.sdk_transport.convert import outcome, to_json
from actors.mcp.sdk_transport.rounds import MAX_ROUNDS, in_rounds
from actors.mcp.tasks import FIRST_POLL, TASKS_EXTENSION, TaskState, TaskStatus, next_poll, outcome_json
from actors.mcp.transport import CallOutcome

__all__ = ["TasksExtension", "cancel", "finish", "get", "start", "update"]

logger = logging.getLogger(__name__)

_MAX_INPUT_ROUNDS = 10
"""How many rounds of input one ``tasks/get`` answers before it reports what it found."""


class CreatedTask(types.Result):
    """A ``tools/call`` answered with a task (the extension's flat ``CreateTaskResult``)."""

    model_config = pydantic.ConfigDict(extra="allow")

    result_type: Literal["task"] = "task"
    task_id: str
    status: str = "working"
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class _TaskParams(types.RequestParams):
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _GetTask(types.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class _UpdateTask(types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class _CancelTask(types.Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class _TaskAnswer(types.Result):
    """Any answer, kept whole (a task as ``tasks/get`` writes it, or an empty ack)."""

    model_config = pydantic.ConfigDict(extra="allow")


async def _resolve(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    # The SDK's claim hook: a plain call that the server made a task ends with its result.
    state = await finish(ctx.session, _state(created))
    return types.CallToolResult.model_validate(outcome_json(_result(state)))


class TasksExtension(ClientExtension):
    """The client side of ``io.modelcontextprotocol/tasks`` for `mcp.Client(extensions=...)`."""

    identifier = TASKS_EXTENSION

    def claims(self) -> tuple[ResultClaim[Any], ...]:
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=_resolve),)


async def start(
    client: Client,
    name: str,
    arguments: dict[str, Any],
    rounds: tuple[CallInputs, float] | None = None,
    progress: ProgressFnT | None = None,
) -> TaskState:
    """``tools/call``, keeping a task the server makes of it: its state, or the result (a
    `TaskState` that ended at once) when it answered the call itself. What the server asks
    before it makes the task (``InputRequiredResult`` rounds) is answered by ``rounds``' inputs,
    else by the session's handlers."""
    session = client.session

    async def send(responses: types.InputResponses | None, state: str | None) -> Any:
        return await session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
            allow_claimed=True,
        )

    if rounds is not None:
        result = await in_rounds(client, send, rounds[0], rounds[1])
    else:
        result = await send(None, None)
        for _ in range(MAX_ROUNDS):
            if not isinstance(result, types.InputRequiredResult):
                break
            asked = {key: to_json(request) for key, request in (result.input_requests or {}).items()}
            answers = _RESPONSES.validate_python(await _answers(session, asked)) if asked else None
            result = await send(answers, result.request_state)
    if isinstance(result, CreatedTask):
        return _state(result)
    if isinstance(result, types.CallToolResult):
        # ``session.call_tool`` has checked it against the tool's output schema.
        return TaskState.answered(outcome(result))
    kind = type(result).__name__
    raise MCPError(types.INTERNAL_ERROR, f"an answer to tools/call of an unknown kind: {kind}")


async def get(session: ClientSession, task_id: str, *, answer: bool = True) -> TaskState:
    """``tasks/get``; with ``answer``, a task that waits on input has it answered by the
    session's handlers (the host's) and is asked again, so what comes back is past what it
    asked (without, the input is reported for the caller to answer: `update`)."""
    state = await _get(session, task_id)
    if not answer:
        return state
    rounds = 0
    while state.status == TaskStatus.INPUT_REQUIRED and state.input_requests and rounds < _MAX_INPUT_ROUNDS:
        rounds += 1
        answers = await _answers(session, state.input_requests)
        params = _UpdateParams(task_id=task_id, input_responses=answers)
        await session.send_request(_UpdateTask(params=params), _TaskAnswer)
        state = await _get(session, task_id)
    return state


async def update(session: ClientSession, task_id: str, responses: Mapping[str, Any]) -> None:
    """``tasks/update`` with answers keyed as the task's ``inputRequests`` (its empty ack)."""
    params = _UpdateParams(task_id=task_id, input_responses=dict(responses))
    await session.send_request(_UpdateTask(params=params), _TaskAnswer)


async def cancel(session: ClientSession, task_id: str) -> TaskState:
    """``tasks/cancel``, then the task as ``tasks/get`` says (the ack carries no state)."""
    await session.send_request(_CancelTask(params=_TaskParams(task_id=task_id)), _TaskAnswer)
    return await _get(session, task_id)


async def finish(session: ClientSession, state: TaskState) -> TaskState:
    """Ask ``tasks/get`` at the server's pace until the task ends; its last state."""
    delay = FIRST_POLL
    while not state.status.terminal:
        if state.task_id is None:
            raise MCPError(types.INTERNAL_ERROR, "a task without an id")
        pause, delay = next_poll(state, delay)
        await anyio.sleep(pause)
        state = await get(session, state.task_id)
    return state


def _result(state: TaskState) -> CallOutcome:
    """The tool's result of a task that ended; raises `MCPError` for one that did not complete."""
    if state.status == TaskStatus.COMPLETED and state.result is not None:
        return state.result
    if state.status == TaskStatus.FAILED and state.error is not None:
        raise MCPError(state.error.code, state.error.message, state.error.data)
    if state.status == TaskStatus.CANCELLED:
        raise MCPError(types.INTERNAL_ERROR, f"task {state.task_id} was cancelled")
    raise MCPError(types.INTERNAL_ERROR, f"task {state.task_id} ended {state.status.value} without a result")


async def _get(session: ClientSession, task_id: str) -> TaskState:
    answer = await session.send_request(_GetTask(params=_TaskParams(task_id=task_id)), _TaskAnswer)
    try:
        return TaskState.from_json({"taskId": task_id, **answer.model_dump(by_alias=True, exclude_none=True)})
    except ValueError as exc:
        raise MCPError(types.INTERNAL_ERROR, f"tasks/get {task_id}: {exc}") from None


def _state(created: CreatedTask) -> TaskState:
    return TaskState.from_json(created.model_dump(by_alias=True, exclude_none=True))


async def _answers(session: ClientSession, requests: Mapping[str, Any]) -> dict[str, Any]:
    """The answers to one round of a task's input requests, by key (the session's handlers
    hand each to the host, off the loop)."""
    answers: dict[str, Any] = {}
    for key, raw in requests.items():
        request = _INPUT_REQUEST.validate_python(raw)
        ctx = ClientRequestContext(session=session, request_id=key)
        answer = await session.dispatch_input_request(ctx, request)
        if isinstance(answer, types.ErrorData):
            raise MCPError(answer.code, answer.message, answer.data)
        answers[key] = to_json(answer)
    return answers


_INPUT_REQUEST: pydantic.TypeAdapter[types.InputRequest] = pydantic.TypeAdapter(types.InputRequest)
_RESPONSES: pydantic.TypeAdapter[types.InputResponses] = pydantic.TypeAdapter(types.InputResponses)
