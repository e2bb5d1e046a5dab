"""An SDK `MCPServer` serving the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Run it as ``python -m tests.servers.task_server [--transport stdio|streamable-http] [--port N]
[--ttl-ms N] [--poll-ms N]``. Talked to directly over streamable HTTP, it passes the ten
``tasks-*`` server scenarios of the conformance suite 0.2.0 (tests/conformance/test_task_server.py).

The extension is an SDK `Extension` (`TasksExtension`): it advertises itself under
``capabilities.extensions``, serves ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on the
2026-07-28 wire (``MethodBinding``s) and intercepts ``tools/call``. A call to a task tool from a
request that declares the extension in its capabilities gets a flat ``CreateTaskResult``
(``resultType: "task"``, ``taskId``, ``status``, ``createdAt``, ``lastUpdatedAt``, ``ttlMs``,
``pollIntervalMs``) while the SDK's own ``tools/call`` handler runs the tool in the background;
``tasks/get`` answers the task with its ``result`` (a tool error is ``completed`` with
``isError``), its ``error`` (an `MCPError` raised by the tool: ``failed``) or its outstanding
``inputRequests`` inlined. Without the extension an ``optional`` task tool runs synchronously and
a ``required`` one is refused with -32021 (``requiredCapabilities`` in the error data), as are the
``tasks/*`` methods. ``tasks/result`` and ``tasks/list`` are not served (-32601). On HTTP the
``tasks/*`` methods need ``Mcp-Name`` equal to ``params.taskId`` (-32020, HTTP 400, otherwise).

Tasks live in this process's memory. Each is granted ``--ttl-ms`` (default 60000) from its
creation: after that it is swept (its work cancelled if still running) and ``tasks/get`` answers
-32602, as for any unknown task. ``--poll-ms`` (default 250) is the ``pollIntervalMs`` it asks.
A task tool reports progress as the task's ``statusMessage`` (the spec has no
``notifications/progress`` for tasks) and asks for input through `TaskHandle.ask`, which parks
the task in ``input_required`` until ``tasks/update`` answers every key it asked. No
``notifications/tasks`` are sent (they are optional).

Tools (task support in brackets):

- ``greet(name)`` [sync only]: ``Hello, {name}!``;
- ``slow_compute(seconds, label)`` [optional]: sleeps ``seconds`` (0: at once), then says so; a
  ``tasks/cancel`` stops the sleep and the task settles ``cancelled``;
- ``failing_job(seconds=1)`` [required]: a tool error (``isError``) after ``seconds``;
- ``protocol_error_job`` [optional]: raises a JSON-RPC error (-32603): the task ``failed``;
- ``confirm_delete(filename)`` [required]: one elicitation (key ``confirm``, ``{confirm: bool}``);
- ``multi_input`` [required]: two elicitations (keys ``first``, ``second``) outstanding at once;
- ``test_tool_with_task`` [required]: asks ``user_name`` by MRTR (an ``InputRequiredResult``)
  before any task, then answers ``Hello, {name}!`` from a task;
- ``progress_job(steps=5, interval=0.2)`` [optional]: ``statusMessage`` ``step i/n`` per step
  in a task, ``notifications/progress`` when run synchronously with a progress token;
- ``counter`` [sync only]: how many tasks this process has ``started``, ``completed``,
  ``failed``, ``cancelled`` (work actually stopped by ``tasks/cancel``), ``expired`` (swept at
  their TTL) and how many are ``live`` (held in memory).
"""

from __future__ import annotations

import argparse
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    MissingRequiredClientCapabilityErrorData,
    RequestParams,
    Result,
)
from mcp_types import methods as wire_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request

__all__ = ["TASKS", "TaskHandle", "TaskStore", "TasksExtension", "build", "current_task", "main"]

logger = logging.getLogger(__name__)

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier (SEP-2663)."""

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TaskSupport = Literal["optional", "required"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- wire shapes -----------------------------------------------------------------------------


class TaskIdParams(RequestParams):
    """Params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str


class UpdateTaskParams(TaskIdParams):
    """Params of ``tasks/update``: answers keyed like the task's ``inputRequests``."""

    input_responses: dict[str, Any]


class TaskFields(Result):
    """The extension's ``Task``: what every task-shaped result carries."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int
    poll_interval_ms: int


class CreateTaskResult(TaskFields):
    """``tools/call``'s answer when the server runs the call as a task: flat ``Result & Task``."""

    result_type: Literal["task"] = "task"


class GetTaskResult(TaskFields):
    """``tasks/get``'s answer: the ``DetailedTask`` for the task's status."""

    result_type: Literal["complete"] = "complete"
    input_requests: dict[str, dict[str, Any]] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


# --- tasks -----------------------------------------------------------------------------------


