"""`Calls`: a server's requests in flight, its counters, and the hand-off of their completions.

`Calls` is owned by the server actor's thread. A request's answer arrives on the event-loop
thread, which settles the caller's reply at once and puts a `CallDone` into `Completions`, the
one object both threads touch: the loop side only `put`s, the actor side only `drain`s (before
each message it handles, so a completion costs no wake-up of its own and every message sees
the counts up to date).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import itertools
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from actors.mcp.adapter import MCPToolAdapter
from actors.mcp.request_functions import task_request
from actors.mcp.skill_requests import INVALID_PARAMS, skill_request
from actors.runtime.clock import Clock
from actors.runtime.host import HostCalls
from actors.runtime.latency import Latencies
from actors.runtime.messages import CallDone, CallTool, Complete, GetPrompt, ReadResource, ServerRequest
from actors.runtime.owner import OwnerCheck
from actors.runtime.refusals import answer_refusal
from actors.runtime.reply import failure, settle
from actors.runtime.semconv import bounded_json, capturing, request_attributes, span_name
from actors.runtime.skill_messages import SkillRequest
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, UpdateTask
from actors.runtime.telemetry import end_span, instruments, request_span, run_in
from actors.runtime.waiting import Waiting
from actors.tools import ErrorType, ToolResult, ToolSpec, duration_text
from actors.tools.check import Refusal

__all__ = ["Calls", "Completions"]

logger = logging.getLogger(__name__)

_ids = itertools.count(1)


class Completions:
    """Completions handed from the loop thread (`put`) to the actor's thread (`drain`)."""

    def __init__(self) -> None:
        # deque.append and popleft are atomic: no lock on the hot path.
        self._done: collections.deque[CallDone] = collections.deque()
        self._reader = OwnerCheck("the completions' reading side")

    def __bool__(self) -> bool:
        return bool(self._done)

    def put(self, done: CallDone) -> None:
        """Any thread (the loop's, in practice)."""
        self._done.append(done)

    def drain(self) -> list[CallDone]:
        """The actor's thread only."""
        self._reader.touch()
        out = []
        while self._done:
            out.append(self._done.popleft())
        return out


