"""Task handles: a tool call running as a task at its server, for the host to ask after.

`Runtime.start_task` (and `AsyncRuntime.start_task`) start a call as a task where its server
offers tasks (SEP-2663) and hand back a handle: its ``id`` (``"namespace/taskId"``, enough to
find the task again after the host's own restart: `Runtime.task`), its status, its result
once it ended, and cancel. Asking after a task that waits on input answers that input with the
host's handlers first. A call the server answered at once (it offers no tasks, or finished
within the request) is a handle too, already ended, with no ``id``.

Handles hold no mutable state: any thread (or, for `AsyncTaskHandle`, any task of the host's
loop). The pure parts (`state_of`, `result_of_state`, `_next_step`; the pace of asking is
`actors.mcp.tasks.next_poll`) are shared by both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from actors.mcp.requests import result_of
from actors.mcp.tasks import FIRST_POLL, TaskState, TaskStatus, next_poll
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, TaskRequest
from actors.tools import ErrorType, ToolError, ToolResult

__all__ = [
    "AsyncTaskHandle",
    "TaskHandle",
    "find_request",
    "result_of_state",
    "start_request",
    "state_of",
]


def start_request(name: str, arguments: object, timeout: float | None) -> StartTask:
    """The `StartTask` of ``"namespace/tool"`` (its server checks the rest, as for a call)."""
    namespace, _, tool = name.partition("/") if isinstance(name, str) else ("", "", "")
    given = arguments if arguments is not None else {}
    return StartTask(namespace, tool, given, timeout)  # type: ignore[arg-type]  # checked there


def find_request(task_id: str, timeout: float | None) -> GetTask:
    """The `GetTask` of ``"namespace/taskId"`` (a handle's ``id``); a `ToolError`
    (``validation``) for an id that names no server."""
    namespace, slash, own = task_id.partition("/") if isinstance(task_id, str) else ("", "", "")
    if not slash or not namespace or not own:
        raise ToolError("runtime", ErrorType.VALIDATION, f"a task id is 'namespace/taskId', got {task_id!r}")
    return GetTask(namespace, own, timeout)


def state_of(reply: ToolResult, namespace: str) -> TaskState:
    """A task request's answer as the task's state; its failure raised as a `ToolError`."""
    if not reply.success or not isinstance(reply.output, dict):
        raise ToolError(
            namespace, ErrorType(reply.error_type or ErrorType.EXECUTION), reply.error or "no task"
        )
    try:
        return TaskState.from_json(reply.output)
    except ValueError as exc:
        raise ToolError(namespace, ErrorType.SERVER_ERROR, f"not a task: {exc}") from None


def result_of_state(state: TaskState, namespace: str) -> ToolResult:
    """An ended task's outcome as a call's `ToolResult` (a tool error a ``server_error`` with
    its content, a failed task a ``server_error`` with the protocol error, a cancelled one
    ``cancelled``)."""
    name = f"task {namespace}/{state.task_id}" if state.task_id else "the call"
    if state.status == TaskStatus.COMPLETED and state.result is not None:
        return result_of(state.result, namespace)
    if state.status == TaskStatus.FAILED:
        error = state.error
        why = f"{error.message} (code {error.code})" if error is not None else "no reason given"
        return ToolResult.fail(ErrorType.SERVER_ERROR, f"{name} failed: {why}", server=namespace)
    if state.status == TaskStatus.CANCELLED:
        return ToolResult.fail(ErrorType.CANCELLED, f"{name} was cancelled", server=namespace)
    return ToolResult.fail(
        ErrorType.EXECUTION, f"{name} has not ended ({state.status.value})", server=namespace
    )


def _next_step(
    state: TaskState, delay: float, started: float, timeout: float | None, namespace: str
) -> ToolResult | tuple[float, float]:
    """While waiting for a task: its outcome (it ended, or the wait ran out: the task runs on),
    or how long to pause before asking again and the delay after that."""
    if state.status.terminal:
        return result_of_state(state, namespace)
    pause, delay = next_poll(state, delay)
    if timeout is not None and time.monotonic() - started + pause > timeout:
        return ToolResult.fail(
            ErrorType.TIMEOUT,
            f"task {namespace}/{state.task_id} is still {state.status.value} after {timeout:g} s "
            "(it runs on: ask again, or cancel it)",
            server=namespace,
        )
    return pause, delay


class TaskHandle:
    """A call running as a task (`Runtime.start_task`), or found again by its id (`Runtime.task`)."""

    def __init__(
        self,
        namespace: str,
        state: TaskState,
        send: Callable[[TaskRequest, str], ToolResult],
        request_timeout: float | None = None,
    ) -> None:
        self.namespace = namespace
        self.started = state
        """The state when the handle was made (the server's answer to the start, or a first ask)."""
        self._send = send
        self._timeout = request_timeout

    @property
    def id(self) -> str | None:
        """``"namespace/taskId"``; None for a call the server answered at once."""
        return f"{self.namespace}/{self.started.task_id}" if self.started.task_id else None

    def status(self) -> TaskState:
        """The task's state now (its input answered first, if it waits on some)."""
        if self.started.task_id is None:
            return self.started
        reply = self._send(GetTask(self.namespace, self.started.task_id, self._timeout), "tasks/get")
        return state_of(reply, self.namespace)

    def result(
        self, timeout: float | None = None, on_status: Callable[[TaskState], None] | None = None
    ) -> ToolResult:
        """Wait (at most ``timeout`` seconds; None: as long as it runs) for the task to end,
        asking at the server's pace; its outcome as a call's `ToolResult`. ``on_status`` sees
        each state asked (progress is its ``status_message``). A wait that runs out leaves the
        task running and answers ``timeout``; a failed ask answers its error."""
        state, delay, started = self.started, FIRST_POLL, time.monotonic()
        while not isinstance(step := _next_step(state, delay, started, timeout, self.namespace), ToolResult):
            pause, delay = step
            time.sleep(pause)
            try:
                state = self.status()
            except ToolError as exc:
                return ToolResult.fail(exc.error_type, str(exc), server=self.namespace)
            if on_status is not None:
                on_status(state)
        return step

    def cancel(self) -> TaskState:
        """Ask the server to cancel the task; its state after (a task that ended stays as it ended)."""
        if self.started.task_id is None:
            return self.started
        reply = self._send(CancelTask(self.namespace, self.started.task_id, self._timeout), "tasks/cancel")
        return state_of(reply, self.namespace)

    def __repr__(self) -> str:
        return f"<TaskHandle {self.id or 'answered'} {self.started.status.value}>"


class AsyncTaskHandle:
    """`TaskHandle` for `AsyncRuntime`: the same, awaitable; waiting parks no thread."""

    def __init__(
        self,
        namespace: str,
        state: TaskState,
        send: Callable[[TaskRequest, str], Awaitable[ToolResult]],
        request_timeout: float | None = None,
    ) -> None:
        self.namespace = namespace
        self.started = state
        self._send = send
        self._timeout = request_timeout

    @property
    def id(self) -> str | None:
        return f"{self.namespace}/{self.started.task_id}" if self.started.task_id else None

    async def status(self) -> TaskState:
        if self.started.task_id is None:
            return self.started
        reply = await self._send(GetTask(self.namespace, self.started.task_id, self._timeout), "tasks/get")
        return state_of(reply, self.namespace)

    async def result(
        self, timeout: float | None = None, on_status: Callable[[TaskState], None] | None = None
    ) -> ToolResult:
        """As `TaskHandle.result`; cancelling the awaiting task stops the waiting, not the task."""
        state, delay, started = self.started, FIRST_POLL, time.monotonic()
        while not isinstance(step := _next_step(state, delay, started, timeout, self.namespace), ToolResult):
            pause, delay = step
            await asyncio.sleep(pause)
            try:
                state = await self.status()
            except ToolError as exc:
                return ToolResult.fail(exc.error_type, str(exc), server=self.namespace)
            if on_status is not None:
                on_status(state)
        return step

    async def cancel(self) -> TaskState:
        if self.started.task_id is None:
            return self.started
        reply = await self._send(
            CancelTask(self.namespace, self.started.task_id, self._timeout), "tasks/cancel"
        )
        return state_of(reply, self.namespace)

    def __repr__(self) -> str:
        return f"<AsyncTaskHandle {self.id or 'answered'} {self.started.status.value}>"