@dataclass
class Task:
    """One task's state, held by the `TaskStore`."""

    task_id: str
    ttl_ms: int
    poll_ms: int
    created: float = field(default_factory=time.monotonic)
    created_at: str = field(default_factory=_now)
    updated_at: str = ""
    status: TaskStatus = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: dict[str, dict[str, Any]] = field(default_factory=lambda: {})
    """Outstanding input requests, by key, in their wire form."""
    answers: dict[str, ElicitResult] = field(default_factory=lambda: {})
    used_keys: set[str] = field(default_factory=set)
    answered: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def __post_init__(self) -> None:
        self.updated_at = self.created_at

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        return now - self.created >= self.ttl_ms / 1000

    def move(self, status: TaskStatus, message: str | None = None) -> None:
        """Change status (never out of a terminal one) and the status message."""
        if self.terminal:
            return
        self.status = status
        self.status_message = message
        self.updated_at = _now()

    def fields(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "status": self.status,
            "status_message": self.status_message,
            "created_at": self.created_at,
            "last_updated_at": self.updated_at,
            "ttl_ms": self.ttl_ms,
            "poll_interval_ms": self.poll_ms,
        }

    def created_result(self) -> CreateTaskResult:
        return CreateTaskResult(**self.fields())

    def detailed(self) -> GetTaskResult:
        detailed = GetTaskResult(**self.fields())
        if self.status == "input_required":
            detailed.input_requests = dict(self.asked)
        elif self.status == "completed":
            detailed.result = self.result
        elif self.status == "failed":
            detailed.error = self.error
        return detailed


@dataclass
class Counts:
    started: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    expired: int = 0


class TaskHandle:
    """What a tool running as a task sees of its task (`current_task`)."""

    def __init__(self, task: Task) -> None:
        self._task = task

    @property
    def task_id(self) -> str:
        return self._task.task_id

    def say(self, message: str) -> None:
        """Set the task's ``statusMessage`` (its progress, as ``tasks/get`` shows it)."""
        self._task.move(self._task.status, message)

    async def ask(
        self, requests: Mapping[str, ElicitRequest], message: str | None = None
    ) -> dict[str, ElicitResult]:
        """Park the task in ``input_required`` with ``requests`` outstanding (keys unique over
        the task's life) until ``tasks/update`` has answered every one; the answers by key."""
        task = self._task
        if reused := task.used_keys.intersection(requests):
            raise ValueError(f"input request keys already used by this task: {sorted(reused)}")
        task.used_keys.update(requests)
        for key, request in requests.items():
            task.asked[key] = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.move("input_required", message or "Waiting for input")
        while any(key not in task.answers for key in requests):
            await task.answered.wait()
            task.answered = anyio.Event()
        task.move("working", None)
        return {key: task.answers.pop(key) for key in requests}


_current: ContextVar[TaskHandle | None] = ContextVar("task_server_current_task", default=None)


def current_task() -> TaskHandle | None:
    """The task the calling tool runs as, or None when it runs synchronously."""
    return _current.get()


class TaskStore:
    """Tasks in memory, their counts, and the task group their work runs in."""

    def __init__(self, ttl_ms: int, poll_ms: int) -> None:
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.tasks: dict[str, Task] = {}
        self.counts = Counts()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The task group tasks run in, and the sweeper, for the server's lifetime."""
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._sweep_forever)
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def _sweep_forever(self) -> None:
        while True:
            await anyio.sleep(max(0.05, min(self.ttl_ms / 4000, 1.0)))
            self.sweep()

    def sweep(self) -> None:
        """Forget tasks past their TTL, cancelling work that still runs."""
        now = time.monotonic()
        for task_id in [t.task_id for t in self.tasks.values() if t.expired(now)]:
            task = self.tasks.pop(task_id)
            self.counts.expired += 1
            task.scope.cancel()

    def get(self, task_id: str) -> Task:
        self.sweep()
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(
                code=INVALID_PARAMS, message=f"Task not found: {task_id}", data={"taskId": task_id}
            )
        return task

    def start(self, work: Callable[[], Awaitable[HandlerResult]], version: str) -> Task:
        """Record a new task (so ``tasks/get`` resolves it at once) and start ``work`` for it."""
        if self._group is None:
            raise MCPError(code=INTERNAL_ERROR, message="The task runner is not running")
        self.sweep()
        task = Task(task_id=str(uuid.uuid4()), ttl_ms=self.ttl_ms, poll_ms=self.poll_ms)
        self.tasks[task.task_id] = task
        self.counts.started += 1
        self._group.start_soon(self._run, task, work, version)
        return task

    async def _run(self, task: Task, work: Callable[[], Awaitable[HandlerResult]], version: str) -> None:
        _current.set(TaskHandle(task))
        with task.scope:
            try:
                self._complete(task, await work(), version)
            except MCPError as exc:
                self._fail(task, exc.error)
            except Exception:  # never out of here: it would end the task group, the server's
                logger.exception("task %s crashed", task.task_id)
                self._fail(task, ErrorData(code=INTERNAL_ERROR, message="Internal error"))
        if task.scope.cancelled_caught and task.status == "cancelled":
            self.counts.cancelled += 1

    def _fail(self, task: Task, error: ErrorData) -> None:
        if task.terminal:
            return
        task.error = error.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.move("failed", error.message)
        self.counts.failed += 1

    def _complete(self, task: Task, outcome: HandlerResult, version: str) -> None:
        if task.terminal:
            return
        if not isinstance(outcome, CallToolResult):
            # An InputRequiredResult has no place in a task: its input goes through tasks/update.
            self._fail(task, ErrorData(code=INTERNAL_ERROR, message="The tool did not return a tool result"))
            return
        dumped = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.result = wire_methods.serialize_server_result("tools/call", version, dumped)
        task.move("completed", "The tool returned an error" if outcome.is_error else None)
        self.counts.completed += 1

    def cancel(self, task_id: str) -> None:
        task = self.get(task_id)
        if task.terminal:
            return
        task.move("cancelled", "Cancelled by tasks/cancel")
        task.scope.cancel()

    def update(self, task_id: str, responses: Mapping[str, Any]) -> None:
        task = self.get(task_id)
        delivered = False
        for key, response in responses.items():
            if key not in task.asked:
                continue  # never asked, already answered or superseded: ignored (SEP-2663)
            try:
                answer = ElicitResult.model_validate(response)
            except ValidationError:
                raise MCPError(code=INVALID_PARAMS, message=f"Invalid input response for {key!r}") from None
            del task.asked[key]
            task.answers[key] = answer
            delivered = True
        if delivered:
            task.answered.set()


