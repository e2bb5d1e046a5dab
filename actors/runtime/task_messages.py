"""The task requests of the message API: start a tool call as a task, ask after it, cancel it.

A server that offers the tasks extension (SEP-2663) may run a call as a task: the caller gets
the task's state at once and asks again until it ends, whenever it likes, from any process
(the task's id is enough). Each request goes to the server actor of its namespace like a call
(the server starts lazily for it) and is answered with a `ToolResult` whose ``output`` is the
task's state as the extension writes it (`actors.mcp.tasks.TaskState.to_json`): ``taskId``,
``status``, ``statusMessage``, ``pollIntervalMs``, and once it ended ``result`` or ``error``.
A server without tasks answers `StartTask` with the call's result, as a task that ended at
once (no ``taskId``). The facades wrap them in task handles (`actors.runtime.task_handles`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.inputs import CallInputs
from actors.runtime.telemetry import current_context
from actors.tools import ErrorType, RefusalReason, ToolResult
from actors.tools.check import Refusal, check_call, check_timeout

__all__ = ["CancelTask", "GetTask", "StartTask", "TaskRequest", "UpdateTask"]


def _slot() -> concurrent.futures.Future[ToolResult]:
    return concurrent.futures.Future()


def _malformed(why: str) -> Refusal:
    return Refusal(ErrorType.VALIDATION, RefusalReason.MALFORMED, why)


@dataclass(frozen=True, eq=False)
class StartTask:
    """Call ``namespace/tool`` as a task where its server offers tasks; the reply's output is
    the task's state (or the call's result, as a task that ended at once)."""

    namespace: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    """Seconds the *request* may take (not the task); the server's ``callTimeout`` when None."""
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)
    inputs: CallInputs | None = field(default=None, repr=False, compare=False)
    """Answers what the server asks before it makes the task (as `CallTool.inputs`); the
    capabilities they declare are what the server is told, the tasks extension included."""

    @property
    def target(self) -> str:
        return str(self.tool)

    def with_inputs(self, inputs: CallInputs) -> StartTask:
        """This start, with its server's requests answered by ``inputs``."""
        return dataclasses.replace(self, inputs=inputs, reply=_slot())

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this start must not be sent (its names, arguments and timeout), or None."""
        if not isinstance(self.namespace, str) or not isinstance(self.tool, str) or not self.tool:
            return _malformed(f"the tool name {self.namespace!r}/{self.tool!r} is not text")
        return check_call(self.arguments, timeout=self.timeout, max_argument_bytes=max_argument_bytes)


class _OfATask:
    """What the requests about one task share: what they are for, and their one check. A plain
    class (dataclasses take no fields from it): each request declares its own."""

    namespace: str
    task_id: str
    timeout: float | None

    @property
    def target(self) -> str:
        return str(self.task_id)

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this request must not be sent (its names and timeout), or None."""
        if not isinstance(self.namespace, str) or not self.namespace:
            return _malformed(f"the server name {self.namespace!r} is not text")
        if not isinstance(self.task_id, str) or not self.task_id:
            return _malformed(f"the task id {self.task_id!r} is not text")
        return check_timeout(self.timeout)


@dataclass(frozen=True, eq=False)
class GetTask(_OfATask):
    """Ask after task ``task_id`` of server ``namespace``: the reply's output is its state,
    past the input it waited on (the host's handlers answer it first); an unknown task (or
    one expired) is ``not_found``."""

    namespace: str
    task_id: str
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)
    answer: bool = True
    """Answer the input the task waits on with the host's handlers first; False: report it
    (``inputRequests``) for the caller to answer with `UpdateTask` (a gateway's client)."""


@dataclass(frozen=True, eq=False)
class UpdateTask(_OfATask):
    """Answer the input task ``task_id`` of server ``namespace`` waits on: ``responses`` keyed
    as its ``inputRequests`` (a subset may come first). The reply's output is empty (the
    extension's ack); the task's state comes with the next `GetTask`."""

    namespace: str
    task_id: str
    responses: Mapping[str, Any]
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        if not isinstance(self.responses, Mapping):
            return _malformed("the responses to a task's input are an object keyed as its inputRequests")
        return super().refusal(max_argument_bytes)


@dataclass(frozen=True, eq=False)
class CancelTask(_OfATask):
    """Ask server ``namespace`` to cancel task ``task_id``: the reply's output is its state
    after the ask (``cancelled``, or how it had ended before)."""

    namespace: str
    task_id: str
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)


TaskRequest = StartTask | GetTask | UpdateTask | CancelTask
"""The task requests, each answered with a `ToolResult` whose output is a task's state."""
