"""`ServerActor`: one MCP server, its transport and its lifecycle state machine."""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import itertools
import logging
import time
import weakref
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Any

import pykka

from actors.mcp.adapter import MCPToolAdapter
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.transport import RemoteTool, ServerInfo, StartRefused
from actors.runtime.answering import AnsweringActor
from actors.runtime.host import HostCalls
from actors.runtime.messages import (
    ArmIdle,
    CallDone,
    CallExpired,
    CallTool,
    CannotStart,
    CatalogChanged,
    CatalogRelisted,
    CatalogUpdated,
    Closed,
    Complete,
    ConnectionLost,
    DescribeTools,
    GetPrompt,
    GetStatus,
    GiveUp,
    HealthCheck,
    IdleCheck,
    LoginNeeded,
    ProbeDone,
    ReadResource,
    ResetRestarts,
    ResourceSubscription,
    ResourceUpdated,
    Restart,
    Retire,
    ServerCrashed,
    ServerRequest,
    ServerStatus,
    ServerStopped,
    ServerUp,
    Shutdown,
    Started,
    StartFailed,
    StartServer,
    StayDown,
    StopServer,
    Subscribed,
    SubscribeResource,
    ToolsChanged,
    ToolsRelisted,
    ToolsUpdated,
    UnsubscribeResource,
    refuse,
)
from actors.runtime.refusals import answer_refusal
from actors.runtime.reply import failure, pipe, settle, settle_exception, tell
from actors.runtime.schema_cache import CachedLists
from actors.runtime.state import ServerState
from actors.runtime.telemetry import end_span, instruments, request_span, run_in
from actors.runtime.timers import TimerService
from actors.tools import ErrorType, RefusalReason, ToolError, ToolResult, ToolSpec, duration_text
from actors.tools.check import Refusal, not_offered
from actors.tools.schema import compile_input_check

__all__ = ["ServerActor"]

logger = logging.getLogger(__name__)

# A health probe gets at least this long to answer, however short the interval.
_MIN_PROBE_TIMEOUT = 2.0

# MCP log levels (RFC 5424) as Python logging levels.
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}

_AT_REST_OR_STOPPING = (ServerState.IDLE, ServerState.STOPPED, ServerState.STOPPING)

_call_ids = itertools.count(1)
_subscription_ids = itertools.count(1)


class _Link(Enum):
    """The connection beneath the lifecycle state: what the transport itself is doing."""

    DOWN = "down"
    OPENING = "opening"
    UP = "up"
    CLOSING = "closing"


class _Then(Enum):
    """What to do once the link settles: a start asked for while it closes, a stop while it
    opens, or a start asked for while a stop of an opening link is under way."""

    NOTHING = "nothing"
    START = "start"
    STOP = "stop"
    STOP_THEN_START = "stop, then start"


class _Relist(Enum):
    """Re-listing tools after ``list_changed``: at most one in flight and one more owed."""

    IDLE = "idle"
    RUNNING = "running"
    OWED = "owed"


@dataclass
class _Waiting:
    """A request queued until the server is running."""

    call: ServerRequest
    queued_at: float
    deadline: float
    timer_key: tuple[str, str, int]


@dataclass(frozen=True)
class _Subscriber:
    uri: str
    on_update: Any


def _emit_log(namespace: str, level: str, source: str | None, data: Any) -> None:
    """Log a server's log message on ``actors.server.<namespace>`` (on a host thread)."""
    text = data if isinstance(data, str) else repr(data)
    logging.getLogger(f"actors.server.{namespace}").log(
        _LOG_LEVELS.get(level, logging.INFO),
        "%s%s",
        f"[{source}] " if source else "",
        text,
        extra={
            "mcp_event": "server_log",
            "namespace": namespace,
            "level": level,
            "source": source,
            "data": data,
        },
    )


class _Events:
    """The transport's news, turned into messages to the server actor (on the loop thread)."""

    def __init__(
        self, ref: pykka.ActorRef[Any], connection: int, namespace: str, host: HostCalls | None
    ) -> None:
        self._ref = ref
        self._connection = connection
        self._namespace = namespace
        self._host = host

    def on_closed(self, reason: str) -> None:
        tell(self._ref, ConnectionLost(self._connection, reason))

    def on_tools_changed(self) -> None:
        tell(self._ref, ToolsChanged(self._connection))

    def on_resources_changed(self) -> None:
        tell(self._ref, CatalogChanged(self._connection))

    def on_prompts_changed(self) -> None:
        tell(self._ref, CatalogChanged(self._connection))

    def on_resource_updated(self, uri: str) -> None:
        tell(self._ref, ResourceUpdated(self._connection, uri))

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        # Logging runs the host's handlers: never on the loop.
        if self._host is not None:
            self._host.notify(_emit_log, self._namespace, level, logger, data)


