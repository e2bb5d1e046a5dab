"""Calls the gateway holds as tasks: any backend's call, for a client that follows tasks.

For a server configured with ``"tasks": {"hold": true}``, a ``tools/call`` from a client that
declared the tasks extension is answered at once with a task the gateway holds (``taskId``
``held:<caller>:<id>``) while the gateway makes the call itself, as a request no client request
waits on. Its record (`actors.gateway.task_records`) is written before the answer (a
``tasks/get`` that follows at once finds it) and whenever the task moves: what the backend asks
meanwhile parks the task ``input_required`` with the questions as ``inputRequests`` until
``tasks/update`` has answered them all; once it ends, its result (or, past ``maxResultBytes``
or for a protocol error, its error) is written, kept ``ttlMs`` from the task's creation.

With ``--cluster`` the records are in Redis, so any replica answers ``tasks/get``; a task whose
replica died is answered ``failed`` (its call died with it), never left ``working``. A cancel or
answers given on another replica are written in the record, where the replica that runs the
call finds them (`_watch`, at the clients' polling pace) and cancels the call at its backend, or
hands the answers over.

Owned by the gateway's loop; `_TaskInputs.ask` (a runtime worker thread) hands over to it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.config import TaskKeys
from actors.gateway.access.limits import RATE_LIMITED
from actors.gateway.conversion import is_not_offered, tool_answer
from actors.gateway.handoff import LoopHandoff
from actors.gateway.relays import ClientRelay
from actors.gateway.rounds import declared
from actors.gateway.routing import RuntimeRequests
from actors.gateway.task_records import POLL_INTERVAL_MS, TaskRecord, TaskRecords
from actors.mcp.inputs import InputRefused
from actors.mcp.tasks import TaskStatus
from actors.mcp.transport import JSONObject
from actors.runtime.messages import CallTool
from actors.tools import ToolResult

__all__ = ["HELD_PREFIX", "HeldTasks"]

logger = logging.getLogger(__name__)

_PROCESS = "process:"
"""How the runner of a lone gateway's held calls is named: this process, as records say."""

HELD_PREFIX = "held:"
"""How the ids of the tasks the gateway holds begin (a backend's task id, passed through,
begins with its server's namespace and a slash)."""


class _TaskInputs:
    """The `CallInputs` of a held call: its questions go to the task's record, its answers come
    with ``tasks/update``. ``capabilities``: what the task's client declared."""

    def __init__(self, held: HeldTasks, task_id: str, capabilities: Mapping[str, Any]) -> None:
        self._held = held
        self._task_id = task_id
        self._capabilities = dict(capabilities)

    @property
    def capabilities(self) -> Mapping[str, Any]:
        return self._capabilities

    def ask(self, requests: Mapping[str, JSONObject]) -> concurrent.futures.Future[Mapping[str, JSONObject]]:
        answers: concurrent.futures.Future[Mapping[str, JSONObject]] = concurrent.futures.Future()
        if not self._held.handoff.call(self._held.asked, self._task_id, dict(requests), answers):
            answers.set_exception(InputRefused(types.INTERNAL_ERROR, "the gateway stopped serving"))
        return answers


@dataclass
class _Running:
    """A held call running here: its task on the loop, and the input it waits on."""

    task: asyncio.Task[None] | None = None
    asked: dict[str, JSONObject] = field(default_factory=dict)
    answers: dict[str, JSONObject] = field(default_factory=dict)
    waiting: concurrent.futures.Future[Mapping[str, JSONObject]] | None = None