# --- the extension ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskTool:
    """A tool the extension may run as a task.

    ``gather``: input request keys the tool asks by MRTR (an ``InputRequiredResult``) before a
    task is worth creating; the call runs synchronously until they are all answered (SEP-2663:
    resolve MRTR exchanges before returning a ``CreateTaskResult``).
    """

    support: TaskSupport
    gather: tuple[str, ...] = ()


def _missing_tasks_capability() -> MCPError:
    data = MissingRequiredClientCapabilityErrorData(
        required_capabilities=ClientCapabilities(extensions={TASKS: {}})
    )
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"This tool runs only as a task: declare the {TASKS} extension",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


def _declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request may get a task: a 2026-era request whose capabilities (on that wire,
    the request's own ``_meta`` ones) name the extension."""
    if ctx.protocol_version not in MODERN:
        return False
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and TASKS in (capabilities.extensions or {})


def _check_routing_header(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """On HTTP, ``Mcp-Name`` must be the task id (SEP-2663 routing headers; SEP-2243 -32020)."""
    request = ctx.request
    if not isinstance(request, Request):
        return
    if decode_header_value(request.headers.get(MCP_NAME_HEADER)) != task_id:
        raise MCPError(code=HEADER_MISMATCH, message="Mcp-Name header does not match params.taskId")


class TasksExtension(Extension):
    """The tasks extension over a `TaskStore`, for the tools named in ``tools``."""

    identifier = TASKS

    def __init__(self, store: TaskStore, tools: Mapping[str, TaskTool]) -> None:
        self.store = store
        self.task_tools = dict(tools)

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get, MODERN),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, MODERN),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, MODERN),
        )

    def _admit(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
        _check_routing_header(ctx, task_id)
        require_client_extension(ctx, TASKS)

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._admit(ctx, params.task_id)
        return self.store.get(params.task_id).detailed()

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> HandlerResult:
        self._admit(ctx, params.task_id)
        self.store.update(params.task_id, params.input_responses)
        return None  # the empty ack: {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._admit(ctx, params.task_id)
        self.store.cancel(params.task_id)
        return None

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        tool = self.task_tools.get(params.name)
        if tool is None:
            return await call_next(ctx)
        if not _declares_tasks(ctx):
            if tool.support == "required":
                raise _missing_tasks_capability()
            return await call_next(ctx)
        answered = params.input_responses or {}
        if any(key not in answered for key in tool.gather):
            return await call_next(ctx)
        version = ctx.protocol_version or max(MODERN)
        return self.store.start(lambda: call_next(ctx), version).created_result()


# --- the tools -------------------------------------------------------------------------------


class Confirm(BaseModel):
    confirm: bool = Field(description="Go ahead?")


class Name(BaseModel):
    name: str = Field(description="A name")


def _form(message: str, schema: type[BaseModel]) -> ElicitRequest:
    return ElicitRequest(
        params=ElicitRequestFormParams(message=message, requested_schema=render_elicitation_schema(schema))
    )


def _running_task() -> TaskHandle:
    task = current_task()
    if task is None:
        raise ToolError("this tool runs only as a task")
    return task


def build(ttl_ms: int = 60_000, poll_ms: int = 250) -> MCPServer[None]:
    store = TaskStore(ttl_ms, poll_ms)
    extension = TasksExtension(
        store,
        {
            "slow_compute": TaskTool("optional"),
            "failing_job": TaskTool("required"),
            "protocol_error_job": TaskTool("optional"),
            "confirm_delete": TaskTool("required"),
            "multi_input": TaskTool("required"),
            "test_tool_with_task": TaskTool("required", gather=("user_name",)),
            "progress_job": TaskTool("optional"),
        },
    )

    @asynccontextmanager
    async def lifespan(_: MCPServer[None]) -> AsyncIterator[None]:
        async with store.running():
            yield

    server: MCPServer[None] = MCPServer("task-server", extensions=[extension], lifespan=lifespan)

    @server.tool()
    def greet(name: str) -> str:
        """Greets ``name``; never a task."""
        return f"Hello, {name}!"

    @server.tool()
    async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
        """Sleeps ``seconds`` then answers; a task when the client declares the tasks extension."""
        task = current_task()
        if task is not None:
            task.say(f"computing for {seconds}s")
        await anyio.sleep(seconds)
        return f"Computed {label or 'result'} after {seconds}s"

    @server.tool()
    async def failing_job(seconds: float = 1.0) -> str:
        """Fails (a tool error) after ``seconds``; runs only as a task."""
        await anyio.sleep(seconds)
        raise ToolError("failing_job failed, as it always does")

    @server.tool()
    async def protocol_error_job() -> str:
        """Raises a JSON-RPC internal error (-32603): a failed task, or an error response."""
        await anyio.sleep(0.1)
        raise MCPError(code=INTERNAL_ERROR, message="protocol_error_job broke, as it always does")

    @server.tool()
    async def confirm_delete(filename: str) -> str:
        """Asks for a confirmation (key ``confirm``), then deletes ``filename`` (pretends to)."""
        answers = await _running_task().ask({"confirm": _form(f"Delete {filename}?", Confirm)})
        answer = answers["confirm"]
        if answer.action == "accept" and (answer.content or {}).get("confirm") is True:
            return f"Deleted {filename}"
        return f"Kept {filename} ({answer.action})"

    @server.tool()
    async def multi_input() -> str:
        """Asks two questions at once (keys ``first`` and ``second``), then echoes the names."""
        answers = await _running_task().ask(
            {"first": _form("First name?", Name), "second": _form("Second name?", Name)},
            "Waiting for two answers",
        )
        names = [
            str((answers[key].content or {}).get("name", answers[key].action)) for key in ("first", "second")
        ]
        return "Got " + " and ".join(names)

    @server.tool()
    async def test_tool_with_task(ctx: Context) -> str | InputRequiredResult:
        """Asks ``user_name`` by MRTR before any task, then greets from a task."""
        answer = (ctx.input_responses or {}).get("user_name")
        if not isinstance(answer, ElicitResult):
            return InputRequiredResult(input_requests={"user_name": _form("What is your name?", Name)})
        name = (answer.content or {}).get("name") if answer.action == "accept" else None
        await anyio.sleep(0.2)
        return f"Hello, {name}!" if name else f"No name ({answer.action})"

    @server.tool()
    async def progress_job(ctx: Context, steps: int = 5, interval: float = 0.2) -> str:
        """Works ``steps`` steps of ``interval`` seconds; its progress is the task's statusMessage
        (``step i/n``), or notifications/progress when run synchronously."""
        task = current_task()
        for step in range(1, steps + 1):
            if task is not None:
                task.say(f"step {step}/{steps}")
            else:
                await ctx.report_progress(step, steps, f"step {step}/{steps}")
            await anyio.sleep(interval)
        return f"Done {steps} steps"

    @server.tool()
    def counter() -> dict[str, int]:
        """How many tasks this process started, completed, failed, had cancelled (work stopped by
        tasks/cancel) and expired (swept at their TTL), and how many it holds (live)."""
        counts = store.counts
        return {
            "started": counts.started,
            "completed": counts.completed,
            "failed": counts.failed,
            "cancelled": counts.cancelled,
            "expired": counts.expired,
            "live": len(store.tasks),
        }

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ttl-ms", type=int, default=60_000, help="the ttlMs granted to every task")
    parser.add_argument("--poll-ms", type=int, default=250, help="the pollIntervalMs asked of clients")
    args = parser.parse_args(argv)
    if args.ttl_ms <= 0 or args.poll_ms <= 0:
        parser.error("--ttl-ms and --poll-ms must be positive")
    server = build(args.ttl_ms, args.poll_ms)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