class ServerActor(AnsweringActor):
    """Owns one MCP server: starts it lazily, multiplexes calls over its one session, stops it
    when idle, and reports crashes to the supervisor.

    Tool calls never block this thread: each goes to the event loop and its completion comes
    back as a message, so status requests and health checks are answered while calls run.
    """

    stopped_reason = "the server actor stopped"

    def __init__(
        self,
        config: ServerConfig,
        adapter: MCPToolAdapter,
        *,
        timers: TimerService,
        supervisor: pykka.ActorRef[Any] | None = None,
        registry: pykka.ActorRef[Any] | None = None,
        host: HostCalls | None = None,
        known: CachedLists | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.config = config
        self.adapter = adapter
        self.timers = timers
        self.supervisor = supervisor
        self.registry = registry
        self._state = ServerState.IDLE
        self.link = _Link.DOWN
        self.then = _Then.NOTHING
        self.relist = _Relist.IDLE
        self.relist_catalog = _Relist.IDLE
        self.retired: str | None = None
        """Why this server takes no more work (it is being unregistered), once it is."""
        self.connection = 0
        self.start_future: concurrent.futures.Future[Any] | None = None
        self.probe: concurrent.futures.Future[None] | None = None
        self.probe_timeouts = 0
        self.start_began = 0.0
        self.info: ServerInfo | None = None
        self.tools: dict[str, ToolSpec] | None = None
        """The tools it offers, once known (it ran, or the schema cache knew): calls are checked
        against them before the server is woken."""
        self.catalog = Catalog()
        if known is not None:
            self.tools = {spec.tool_name: spec for spec in known.tools}
            self.catalog = known.catalog
        self.subscribers: dict[int, _Subscriber] = {}
        self.waiting: dict[int, _Waiting] = {}
        self.in_flight: dict[int, ServerRequest] = {}
        self.completions: collections.deque[CallDone] = collections.deque()
        """Calls answered on the loop, for this actor's bookkeeping: read (on this thread) before
        each message, so a completion costs no wake-up of its own and every message (a status
        request, an idle check, the next call) sees the counts up to date."""
        self.describe_waiters: list[concurrent.futures.Future[list[ToolSpec]]] = []
        self.start_waiters: list[concurrent.futures.Future[ServerStatus]] = []
        self.stop_waiters: list[concurrent.futures.Future[ServerStatus]] = []
        self.last_activity = time.monotonic()
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.restarts = 0
        self.health_check_failures = 0
        self.calls = 0
        self.errors = 0

    @property
    def namespace(self) -> str:
        return self.config.name

    @property
    def state(self) -> ServerState:
        return self._state

    @state.setter
    def state(self, new: ServerState) -> None:
        old, self._state = self._state, new
        if new != old:
            instruments().state_changes.add(1, {"namespace": self.namespace, "state": str(new)})
            logger.info(
                "%s: %s -> %s",
                self.namespace,
                old,
                new,
                extra={
                    "mcp_event": "state",
                    "namespace": self.namespace,
                    "state": str(new),
                    "previous": str(old),
                },
            )

    # ---- the mailbox ------------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        # An exception escaping a tell handler would kill this actor and strand its callers.
        try:
            if self.completions:
                self._count_completions()
            self._handle(message)
        except Exception as exc:
            logger.exception("%s: error handling %r", self.namespace, type(message).__name__)
            refuse(message, ErrorType.EXECUTION, f"{self.namespace}: internal error: {exc!r}")
        return None

    def _handle(self, message: Any) -> None:
        """Requests from outside (the registry, the supervisor, callers) and timer ticks."""
        match message:
            case CallTool() | ReadResource() | GetPrompt() | Complete():
                self._on_call(message)
            case GetStatus(reply=reply):
                settle(reply, [self.status()])
            case DescribeTools(reply=reply):
                self._on_describe(reply)
            case StartServer(reply=reply):
                self._on_start_request(reply)
            case StopServer(reply=reply) | Shutdown(reply=reply):
                self._on_stop_request(reply)
            case Retire(reason=reason, reply=reply):
                self._on_retire(reason, reply)
            case SubscribeResource():
                self._on_subscribe(message)
            case UnsubscribeResource(subscription=sid, reply=reply):
                self._on_unsubscribe(sid, reply)
            case IdleCheck():
                self._on_idle_check()
            case HealthCheck():
                self._on_health_check()
            case Restart():
                self._on_restart()
            case GiveUp(reason=reason):
                self._on_give_up(reason)
            case StayDown():
                self._on_stay_down()
            case CallExpired(call=call):
                self._on_call_expired(call)
            case _:
                self._handle_news(message)

    def _handle_news(self, message: Any) -> None:
        """Completions piped back from the loop and the transport's pushed news; news of an
        earlier connection is stale and dropped."""
        match message:
            case Started(connection=c, info=info, tools=tools, catalog=catalog) if c == self.connection:
                self._on_started(info, tools, catalog)
            case StartFailed(connection=c, error=error) if c == self.connection:
                self._on_start_failed(error, retry=True)
            case CannotStart(connection=c, error=error) if c == self.connection:
                self._on_start_failed(error, retry=False)
            case LoginNeeded(connection=c, error=error) if c == self.connection:
                self._on_login_needed(error)
            case Closed(connection=c) if c == self.connection:
                self._on_closed()
            case ConnectionLost(connection=c, reason=reason) if c == self.connection:
                self._on_connection_lost(reason)
            case ProbeDone(connection=c, error=error, error_type=error_type) if c == self.connection:
                self._on_probe_done(error, error_type)
            case ToolsChanged(connection=c) if c == self.connection and self.state == ServerState.RUNNING:
                self._relist()
            case ToolsRelisted(connection=c, tools=tools, error=error) if c == self.connection:
                self._on_relisted(tools, error)
            case CatalogChanged(connection=c) if c == self.connection and self.state == ServerState.RUNNING:
                self._relist_catalog()
            case CatalogRelisted(connection=c, catalog=catalog, error=error) if c == self.connection:
                self._on_catalog_relisted(catalog, error)
            case ResourceUpdated(connection=c, uri=uri) if c == self.connection:
                self._on_resource_updated(uri)
            case Subscribed(connection=c, uri=uri, error=error) if c == self.connection and error is not None:
                logger.warning("%s: could not subscribe to %s: %s", self.namespace, uri, error)
            case _:
                logger.debug("%s: ignored %r", self.namespace, message)

    # ---- requests (tool calls, reads, prompts, completions) ------------------------------

    def _refused(self, call: ServerRequest) -> Refusal | None:
        """Why ``call`` cannot go to the server (the one check, `actors.tools.check`, against
        what the server is known to offer), or None."""
        match call:
            case CallTool():
                # A running server's adapter checks the input schema off the loop and off this
                # mailbox (its patterns may take up to their budget); a call that would wake the
                # server is checked whole here, so that bad arguments do not start it.
                return call.refusal(
                    self.config.max_argument_bytes,
                    offered=self.tools,
                    server=self.namespace,
                    schema=self.state != ServerState.RUNNING,
                )
            case GetPrompt() if self.tools is not None:
                if (refusal := call.refusal(self.config.max_argument_bytes)) is not None:
                    return refusal
                prompts = {p.prompt_name: p for p in self.catalog.prompts}
                prompt = prompts.get(call.prompt)
                if prompt is None:
                    return not_offered("prompt", call.prompt, prompts, self.namespace)
                missing = [name for name in prompt.required if name not in call.arguments]
                if missing:
                    return Refusal(
                        ErrorType.VALIDATION,
                        RefusalReason.SCHEMA,
                        f"prompt {call.prompt!r} needs the argument{'s' if len(missing) > 1 else ''} "
                        + ", ".join(repr(m) for m in missing),
                    )
        return call.refusal(self.config.max_argument_bytes)

    def _refuse(self, call: ServerRequest, refusal: Refusal) -> None:
        self.calls += 1
        self.errors += 1
        answer_refusal(call, refusal, self.namespace)

    def _on_call(self, call: ServerRequest) -> None:
        if self.retired is not None:
            self._answer(call, ToolResult.fail(ErrorType.CANCELLED, self.retired))
            return
        # Check what can be checked without waking the server: the tool and its arguments.
        if (refusal := self._refused(call)) is not None:
            self._refuse(call, refusal)
            return
        match self.state:
            case ServerState.RUNNING:
                self._dispatch(call, self._timeout(call))
            case ServerState.FAILED:
                self._answer(
                    call,
                    ToolResult.fail(
                        ErrorType.FAILED,
                        f"server {self.namespace!r} is failed after {self.restarts} restarts "
                        f"({self.last_error}); start it explicitly to try again",
                    ),
                )
            case ServerState.STARTING | ServerState.RESTARTING | ServerState.STOPPING:
                self._queue(call)
            case ServerState.IDLE | ServerState.STOPPED:
                if not self.config.lazy_start:
                    self._answer(
                        call,
                        ToolResult.fail(
                            ErrorType.NOT_STARTED,
                            f"server {self.namespace!r} is not running and lazyStart is off; start it first",
                        ),
                    )
                    return
                self._queue(call)
                self._begin_start()

    def _timeout(self, call: ServerRequest) -> float:
        return call.timeout if call.timeout is not None else self.config.call_timeout

    def _send(self, call: ServerRequest, timeout: float, trace: Any) -> concurrent.futures.Future[ToolResult]:
        match call:
            case CallTool():
                progress = self._progress(call) if call.progress is not None else None
                # Checked on the mailbox but for the input schema: the adapter checks that.
                spec = self.tools.get(call.tool) if self.tools is not None else None
                return self.adapter.invoke_future(
                    call.tool,
                    call.arguments,
                    timeout,
                    validated=spec is None,
                    schema_of=spec,
                    progress=progress,
                    context=trace,
                )
            case ReadResource():
                return self.adapter.read_future(call.uri, timeout, context=trace)
            case GetPrompt():
                return self.adapter.prompt_future(call.prompt, dict(call.arguments), timeout, context=trace)
            case Complete():
                context = dict(call.context) if call.context is not None else None
                return self.adapter.complete_future(
                    dict(call.ref), dict(call.argument), context, timeout, context=trace
                )

    def _span_name(self, call: ServerRequest) -> str:
        match call:
            case CallTool():
                return f"mcp.call_tool {self.namespace}/{call.tool}"
            case ReadResource():
                return f"mcp.read_resource {self.namespace}"
            case GetPrompt():
                return f"mcp.get_prompt {self.namespace}/{call.prompt}"
            case Complete():
                return f"mcp.complete {self.namespace}"

    def _progress(self, call: CallTool) -> Any:
        host, report = self.host, call.progress

        async def progress(done: float, total: float | None, message: str | None) -> None:
            # On the loop: hand the news to the host's thread, in order, and return.
            if host is not None and report is not None:
                host.notify(report, done, total, message)

        return progress

    def _dispatch(self, call: ServerRequest, timeout: float, waited: float = 0.0) -> None:
        """Send ``call`` with ``timeout`` seconds left of its own; ``waited`` went to a start."""
        call_id = next(_call_ids)
        self.in_flight[call_id] = call
        self.last_activity = time.monotonic()
        completions = self.completions
        total = self._timeout(call)
        labels = {"namespace": self.namespace, "target": call.target}
        span = request_span(
            self._span_name(call),
            call.trace_context,
            {
                "mcp_actors.namespace": self.namespace,
                "mcp_actors.target": call.target,
                "mcp_actors.server.pid": self.adapter.pid or 0,
                "mcp_actors.server.restarts": self.restarts,
            },
        )
        metrics = instruments()
        metrics.in_flight.add(1, labels)

        def done(future: concurrent.futures.Future[ToolResult]) -> None:
            # Runs on the loop thread: note the completion for the actor, then answer the caller.
            if (exc := failure(future)) is not None:  # the loop stopped or the task was cancelled
                result = ToolResult.fail(ErrorType.CANCELLED, str(exc) or type(exc).__name__)
            else:
                result = future.result()
            if result.error_type == ErrorType.TIMEOUT and waited > 0:
                result = result.model_copy(
                    update={
                        "error": f"timeout: {call.target} got no answer within {duration_text(total)} "
                        f"({duration_text(waited)} of it went to starting the server); "
                        "the server was told to cancel it"
                    }
                )
            completions.append(CallDone(call_id, result.error_type, result.duration_ms, time.monotonic()))
            settle(call.reply, result)
            end_span(span, result.error_type, result.error, result.duration_ms)
            outcome = {**labels, "outcome": result.error_type or "ok"}
            metrics.in_flight.add(-1, labels)
            metrics.calls.add(1, outcome)
            metrics.latency.record(result.duration_ms, outcome)
            if result.error_type is not None:
                metrics.errors.add(1, outcome)

        try:
            future = self._send(call, timeout, run_in(span))
        except Exception as exc:
            del self.in_flight[call_id]
            metrics.in_flight.add(-1, labels)
            end_span(span, ErrorType.CONNECTION, str(exc), 0.0)
            self._answer(call, ToolResult.fail(ErrorType.CONNECTION, str(exc)))
            return
        # A caller that cancels its reply cancels the request at the server. Weakly: the reply
        # holding the request's future, which holds `done`, which holds the call and so the
        # reply, would be a reference cycle: garbage for the cycle collector on every call.
        call.reply.add_done_callback(functools.partial(_cancel_with, weakref.ref(future)))
        future.add_done_callback(done)

    def _count_completions(self) -> None:
        completions = self.completions
        while completions:
            self._on_call_done(completions.popleft())

    def _on_call_done(self, done: CallDone) -> None:
        call = self.in_flight.pop(done.call_id, None)
        self.calls += 1
        if done.error_type is not None:
            self.errors += 1
        self.last_activity = max(self.last_activity, done.at)
        if call is not None and logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s/%s: %s in %.1f ms",
                self.namespace,
                call.target,
                done.error_type or "ok",
                done.duration_ms,
                extra={
                    "mcp_event": "call",
                    "namespace": self.namespace,
                    "tool": call.target,
                    "duration_ms": done.duration_ms,
                    "outcome": done.error_type or "ok",
                },
            )

    def _answer(self, call: ServerRequest, result: ToolResult) -> None:
        self.calls += 1
        if not result.success:
            self.errors += 1
        settle(call.reply, result)

    def _queue(self, call: ServerRequest) -> None:
        call_id = next(_call_ids)
        timeout = self._timeout(call)
        key = ("call-deadline", self.namespace, call_id)
        now = time.monotonic()
        self.waiting[call_id] = _Waiting(call, now, now + timeout, key)
        ref = self.actor_ref
        self.timers.schedule(key, timeout, lambda: tell(ref, CallExpired(call)))

    def _on_call_expired(self, call: ServerRequest) -> None:
        for call_id, waiting in list(self.waiting.items()):
            if waiting.call is call:
                del self.waiting[call_id]
                self._answer(
                    call,
                    ToolResult.fail(
                        ErrorType.TIMEOUT,
                        f"server {self.namespace!r} was not ready within "
                        f"{duration_text(self._timeout(call))} (state {self.state})",
                    ),
                )

    def _flush_waiting(self) -> None:
        waiting, self.waiting = self.waiting, {}
        now = time.monotonic()
        for entry in waiting.values():
            self.timers.cancel(entry.timer_key)
            if entry.call.reply.done():
                continue  # its caller cancelled it while it waited
            # One bad call (or a schema we cannot use) must not leave the others unanswered.
            try:
                # Start-up may have taught us the tool list: check the call against it now.
                if (refusal := self._refused(entry.call)) is not None:
                    self._refuse(entry.call, refusal)
                    continue
                self._dispatch(entry.call, max(entry.deadline - now, 0.001), waited=now - entry.queued_at)
            except Exception as exc:
                logger.exception("%s: could not send a queued call", self.namespace)
                self._answer(entry.call, ToolResult.fail(ErrorType.EXECUTION, f"internal error: {exc!r}"))

    def _fail_waiting(self, error_type: ErrorType, message: str) -> None:
        waiting, self.waiting = self.waiting, {}
        for entry in waiting.values():
            self.timers.cancel(entry.timer_key)
            self._answer(entry.call, ToolResult.fail(error_type, message))

    # ---- subscriptions ------------------------------------------------------------------

    def _on_subscribe(self, message: SubscribeResource) -> None:
        if self.retired is not None:
            settle_exception(message.reply, ToolError(self.namespace, ErrorType.CANCELLED, self.retired))
            return
        if not isinstance(message.uri, str) or not callable(message.on_update):
            settle_exception(
                message.reply,
                ToolError(self.namespace, ErrorType.VALIDATION, "a subscription needs a uri and a callable"),
            )
            return
        sid = next(_subscription_ids)
        fresh = all(s.uri != message.uri for s in self.subscribers.values())
        self.subscribers[sid] = _Subscriber(message.uri, message.on_update)
        settle(message.reply, ResourceSubscription(self.namespace, message.uri, sid, self.actor_ref))
        if self.state == ServerState.RUNNING:
            if fresh:
                self._subscribe(message.uri)
        elif (
            self.state in (ServerState.IDLE, ServerState.STOPPED, ServerState.STOPPING)
            and self.config.lazy_start
        ):
            self._begin_start()  # while stopping: once the stop is done

    def _subscribe(self, uri: str, *, subscribe: bool = True) -> None:
        connection = self.connection

        def outcome(future: concurrent.futures.Future[ToolResult]) -> Subscribed:
            if (exc := failure(future)) is not None:
                return Subscribed(connection, uri, _reason(exc))
            result = future.result()
            return Subscribed(connection, uri, None if result.success else result.error)

        pipe(self.adapter.subscribe_future(uri, subscribe=subscribe), self.actor_ref, outcome)

    def _on_unsubscribe(self, sid: int, reply: concurrent.futures.Future[bool]) -> None:
        gone = self.subscribers.pop(sid, None)
        settle(reply, gone is not None)
        if gone is None or any(s.uri == gone.uri for s in self.subscribers.values()):
            return
        if self.state == ServerState.RUNNING:
            self._subscribe(gone.uri, subscribe=False)
        if not self.subscribers:
            self.last_activity = time.monotonic()
            self._arm_idle(self.config.idle_timeout)

    def _on_resource_updated(self, uri: str) -> None:
        for subscriber in self.subscribers.values():
            if subscriber.uri == uri and self.host is not None:
                self.host.notify(subscriber.on_update, uri)

    # ---- starting -----------------------------------------------------------------------

    def _begin_start(self) -> None:
        if self.state in (ServerState.STARTING, ServerState.RUNNING) or self.retired is not None:
            return
        if self.state == ServerState.STOPPING:
            # The stop finishes first (whoever asked for it is answered), then the start.
            self.then = _Then.STOP_THEN_START if self.link == _Link.OPENING else _Then.START
            return
        self.state = ServerState.STARTING
        if self.link == _Link.CLOSING:
            # The previous connection is still closing: start once it is closed.
            self.then = _Then.START
            return
        self.connection += 1
        self.link = _Link.OPENING
        self.start_began = time.monotonic()
        connection = self.connection
        logger.info("%s: starting (%s)", self.namespace, self.config.transport)

        def outcome(future: concurrent.futures.Future[tuple[ServerInfo, list[RemoteTool], Catalog]]) -> Any:
            if (exc := failure(future)) is None:
                info, tools, catalog = future.result()
                return Started(connection, info, tuple(tools), catalog)
            if isinstance(exc, ToolError) and exc.error_type == ErrorType.AUTH:
                return LoginNeeded(connection, _reason(exc))
            if isinstance(exc, StartRefused) or isinstance(exc.__cause__, StartRefused):
                return CannotStart(connection, _reason(exc))
            return StartFailed(connection, _reason(exc))

        events = _Events(self.actor_ref, connection, self.namespace, self.host)
        self.start_future = self.adapter.start_future(self.config.connect_timeout, events)
        pipe(self.start_future, self.actor_ref, outcome)

    def _on_started(self, info: ServerInfo, tools: tuple[RemoteTool, ...], catalog: Catalog) -> None:
        self.link = _Link.UP
        self.start_future = None
        self.info = info
        self._learn_tools(tools)
        self._learn_catalog(catalog)
        if self.then in (_Then.STOP, _Then.STOP_THEN_START):
            self.then = _Then.START if self.then == _Then.STOP_THEN_START else _Then.NOTHING
            self._close()
            return
        self.state = ServerState.RUNNING
        self.last_activity = time.monotonic()
        instruments().start_time.record(
            (self.last_activity - self.start_began) * 1000.0, {"namespace": self.namespace}
        )
        logger.info("%s: running (pid %s, %d tools)", self.namespace, self.adapter.pid, len(tools))
        if self.supervisor is not None:
            tell(self.supervisor, ServerUp(self.namespace))
        for uri in dict.fromkeys(s.uri for s in self.subscribers.values()):
            self._subscribe(uri)  # a new session knows nothing of the old one's subscriptions
        self._flush_waiting()
        self._settle_describe()
        status = self.status()
        for slot in self.start_waiters:
            settle(slot, status)
        self.start_waiters.clear()
        self._compile_checks()

    def _compile_checks(self) -> None:
        """Compile every tool's argument check now, not on each tool's first call (the calls
        that waited for the start went first)."""
        for spec in (self.tools or {}).values():
            compile_input_check(spec)

    def _on_start_failed(self, error: str, *, retry: bool) -> None:
        # The adapter closed what it had opened.
        self.link = _Link.DOWN
        self.start_future = None
        if self.then in (_Then.STOP, _Then.STOP_THEN_START):
            # A stop was asked for while starting (and cancelled the start): it ends as that stop.
            self.then = _Then.START if self.then == _Then.STOP_THEN_START else _Then.NOTHING
            self._settle_describe()
            for slot in self.start_waiters:
                settle_exception(
                    slot, ToolError(self.namespace, ErrorType.CANCELLED, "stopped while starting")
                )
            self.start_waiters.clear()
            self._finish_stop()
            return
        self._note_error(error)
        self.errors += 1
        logger.warning("%s: failed to start: %s", self.namespace, error)
        self._fail_waiting(ErrorType.CONNECTION, f"server {self.namespace!r} failed to start: {error}")
        self._settle_describe()
        for slot in self.start_waiters:
            settle_exception(
                slot, ToolError(self.namespace, ErrorType.CONNECTION, f"failed to start: {error}")
            )
        self.start_waiters.clear()
        if not retry:
            # The same start would fail the same way: no restarts, `failed` until fixed.
            self.state = ServerState.FAILED
            if self.supervisor is not None:
                tell(self.supervisor, ServerStopped(self.namespace))
            return
        # A server that cannot start is supervised like one that crashed: retried with backoff,
        # then `failed`, so callers get a fast answer instead of a new failed start each.
        self.state = ServerState.RESTARTING if self.supervisor is not None else ServerState.STOPPED
        if self.supervisor is not None:
            tell(self.supervisor, ServerCrashed(self.namespace, error))

    def _on_login_needed(self, error: str) -> None:
        # Neither a crash nor a broken server: restarting cannot help, and a login (by the user,
        # in another process) can at any time, so the next call simply tries again.
        if self.then in (_Then.STOP, _Then.STOP_THEN_START):
            self._on_start_failed(error, retry=False)
            return
        self.link = _Link.DOWN
        self.start_future = None
        self._note_error(error)
        self.errors += 1
        logger.warning("%s: %s", self.namespace, error)
        self._fail_waiting(ErrorType.AUTH, error)
        self._settle_describe()
        for slot in self.start_waiters:
            settle_exception(slot, ToolError(self.namespace, ErrorType.AUTH, error))
        self.start_waiters.clear()
        self.state = ServerState.STOPPED
        if self.supervisor is not None:
            tell(self.supervisor, ServerStopped(self.namespace))

    def _learn_tools(self, tools: tuple[RemoteTool, ...]) -> None:
        specs = self.adapter.tool_specs_for(self.namespace, tools)
        self.tools = {s.tool_name: s for s in specs}
        if self.registry is not None:
            tell(self.registry, ToolsUpdated(self.namespace, tuple(specs)))

    def _learn_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        if self.registry is not None:
            tell(self.registry, CatalogUpdated(self.namespace, catalog))

    def _on_describe(self, reply: concurrent.futures.Future[list[ToolSpec]]) -> None:
        if self.tools is not None or self.retired is not None:
            settle(reply, list((self.tools or {}).values()))
            return
        self.describe_waiters.append(reply)
        if self.state in (ServerState.IDLE, ServerState.STOPPED):
            self._begin_start()
        elif self.state == ServerState.FAILED:
            self._settle_describe()

    def _settle_describe(self) -> None:
        tools = list(self.tools.values()) if self.tools is not None else []
        for slot in self.describe_waiters:
            settle(slot, tools)
        self.describe_waiters.clear()

    def _on_start_request(self, reply: concurrent.futures.Future[ServerStatus]) -> None:
        if self.retired is not None:
            settle_exception(reply, ToolError(self.namespace, ErrorType.CANCELLED, self.retired))
            return
        if self.state == ServerState.RUNNING:
            settle(reply, self.status())
            return
        if self.state == ServerState.FAILED and self.supervisor is not None:
            tell(self.supervisor, ResetRestarts(self.namespace))
        self.start_waiters.append(reply)
        if self.state in (ServerState.IDLE, ServerState.STOPPED, ServerState.FAILED, ServerState.STOPPING):
            self._begin_start()

    # ---- stopping -----------------------------------------------------------------------

    def _on_stop_request(self, reply: concurrent.futures.Future[ServerStatus]) -> None:
        at_rest = self.state in (ServerState.IDLE, ServerState.STOPPED, ServerState.FAILED)
        if at_rest and self.link != _Link.CLOSING:
            self._fail_waiting(ErrorType.CANCELLED, f"server {self.namespace!r} was stopped")
            settle(reply, self.status())
            return
        self.stop_waiters.append(reply)
        self._begin_stop("requested")

    def _on_retire(self, reason: str, reply: concurrent.futures.Future[ServerStatus]) -> None:
        self.retired = reason
        self._fail_waiting(ErrorType.CANCELLED, reason)
        self._settle_describe()
        for slot in self.start_waiters:
            settle_exception(slot, ToolError(self.namespace, ErrorType.CANCELLED, reason))
        self.start_waiters.clear()
        self._on_stop_request(reply)

    def _begin_stop(self, why: str) -> None:
        if self.state == ServerState.STOPPING:
            return
        logger.info("%s: stopping (%s)", self.namespace, why)
        self.state = ServerState.STOPPING
        self.then = _Then.NOTHING
        # Calls that were waiting for a start will not get one from this stop.
        if why == "requested":
            self._fail_waiting(ErrorType.CANCELLED, f"server {self.namespace!r} was stopped")
        if self.link == _Link.OPENING:
            # The connection is still being made: abandon it (the adapter closes what it opened),
            # or close it once it is up if it gets there first.
            self.then = _Then.STOP
            if self.start_future is not None:
                self.start_future.cancel()
            return
        self._close()

    def _close(self) -> None:
        if self.link == _Link.CLOSING:
            return
        self.link = _Link.CLOSING
        connection = self.connection
        pipe(self.adapter.disconnect_future(), self.actor_ref, lambda _: Closed(connection))

    def _on_closed(self) -> None:
        self.link = _Link.DOWN
        if self.state == ServerState.STOPPING:
            self._finish_stop()
        elif self.then == _Then.START:
            self.then = _Then.NOTHING
            self.state = ServerState.STOPPED
            self._begin_start()

    def _finish_stop(self) -> None:
        self.state = ServerState.STOPPED
        logger.info("%s: stopped", self.namespace)
        if self.supervisor is not None:
            tell(self.supervisor, ServerStopped(self.namespace))
        status = self.status()
        for slot in self.stop_waiters:
            settle(slot, status)
        self.stop_waiters.clear()
        # A start asked for while stopping, or calls (or a subscription) that came meanwhile.
        if self.then == _Then.START or (self.waiting and self.config.lazy_start):
            self.then = _Then.NOTHING
            self._begin_start()

    # ---- crashes ------------------------------------------------------------------------

    def _on_connection_lost(self, reason: str) -> None:
        # While starting, the start itself fails and says why.
        if self.state != ServerState.RUNNING:
            return
        if reason.startswith(f"{ErrorType.AUTH.label}:"):
            # The login was lost (revoked, refused): a restart would only be refused again.
            self._logged_out(reason)
            return
        self._crashed(f"connection lost: {reason}")

    def _logged_out(self, reason: str) -> None:
        logger.warning("%s: %s", self.namespace, reason)
        self._note_error(reason)
        self.probe = None
        self.state = ServerState.STOPPING
        self._close()
        if self.supervisor is not None:
            tell(self.supervisor, ServerStopped(self.namespace))

    def _note_error(self, reason: str) -> None:
        self.last_error = reason
        self.last_error_at = time.time()

    def _crashed(self, reason: str) -> None:
        logger.warning("%s: crashed: %s", self.namespace, reason)
        crash = request_span(
            f"mcp.server.crash {self.namespace}", None, {"mcp_actors.namespace": self.namespace}
        )
        end_span(crash, "crash", reason, 0.0)
        self._note_error(reason)
        self.state = ServerState.RESTARTING
        self.probe = None
        # Close what is left of the connection (a silent server may still hold its process).
        self._close()
        if self.supervisor is not None:
            tell(self.supervisor, ServerCrashed(self.namespace, reason))

    def _on_restart(self) -> None:
        if self.state != ServerState.RESTARTING or self.retired is not None:
            return
        self.restarts += 1
        instruments().restarts.add(1, {"namespace": self.namespace})
        logger.info(
            "%s: restart %d",
            self.namespace,
            self.restarts,
            extra={"mcp_event": "restart", "namespace": self.namespace, "restarts": self.restarts},
        )
        self.state = ServerState.STOPPED
        self._begin_start()

    def _on_give_up(self, reason: str) -> None:
        if self.state not in (ServerState.RESTARTING, ServerState.STOPPED):
            return
        logger.error("%s: failed after %d restarts: %s", self.namespace, self.restarts, reason)
        self.state = ServerState.FAILED
        self._fail_waiting(
            ErrorType.FAILED, f"server {self.namespace!r} gave up after {self.restarts} restarts ({reason})"
        )
        self._settle_describe()

    def _on_stay_down(self) -> None:
        if self.state != ServerState.RESTARTING:
            return
        self.state = ServerState.STOPPED
        if self.waiting and self.config.lazy_start:
            self._begin_start()

    # ---- ticks --------------------------------------------------------------------------

    def _on_idle_check(self) -> None:
        if self.state != ServerState.RUNNING or self.config.idle_timeout <= 0:
            return
        if self.in_flight or self.waiting or self.subscribers:
            # Busy, or someone follows its resources: a stop would cut them off.
            self._arm_idle(self.config.idle_timeout)
            return
        idle_for = time.monotonic() - self.last_activity
        remaining = self.config.idle_timeout - idle_for
        if remaining > 0.005:
            self._arm_idle(remaining)
            return
        self._begin_stop(f"idle for {duration_text(idle_for)}")

    def _arm_idle(self, delay: float) -> None:
        if self.supervisor is not None:
            tell(self.supervisor, ArmIdle(self.namespace, delay))

    def _on_health_check(self) -> None:
        if self.state != ServerState.RUNNING or self.probe is not None:
            return
        connection = self.connection
        timeout = max(self.config.health_check_interval, _MIN_PROBE_TIMEOUT)

        def outcome(future: concurrent.futures.Future[None]) -> ProbeDone:
            if (exc := failure(future)) is None:
                return ProbeDone(connection, None)
            kind = exc.error_type if isinstance(exc, ToolError) else None
            return ProbeDone(connection, _reason(exc), kind)

        self.probe = self.adapter.probe_future(timeout)
        pipe(self.probe, self.actor_ref, outcome)

    def _on_probe_done(self, error: str | None, error_type: str | None) -> None:
        self.probe = None
        if error is None or self.state != ServerState.RUNNING:
            self.probe_timeouts = 0
            return
        self.health_check_failures += 1
        instruments().health_failures.add(1, {"namespace": self.namespace})
        if error_type == ErrorType.TIMEOUT and self.probe_timeouts == 0:
            # A busy server (a large answer still in the pipe ahead of the probe) gets one more
            # chance; a dead one fails its next probe just the same.
            self.probe_timeouts = 1
            logger.warning("%s: health probe timed out (%s); probing again", self.namespace, error)
            return
        self.probe_timeouts = 0
        logger.warning(
            "%s: health check failed: %s",
            self.namespace,
            error,
            extra={"mcp_event": "health_failure", "namespace": self.namespace, "error": error},
        )
        self._crashed(f"health check failed: {error}")

    # ---- tool list changes --------------------------------------------------------------

    def _relist(self) -> None:
        # A burst of list_changed notifications costs at most two tools/list requests.
        if self.relist != _Relist.IDLE:
            self.relist = _Relist.OWED
            return
        self.relist = _Relist.RUNNING
        connection = self.connection

        def outcome(future: concurrent.futures.Future[list[RemoteTool]]) -> ToolsRelisted:
            if (exc := failure(future)) is not None:
                return ToolsRelisted(connection, None, _reason(exc))
            return ToolsRelisted(connection, tuple(future.result()))

        pipe(self.adapter.discover_future(), self.actor_ref, outcome)

    def _relist_catalog(self) -> None:
        # Resources, templates and prompts are listed again together, coalesced like tools.
        if self.relist_catalog != _Relist.IDLE:
            self.relist_catalog = _Relist.OWED
            return
        self.relist_catalog = _Relist.RUNNING
        connection = self.connection

        def outcome(future: concurrent.futures.Future[Catalog]) -> CatalogRelisted:
            if (exc := failure(future)) is not None:
                return CatalogRelisted(connection, None, _reason(exc))
            return CatalogRelisted(connection, future.result())

        pipe(self.adapter.catalog_future(), self.actor_ref, outcome)

    def _on_catalog_relisted(self, catalog: Catalog | None, error: str | None) -> None:
        owed = self.relist_catalog == _Relist.OWED
        self.relist_catalog = _Relist.IDLE
        if catalog is None:
            logger.warning(
                "%s: could not list resources and prompts after a change: %s", self.namespace, error
            )
        else:
            self._learn_catalog(catalog)
        if owed and self.state == ServerState.RUNNING:
            self._relist_catalog()

    def _on_relisted(self, tools: tuple[RemoteTool, ...] | None, error: str | None) -> None:
        owed = self.relist == _Relist.OWED
        self.relist = _Relist.IDLE
        if tools is None:
            logger.warning("%s: could not list tools after a change: %s", self.namespace, error)
        else:
            self._learn_tools(tools)
            self._compile_checks()
        if owed and self.state == ServerState.RUNNING:
            self._relist()

    # ---- status and the end -------------------------------------------------------------

    def status(self) -> ServerStatus:
        info = self.info
        return ServerStatus(
            namespace=self.namespace,
            state=self.state,
            transport=self.config.transport,
            pid=self.adapter.pid if self.state == ServerState.RUNNING else None,
            connected=self.adapter.connected,
            restarts=self.restarts,
            health_check_failures=self.health_check_failures,
            calls=self.calls,
            errors=self.errors,
            in_flight=len(self.in_flight),
            tools=len(self.tools) if self.tools is not None else None,
            last_error=self.last_error,
            last_error_at=self.last_error_at,
            protocol_version=info.protocol_version if info else None,
            capabilities=self.adapter.capability_metadata if self.adapter.connected else {},
        )

    def on_stop(self) -> None:
        self._release("the server actor stopped")

    def on_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._release(f"the server actor crashed: {exception_value!r}")

    def _release(self, why: str) -> None:
        # Pykka does not fail reply slots carried inside messages: fail them here, or callers hang.
        self.retired = self.retired or why
        self._count_completions()
        self._fail_waiting(ErrorType.CANCELLED, why)
        for call in list(self.in_flight.values()):
            settle(call.reply, ToolResult.fail(ErrorType.CANCELLED, why))
        self.in_flight.clear()
        self._settle_describe()
        status = self.status()
        for slot in self.start_waiters:
            settle_exception(slot, ToolError(self.namespace, ErrorType.CANCELLED, why))
        for slot in self.stop_waiters:
            settle(slot, status)
        self.start_waiters.clear()
        self.stop_waiters.clear()
        # Whatever is opening or open is closed: a start in progress closes what it opened
        # when cancelled, and an open session is closed here (never left to the loop's end).
        if self.start_future is not None:
            self.start_future.cancel()
        if self.link in (_Link.UP, _Link.OPENING) or self.adapter.connected:
            try:
                self.adapter.disconnect_future()
            except Exception:
                logger.debug("%s: could not close on stop", self.namespace, exc_info=True)


def _cancel_with(
    request: weakref.ref[concurrent.futures.Future[Any]], reply: concurrent.futures.Future[Any]
) -> None:
    """The caller cancelled ``reply``: cancel the request (if it is still under way)."""
    future = request()
    if reply.cancelled() and future is not None:
        future.cancel()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return exc.details or str(exc)
    return str(exc) or type(exc).__name__
