"""Requests beyond tools as what `MCPToolAdapter` sends on a transport: one coroutine function
per request, run on the loop in the request's task."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from actors.mcp.inputs import CALL_INPUTS, CallInputs
from actors.mcp.tasks import TaskState, TaskTransport
from actors.mcp.transport import ClientTransport, JSONObject, Request, RequestTransport, ServerReplyError

__all__ = ["TASK_NOT_FOUND", "completion_of", "completion_request", "prompt_request", "task_request"]

TASK_NOT_FOUND = frozenset({-32602})
"""How a server says it knows no such task (``tasks/get``, ``tasks/cancel``)."""


def prompt_request(
    name: str, arguments: dict[str, str], timeout: float, inputs: CallInputs | None
) -> Callable[[ClientTransport], Any]:
    async def get(t: ClientTransport) -> JSONObject:
        if inputs is not None:
            CALL_INPUTS.set(inputs)  # this task's own context: it ends with the request
        return await t.get_prompt(name, arguments, timeout)

    return get


def completion_request(
    ref: JSONObject, argument: dict[str, str], arguments_so_far: dict[str, str] | None, timeout: float
) -> Callable[[ClientTransport], Any]:
    """``completion/complete`` as a request value (``ref`` and ``argument`` checked by the
    `Complete` message); its answer is the ``completion`` object."""
    params: JSONObject = {"ref": dict(ref), "argument": dict(argument)}
    if arguments_so_far is not None:
        params["context"] = {"arguments": dict(arguments_so_far)}
    request = Request("completion/complete", params)

    async def complete(t: ClientTransport) -> JSONObject:
        if not isinstance(t, RequestTransport):
            raise ServerReplyError(f"the {t.kind} transport sends no completion/complete", -32601)
        return completion_of(await t.send(request, timeout))

    return complete


def completion_of(answer: Mapping[str, Any]) -> JSONObject:
    """The ``completion`` of a ``CompleteResult`` (as JSON); -32603 if it has no list of texts."""
    completion = answer.get("completion")
    values = completion.get("values") if isinstance(completion, Mapping) else None
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise ServerReplyError(
            "the server's answer to completion/complete is malformed: its values are not texts",
            -32603,
        )
    return dict(completion)  # type: ignore[arg-type]


def task_request(
    action: str,
    target: str,
    arguments: dict[str, Any] | None,
    timeout: float,
    inputs: CallInputs | None = None,
) -> tuple[str, frozenset[int], Callable[[ClientTransport], Any]]:
    """``start``: call tool ``target`` keeping the task the server makes of it (``inputs``
    answer what it asks before; on a transport without tasks, its answer as a task that ended
    at once); ``get`` (its input answered by the host first), ``look`` (its input reported),
    ``update`` (``arguments``: the answers) and ``cancel``: of task ``target``. What it is
    called, the codes that say "no such task", and the request, whose answer is the task's
    `TaskState` as JSON (``update``: empty)."""

    async def send(t: ClientTransport) -> JSONObject:
        given = dict(arguments or {})
        if action == "start":
            if inputs is not None:
                CALL_INPUTS.set(inputs)  # this task's own context: it ends with the request
            if isinstance(t, TaskTransport):
                return (await t.start_task(target, given, timeout)).to_json()
            return TaskState.answered(await t.call_tool(target, given, timeout)).to_json()
        if not isinstance(t, TaskTransport):
            raise ServerReplyError(f"the {t.kind} transport keeps no tasks", -32602)
        if action == "update":
            await t.update_task(target, given, timeout)
            return {}
        if action == "cancel":
            return (await t.cancel_task(target, timeout)).to_json()
        return (await t.get_task(target, timeout, answer=action == "get")).to_json()

    if action == "start":
        return f"tools/call {target}", frozenset(), send
    return f"tasks/{'get' if action == 'look' else action} {target}", TASK_NOT_FOUND, send