class Calls:
    def __init__(
        self,
        namespace: str,
        adapter: MCPToolAdapter,
        host: HostCalls | None,
        clock: Clock,
        offered: Callable[[], Mapping[str, ToolSpec] | None] = lambda: None,
    ) -> None:
        self.namespace = namespace
        self.offered = offered
        """The tools the server is known to offer, read on the owner's thread as each call goes:
        a tool call's input schema is checked by the adapter off this thread against its spec
        (`admission` checked all else), or by the adapter's own list when none is known."""
        self.adapter = adapter
        self.host = host
        self.clock = clock
        self.in_flight: dict[int, ServerRequest] = {}
        self.calls = 0
        self.errors = 0
        self.latencies = Latencies()
        self.last_call_error: str | None = None
        """The `ErrorType` value of the last call that failed (the operator's page shows it)."""
        self.last_call_error_at: float | None = None
        self.last_activity = clock.monotonic()
        self.completions = Completions()
        self.open_tasks: dict[str, float] = {}
        """The tasks the server runs for callers here, by id, until when (the runtime's clock):
        the server is busy while one is open (an idle stop would end it)."""
        self._owner = OwnerCheck(f"{namespace}'s calls")

    def busy(self, now: float) -> bool:
        """Whether a call is in flight, or a task the server runs has not ended (nor outlived
        its ``ttlMs``)."""
        for task_id in [key for key, until in self.open_tasks.items() if until <= now]:
            del self.open_tasks[task_id]
        return bool(self.in_flight or self.open_tasks)

    def touch(self) -> None:
        """Note activity now (the idle clock starts again)."""
        self.last_activity = self.clock.monotonic()

    def answer(self, call: ServerRequest, result: ToolResult) -> None:
        """Answer ``call`` here (refused, expired, failed before it went) and count it."""
        self.calls += 1
        if not result.success:
            self.errors += 1
            self._failed(result.error_type)
        settle(call.reply, result)

    def refuse(self, call: ServerRequest, refusal: Refusal) -> None:
        """Answer ``call`` with what the one check refused it for: counted, with its span."""
        self.calls += 1
        self.errors += 1
        self._failed(refusal.error_type)
        answer_refusal(call, refusal, self.namespace)

    def answer_all(self, calls: list[ServerRequest], result: ToolResult) -> None:
        for call in calls:
            self.answer(call, result)

    def count_completions(self) -> None:
        self._owner.touch()
        for done in self.completions.drain():
            call = self.in_flight.pop(done.call_id, None)
            self.calls += 1
            self.latencies.note(done.duration_ms)
            if done.error_type is not None:
                self.errors += 1
                self._failed(done.error_type)
            self.last_activity = max(self.last_activity, done.at)
            if done.task is not None:
                task_id, ended, ttl_ms = done.task
                if ended:
                    self.open_tasks.pop(task_id, None)
                else:
                    self.open_tasks[task_id] = done.at + (ttl_ms or _TASK_TTL_MS) / 1000.0
            if call is not None and logger.isEnabledFor(logging.DEBUG):
                outcome = done.error_type or "ok"
                logger.debug(
                    "%s/%s: %s in %.1f ms",
                    self.namespace,
                    call.target,
                    outcome,
                    done.duration_ms,
                    extra={
                        "mcp_event": "call",
                        "namespace": self.namespace,
                        "tool": call.target,
                        "duration_ms": done.duration_ms,
                        "outcome": outcome,
                    },
                )

    def _failed(self, error_type: str | None) -> None:
        """A call failed with ``error_type`` (an `ErrorType` value): kept as the last one."""
        if error_type is not None:
            self.last_call_error = str(error_type)
            self.last_call_error_at = self.clock.wall()

    def fail_in_flight(self, result: ToolResult) -> None:
        """Answer every call in flight with ``result`` now (its session is about to close under
        it); each is counted, as answered, when its request ends."""
        for call in self.in_flight.values():
            settle(call.reply, result)

    def cancel_all(self, why: str) -> None:
        """The actor ends: answer every call in flight ``cancelled``."""
        self.count_completions()
        for call in list(self.in_flight.values()):
            settle(call.reply, ToolResult.fail(ErrorType.CANCELLED, why))
        self.in_flight.clear()

    def send_waited(
        self,
        entries: list[Waiting],
        now: float,
        refusal: Callable[[ServerRequest], Refusal | None],
        total: Callable[[ServerRequest], float],
        restarts: int,
    ) -> None:
        """Send the requests that waited for the start, each with what is left of its time."""
        for entry in entries:
            if entry.call.reply.done():
                continue  # its caller cancelled it while it waited
            # One bad call (or a schema we cannot use) must not leave the others unanswered.
            try:
                # Start-up may have taught us the tool list: check the call against it now.
                if (refused := refusal(entry.call)) is not None:
                    self.refuse(entry.call, refused)
                    continue
                left, waited = max(entry.deadline - now, 0.001), now - entry.queued_at
                self.send(entry.call, left, total(entry.call), restarts, waited=waited)
            except Exception as exc:
                logger.exception("%s: could not send a queued call", self.namespace)
                self.answer(entry.call, ToolResult.fail(ErrorType.EXECUTION, f"internal error: {exc!r}"))

    def send(
        self,
        call: ServerRequest,
        timeout: float,
        total: float | None,
        restarts: int,
        waited: float = 0.0,
    ) -> None:
        """Send ``call`` with ``timeout`` seconds left of its ``total`` (None: all of it is left);
        ``waited`` went to a start.
        """
        self._owner.touch()
        total = timeout if total is None else total
        call_id = next(_ids)
        self.in_flight[call_id] = call
        self.last_activity = self.clock.monotonic()
        put, monotonic = self.completions.put, self.clock.monotonic
        labels = {"namespace": self.namespace, "target": call.target}
        span = request_span(span_name(call), call.trace_context, {})
        if span.is_recording():  # attributes only for a span that keeps them
            adapter, info = self.adapter, self.adapter.server_info
            attributes = request_attributes(
                call, self.namespace, adapter.config, info.protocol_version if info is not None else None
            )
            attributes["mcp_actors.server.pid"] = adapter.pid or 0
            attributes["mcp_actors.server.restarts"] = restarts
            span.set_attributes(attributes)
        metrics = instruments()
        metrics.in_flight.add(1, labels)

        def done(future: concurrent.futures.Future[ToolResult]) -> None:
            # Runs on the loop thread: note the completion for the actor, then answer the caller.
            if (exc := failure(future)) is not None:  # the loop stopped or the task was cancelled
                result = ToolResult.fail(ErrorType.CANCELLED, str(exc) or type(exc).__name__)
            else:
                result = future.result()
            if (answered := _answered(call.reply)) is not None:  # already, by the host's stop
                result = answered.model_copy(update={"duration_ms": result.duration_ms})
            if result.error_type == ErrorType.TIMEOUT and waited > 0:
                result = result.model_copy(
                    update={
                        "error": f"timeout: {call.target} got no answer within {duration_text(total)} "
                        f"({duration_text(waited)} of it went to starting the server); "
                        "the server was told to cancel it"
                    }
                )
            put(
                CallDone(
                    call_id, result.error_type, result.duration_ms, monotonic(), _task_news(call, result)
                )
            )
            settle(call.reply, result)
            if span.is_recording() and isinstance(call, CallTool | StartTask) and capturing():
                span.set_attribute("gen_ai.tool.call.result", bounded_json(result.output))
            end_span(span, result.error_type, result.error, result.duration_ms)
            outcome = {**labels, "outcome": result.error_type or "ok"}
            metrics.in_flight.add(-1, labels)
            metrics.calls.add(1, outcome)
            metrics.latency.record(result.duration_ms, outcome)
            if result.error_type is not None:
                metrics.errors.add(1, outcome)

        try:
            future = self._request(call, timeout, run_in(span))
        except Exception as exc:
            del self.in_flight[call_id]
            metrics.in_flight.add(-1, labels)
            end_span(span, ErrorType.CONNECTION, str(exc), 0.0)
            self.answer(call, ToolResult.fail(ErrorType.CONNECTION, str(exc)))
            return
        # A caller that cancels its reply cancels the request at the server. Weakly: the reply
        # holding the request's future, which holds `done`, which holds the call and so the
        # reply, would be a reference cycle: garbage for the cycle collector on every call.
        call.reply.add_done_callback(functools.partial(_cancel_with, weakref.ref(future)))
        future.add_done_callback(done)

    def _request(
        self, call: ServerRequest, timeout: float, trace: Any
    ) -> concurrent.futures.Future[ToolResult]:
        adapter = self.adapter
        match call:
            case CallTool():
                progress = _progress(self.host, call) if call.progress is not None else None
                spec = tools.get(call.tool) if (tools := self.offered()) is not None else None
                return adapter.invoke_future(
                    call.tool,
                    call.arguments,
                    timeout,
                    validated=spec is None,
                    schema_of=spec,
                    progress=progress,
                    context=trace,
                    inputs=call.inputs,
                )
            case ReadResource():
                return adapter.read_future(call.uri, timeout, context=trace)
            case GetPrompt():
                return adapter.prompt_future(
                    call.prompt, dict(call.arguments), timeout, context=trace, inputs=call.inputs
                )
            case Complete():
                context = dict(call.context) if call.context is not None else None
                return adapter.complete_future(
                    dict(call.ref), dict(call.argument), context, timeout, context=trace
                )
            case StartTask():
                ask = task_request("start", call.tool, call.arguments, timeout, call.inputs)
            case GetTask():
                ask = task_request("get" if call.answer else "look", call.task_id, None, timeout)
            case UpdateTask():
                ask = task_request("update", call.task_id, dict(call.responses), timeout)
            case CancelTask():
                ask = task_request("cancel", call.task_id, None, timeout)
            case SkillRequest():
                capabilities = info.capabilities if (info := adapter.server_info) is not None else {}
                what, send = skill_request(call.action, capabilities, timeout, uri=call.uri, skill=call.skill)
                return adapter.ask_future(trace, what, timeout, send, INVALID_PARAMS)
        what, missing, send = ask
        return adapter.ask_future(trace, what, timeout, send, missing)