class HeldTasks:
    """The tasks this gateway holds; `records` is where every replica finds them."""

    def __init__(
        self,
        requests: RuntimeRequests,
        handoff: LoopHandoff,
        records: TaskRecords,
        replica: str | None = None,
        alive: Callable[[str], bool] | None = None,
        polices: Callable[[], bool] = lambda: False,
    ) -> None:
        self.handoff = handoff
        self._polices = polices
        """Whether a policy is in force: a tool not offered then ends its task without the
        backend's hint, which would name tools its caller may not see."""
        self._requests = requests
        self._records = records
        self._replica = replica if replica is not None else f"{_PROCESS}{uuid.uuid4().hex}"
        """Who runs the calls held here, in their records: the replica, else this process."""
        self._alive = alive
        """Whether a replica is alive (it blocks: called off the loop); None: a lone gateway."""
        self._running: dict[str, _Running] = {}

    async def start(
        self,
        ctx: Any,
        namespace: str,
        call: CallTool,
        keys: TaskKeys,
        caller: str,
        answer: ToolResult | None = None,
    ) -> JSONObject:
        """Hold ``call`` as a task for the client of ``ctx``: the ``CreateTaskResult``'s task.
        ``answer``: what the call ends with, decided here and never sent (a call of a tool its
        caller may not see, answered as one that does not exist)."""
        if await self._records.unfinished(caller) >= keys.per_caller:
            raise MCPError(
                RATE_LIMITED, f"{keys.per_caller} tasks of this caller are unfinished: wait for one"
            )
        task_id = f"{HELD_PREFIX}{caller}:{uuid.uuid4().hex}"
        record = TaskRecord(task_id, caller, namespace, call.tool, keys.ttl_ms, replica=self._replica)
        await self._records.put(record)  # durable before the client hears of it
        watching = bool(self._running)
        running = self._running[task_id] = _Running()
        held = call.with_inputs(_TaskInputs(self, task_id, declared(ctx)))
        running.task = self.handoff.start(self._run(ctx, held, record, keys, answer))
        if not watching and self._alive is not None:  # replicas: others may write its record
            self.handoff.start(self._watch())
        return record.answer(detailed=False)

    async def get(self, task_id: str, caller: str) -> JSONObject:
        record = await self._record(task_id, caller)
        runner = record.replica
        if (
            not record.status.terminal
            and runner not in (None, self._replica)
            and not await self._runs(runner)
        ):
            # Its call died with the replica (or the process, before a restart) that ran it.
            error = {"code": types.INTERNAL_ERROR, "message": f"the gateway that ran it stopped ({runner})"}
            record = record.moved(TaskStatus.FAILED, error=error, input_requests={})
            await self._records.put(record)
        return record.answer(detailed=True)

    async def _runs(self, runner: str | None) -> bool:
        """Whether ``runner`` (another replica, or this gateway's earlier process) still runs."""
        if runner is None or runner.startswith(_PROCESS) or self._alive is None:
            return False
        return await asyncio.to_thread(self._alive, runner)

    async def update(self, task_id: str, caller: str, responses: Mapping[str, Any]) -> None:
        record = await self._record(task_id, caller)
        if record.status.terminal:
            return  # it ended meanwhile: nothing waits for the answers
        given = {key: dict(value) for key, value in responses.items() if key in record.input_requests}
        if task_id in self._running:
            await self._answered(task_id, record, given)
        else:  # for the replica that runs it to take (`_watch`)
            pending = {key: value for key, value in record.input_requests.items() if key not in given}
            answers = {**record.answers, **given}
            status = TaskStatus.INPUT_REQUIRED if pending else TaskStatus.WORKING
            await self._records.put(record.moved(status, input_requests=pending, answers=answers))

    async def cancel(self, task_id: str, caller: str) -> None:
        record = await self._record(task_id, caller)
        if record.status.terminal:
            return  # the same ack: a task that ended stays as it ended
        await self._records.put(record.moved(TaskStatus.CANCELLED, input_requests={}))
        self._stop(task_id)  # here; on another replica its `_watch` sees the record

    def _stop(self, task_id: str) -> None:
        running = self._running.pop(task_id, None)
        if running is not None and running.task is not None:
            running.task.cancel()  # the call is cancelled at its backend

    async def _answered(self, task_id: str, record: TaskRecord, given: Mapping[str, JSONObject]) -> None:
        """Answers for the call running here: the call goes on once every question has one."""
        running = self._running[task_id]
        running.answers.update({key: value for key, value in given.items() if key in running.asked})
        pending = {key: value for key, value in running.asked.items() if key not in running.answers}
        if pending:
            await self._records.put(
                record.moved(TaskStatus.INPUT_REQUIRED, input_requests=pending, answers={})
            )
            return
        waiting, running.waiting = running.waiting, None
        answers, running.asked, running.answers = running.answers, {}, {}
        await self._records.put(record.moved(TaskStatus.WORKING, input_requests={}, answers={}))
        if waiting is not None and not waiting.done():
            waiting.set_result(answers)

    async def _watch(self) -> None:
        """While calls run here: take what other replicas wrote in their records (a cancel,
        answers), at the pace the clients ask."""
        while self._running:
            await asyncio.sleep(POLL_INTERVAL_MS / 1000.0)
            for task_id in list(self._running):
                try:
                    record = await self._records.get(task_id)
                except Exception:  # the records are away: the next round tries again
                    logger.debug("gateway: could not read held task %s", task_id, exc_info=True)
                    continue
                if record is None or record.status == TaskStatus.CANCELLED:
                    self._stop(task_id)
                elif record.answers and task_id in self._running:
                    await self._answered(task_id, record, record.answers)

    def asked(
        self, task_id: str, requests: dict[str, JSONObject], answers: concurrent.futures.Future[Any]
    ) -> None:
        """On the loop: the held call's backend asks ``requests``; park the task for them."""
        running = self._running.get(task_id)
        if running is None:
            answers.set_exception(InputRefused(types.INTERNAL_ERROR, "the task has ended"))
            return
        running.asked, running.answers, running.waiting = dict(requests), {}, answers
        self.handoff.start(self._park(task_id, dict(requests)))

    async def _park(self, task_id: str, requests: JSONObject) -> None:
        record = await self._records.get(task_id)
        if record is not None and not record.status.terminal:
            await self._records.put(record.moved(TaskStatus.INPUT_REQUIRED, input_requests=requests))

    async def _record(self, task_id: str, caller: str) -> TaskRecord:
        record = await self._records.get(task_id)
        if record is None or record.caller != caller:
            # Another caller's task is one that does not exist, as far as this caller can tell.
            raise MCPError(types.INVALID_PARAMS, f"Task not found: {task_id}")
        return record

    async def _run(
        self, ctx: Any, call: CallTool, record: TaskRecord, keys: TaskKeys, answer: ToolResult | None
    ) -> None:
        try:
            if answer is not None:
                result = answer
            else:
                result = await self._requests.held(ctx, record.namespace, call, ClientRelay(ctx))
            if self._polices() and is_not_offered(result):
                error = {"code": types.INVALID_PARAMS, "message": f"Unknown tool: {record.tool}"}
                ended = record.moved(TaskStatus.FAILED, error=error, input_requests={})
            else:
                ended = await _ended(record, result, keys)
        except asyncio.CancelledError:
            return  # cancelled: `cancel` wrote the record
        except Exception as exc:  # the record must end whatever happened to the call
            logger.exception("gateway: held task %s failed", record.task_id)
            ended = record.moved(TaskStatus.FAILED, error={"code": types.INTERNAL_ERROR, "message": str(exc)})
        finally:
            self._running.pop(record.task_id, None)
        try:
            now = await self._records.get(record.task_id)
            if now is not None and not now.status.terminal:  # not cancelled meanwhile
                await self._records.put(ended)
        except Exception:  # the records are away: the record stays as it was, until its ttlMs
            logger.exception("gateway: could not record the end of held task %s", record.task_id)


async def _ended(record: TaskRecord, result: ToolResult, keys: TaskKeys) -> TaskRecord:
    """The record of a held call that answered ``result``."""
    try:
        answer = tool_answer(result, record.tool)
    except MCPError as exc:  # a protocol error: the task failed
        error = {"code": exc.error.code, "message": exc.error.message}
        return record.moved(TaskStatus.FAILED, error=error, input_requests={})
    data = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    # Measured off the loop: a large result is CPU the loop must not spend.
    size = len(await asyncio.to_thread(json.dumps, data))
    if size > keys.max_result_bytes:
        message = f"the result ({size} bytes) is over the task's maxResultBytes ({keys.max_result_bytes})"
        return record.moved(TaskStatus.FAILED, error={"code": types.INTERNAL_ERROR, "message": message})
    return record.moved(TaskStatus.COMPLETED, result=data, input_requests={})