_TASK_TTL_MS = 3_600_000
"""How long a task the server gave no ``ttlMs`` keeps its server up."""


def _task_news(call: ServerRequest, result: ToolResult) -> tuple[str, bool, int | None] | None:
    """What a task request's answer says of its task, for the idle clock (on the loop: cheap)."""
    output = result.output
    if not isinstance(call, StartTask | GetTask | CancelTask) or not isinstance(output, dict):
        return None
    task_id, status, ttl = output.get("taskId"), output.get("status"), output.get("ttlMs")
    if not isinstance(task_id, str):
        return None
    ended = status in ("completed", "failed", "cancelled")
    return task_id, ended, ttl if isinstance(ttl, int) else None


def _progress(host: HostCalls | None, call: CallTool) -> Any:
    report = call.progress

    async def progress(done: float, total: float | None, message: str | None) -> None:
        # On the loop: hand the news to the host's thread, in order, and return.
        if host is not None and report is not None:
            host.notify(report, done, total, message)

    return progress


def _answered(reply: concurrent.futures.Future[ToolResult]) -> ToolResult | None:
    """What ``reply`` was answered with before its request ended, if it was (not cancelled)."""
    if not reply.done() or reply.cancelled() or reply.exception() is not None:
        return None
    return reply.result()


def _cancel_with(
    request: weakref.ref[concurrent.futures.Future[Any]], reply: concurrent.futures.Future[Any]
) -> None:
    """The caller cancelled ``reply``: cancel the request (if it is still under way)."""
    future = request()
    if reply.cancelled() and future is not None:
        future.cancel()
