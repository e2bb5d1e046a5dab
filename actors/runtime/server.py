"""`ServerActor`: one MCP server, its transport and its lifecycle state machine."""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pykka

from actors.mcp.adapter import MCPToolAdapter
from actors.mcp.config import ServerConfig
from actors.mcp.transport import RemoteTool, ServerInfo, StartRefused
from actors.runtime.messages import (
    ArmIdle,
    CallDone,
    CallExpired,
    CallTool,
    Closed,
    ConnectionLost,
    DescribeTools,
    GetStatus,
    GiveUp,
    HealthCheck,
    IdleCheck,
    ProbeDone,
    ResetRestarts,
    Restart,
    ServerDown,
    ServerStatus,
    ServerUp,
    Shutdown,
    Started,
    StartFailed,
    StartServer,
    StayDown,
    StopServer,
    ToolsChanged,
    ToolsRelisted,
    ToolsUpdated,
)
from actors.runtime.reply import settle, settle_exception, tell
from actors.runtime.state import ServerState
from actors.runtime.timers import TimerService
from actors.tools import ErrorType, ToolError, ToolResult, ToolSpec, check_json, validate_inputs

__all__ = ["ServerActor"]

logger = logging.getLogger(__name__)

# A health probe gets at least this long to answer, however short the interval.
_MIN_PROBE_TIMEOUT = 2.0

_call_ids = itertools.count(1)


@dataclass
class _Waiting:
    """A call queued until the server is running."""

    call: CallTool
    deadline: float
    timer_key: tuple[str, str, int]


class _Events:
    """The transport's news, turned into messages to the server actor (on the loop thread)."""

    def __init__(self, ref: pykka.ActorRef[Any], connection: int) -> None:
        self._ref = ref
        self._connection = connection

    def on_closed(self, reason: str) -> None:
        tell(self._ref, ConnectionLost(self._connection, reason))

    def on_tools_changed(self) -> None:
        tell(self._ref, ToolsChanged(self._connection))


class ServerActor(pykka.ThreadingActor):
    """Owns one MCP server: starts it lazily, multiplexes calls over its one session, stops it
    when idle, and reports crashes to the supervisor.

    Tool calls never block this thread: each goes to the event loop and its completion comes
    back as a message, so status requests and health checks are answered while calls run.
    """

    use_daemon_thread = True

    def __init__(
        self,
        config: ServerConfig,
        adapter: MCPToolAdapter,
        *,
        timers: TimerService,
        supervisor: pykka.ActorRef[Any] | None = None,
        registry: pykka.ActorRef[Any] | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.adapter = adapter
        self.timers = timers
        self.supervisor = supervisor
        self.registry = registry
        self._state = ServerState.IDLE
        self.connection = 0
        self.info: ServerInfo | None = None
        self.tools: dict[str, ToolSpec] | None = None
        self.waiting: dict[int, _Waiting] = {}
        self.in_flight: dict[int, CallTool] = {}
        self.describe_waiters: list[concurrent.futures.Future[Any]] = []
        self.start_waiters: list[concurrent.futures.Future[Any]] = []
        self.stop_waiters: list[concurrent.futures.Future[Any]] = []
        self.stop_after_start = False
        self.start_future: concurrent.futures.Future[Any] | None = None
        self.closing = False
        self.start_after_close = False
        self.probing = False
        self.probe_timeouts = 0
        self.last_activity = time.monotonic()
        self.last_error: str | None = None
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
            return self._handle(message)
        except Exception as exc:
            logger.exception("%s: error handling %r", self.namespace, type(message).__name__)
            # Whoever waits on this message must still get an answer.
            if isinstance(message, CallTool):
                settle(message.reply, ToolResult.fail(ErrorType.EXECUTION, f"{exc!r}"))
            elif isinstance(reply := getattr(message, "reply", None), concurrent.futures.Future):
                settle_exception(reply, exc)
            return None

    def _handle(self, message: Any) -> Any:
        match message:
            case CallTool():
                self._on_call(message)
            case CallDone():
                self._on_call_done(message)
            case GetStatus(reply=reply):
                settle(reply, [self.status()])
            case DescribeTools(reply=reply):
                self._on_describe(reply)
            case StartServer(reply=reply):
                self._on_start_request(reply)
            case StopServer(reply=reply) | Shutdown(reply=reply):
                self._on_stop_request(reply)
            case Started(connection=c, info=info, tools=tools) if c == self.connection:
                self._on_started(info, tools)
            case StartFailed(connection=c, error=error, refused=refused) if c == self.connection:
                self._on_start_failed(error, refused=refused)
            case Closed(connection=c):
                self._on_closed(c)
            case ConnectionLost(connection=c, reason=reason) if c == self.connection:
                self._on_connection_lost(reason)
            case ToolsChanged(connection=c) if c == self.connection and self.state == ServerState.RUNNING:
                self._relist()
            case ToolsRelisted(connection=c, tools=tools, error=error) if c == self.connection:
                self._on_relisted(tools, error)
            case IdleCheck():
                self._on_idle_check()
            case HealthCheck():
                self._on_health_check()
            case ProbeDone(connection=c, error=error, error_type=error_type) if c == self.connection:
                self._on_probe_done(error, error_type)
            case Restart():
                self._on_restart()
            case GiveUp(reason=reason):
                self._on_give_up(reason)
            case StayDown():
                self._on_stay_down()
            case CallExpired(call=call):
                self._on_call_expired(call)
            case _:
                logger.debug("%s: ignored %r", self.namespace, message)
        return None

    # ---- calls --------------------------------------------------------------------------

    def _refused(self, call: CallTool) -> ToolResult | None:
        """Why ``call`` cannot go to the server (its arguments, its timeout, or the known tool
        list say so), or None."""
        if not isinstance(call.tool, str):
            return ToolResult.fail(ErrorType.VALIDATION, f"the tool name {call.tool!r} is not text")
        if not isinstance(call.arguments, Mapping):
            kind = type(call.arguments).__name__
            return ToolResult.fail(ErrorType.VALIDATION, f"arguments must be an object, got {kind}")
        if (problem := check_json(call.arguments, "arguments")) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, f"{problem}")
        if call.timeout is not None and not (math.isfinite(call.timeout) and call.timeout > 0):
            return ToolResult.fail(
                ErrorType.VALIDATION,
                f"timeout must be a positive number, got {call.timeout!r}",
            )
        if self.tools is None:
            return None
        spec = self.tools.get(call.tool)
        if spec is None:
            return ToolResult.fail(
                ErrorType.NOT_FOUND,
                f"tool {call.tool!r} is not offered by server {self.namespace!r}",
            )
        if (problem := validate_inputs(spec, call.arguments)) is not None:
            return ToolResult.fail(ErrorType.VALIDATION, problem)
        return None

    def _on_call(self, call: CallTool) -> None:
        # Check what can be checked without waking the server: the tool and its arguments.
        if (refusal := self._refused(call)) is not None:
            self._answer(call, refusal)
            return
        match self.state:
            case ServerState.RUNNING:
                self._dispatch(call, self._timeout(call), validated=self.tools is not None)
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

    def _timeout(self, call: CallTool) -> float:
        return call.timeout if call.timeout is not None else self.config.call_timeout

    def _dispatch(self, call: CallTool, timeout: float, *, validated: bool) -> None:
        call_id = next(_call_ids)
        self.in_flight[call_id] = call
        self.last_activity = time.monotonic()
        ref = self.actor_ref

        def done(future: concurrent.futures.Future[ToolResult]) -> None:
            # Runs on the loop thread: answer the caller at once, then tell the actor.
            try:
                result = future.result()
            except BaseException as exc:  # the loop stopped or the task was cancelled
                result = ToolResult.fail(ErrorType.CANCELLED, f"{exc or type(exc).__name__}")
            settle(call.reply, result)
            tell(ref, CallDone(call_id, result.success, result.error_type, result.duration_ms))

        try:
            future = self.adapter.invoke_future(call.tool, call.arguments, timeout, validated=validated)
        except Exception as exc:
            del self.in_flight[call_id]
            self._answer(call, ToolResult.fail(ErrorType.CONNECTION, f"{exc}"))
            return
        future.add_done_callback(done)

    def _on_call_done(self, done: CallDone) -> None:
        call = self.in_flight.pop(done.call_id, None)
        self.calls += 1
        if not done.success:
            self.errors += 1
        self.last_activity = time.monotonic()
        if call is not None and logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s/%s: %s in %.1f ms",
                self.namespace,
                call.tool,
                done.error_type or "ok",
                done.duration_ms,
                extra={
                    "mcp_event": "call",
                    "namespace": self.namespace,
                    "tool": call.tool,
                    "duration_ms": done.duration_ms,
                    "outcome": done.error_type or "ok",
                },
            )

    def _answer(self, call: CallTool, result: ToolResult) -> None:
        self.calls += 1
        if not result.success:
            self.errors += 1
        settle(call.reply, result)

    def _queue(self, call: CallTool) -> None:
        call_id = next(_call_ids)
        timeout = self._timeout(call)
        key = ("call-deadline", self.namespace, call_id)
        self.waiting[call_id] = _Waiting(call, time.monotonic() + timeout, key)
        ref = self.actor_ref
        self.timers.schedule(key, timeout, lambda: tell(ref, CallExpired(call)))

    def _on_call_expired(self, call: CallTool) -> None:
        for call_id, waiting in list(self.waiting.items()):
            if waiting.call is call:
                del self.waiting[call_id]
                self._answer(
                    call,
                    ToolResult.fail(
                        ErrorType.TIMEOUT,
                        f"server {self.namespace!r} was not ready within {self._timeout(call)}s "
                        f"(state {self.state})",
                    ),
                )

    def _flush_waiting(self) -> None:
        waiting, self.waiting = self.waiting, {}
        now = time.monotonic()
        for entry in waiting.values():
            self.timers.cancel(entry.timer_key)
            # Start-up may have taught us the tool list: check the call against it now.
            self._on_call_remaining(entry.call, max(entry.deadline - now, 0.001))

    def _on_call_remaining(self, call: CallTool, remaining: float) -> None:
        if (refusal := self._refused(call)) is not None:
            self._answer(call, refusal)
            return
        self._dispatch(call, remaining, validated=self.tools is not None)

    def _fail_waiting(self, error_type: ErrorType, message: str) -> None:
        waiting, self.waiting = self.waiting, {}
        for entry in waiting.values():
            self.timers.cancel(entry.timer_key)
            self._answer(entry.call, ToolResult.fail(error_type, message))

    # ---- starting -----------------------------------------------------------------------

    def _begin_start(self) -> None:
        if self.state in (ServerState.STARTING, ServerState.RUNNING):
            return
        if self.closing:
            # The previous connection is still closing: start once it is closed.
            self.start_after_close = True
            self.state = ServerState.STARTING
            return
        self.state = ServerState.STARTING
        self.connection += 1
        connection = self.connection
        ref = self.actor_ref
        logger.info("%s: starting (%s)", self.namespace, self.config.transport)

        def done(future: concurrent.futures.Future[tuple[ServerInfo, list[RemoteTool]]]) -> None:
            try:
                info, tools = future.result()
            except BaseException as exc:
                refused = isinstance(exc, StartRefused) or isinstance(exc.__cause__, StartRefused)
                tell(ref, StartFailed(connection, _reason(exc), refused))
                return
            tell(ref, Started(connection, info, tuple(tools)))

        self.start_future = self.adapter.start_future(self.config.connect_timeout, _Events(ref, connection))
        self.start_future.add_done_callback(done)

    def _on_started(self, info: ServerInfo, tools: tuple[RemoteTool, ...]) -> None:
        self.info = info
        self._learn_tools(tools)
        if self.stop_after_start:
            self.stop_after_start = False
            self._close()
            return
        self.state = ServerState.RUNNING
        self.info = info
        self.last_error = None
        self.last_activity = time.monotonic()
        logger.info("%s: running (pid %s, %d tools)", self.namespace, self.adapter.pid, len(tools))
        if self.supervisor is not None:
            tell(self.supervisor, ServerUp(self.namespace))
        self._flush_waiting()
        self._settle_describe()
        status = self.status()
        for slot in self.start_waiters:
            settle(slot, status)
        self.start_waiters.clear()

    def _on_start_failed(self, error: str, *, refused: bool = False) -> None:
        self.last_error = error
        self.errors += 1
        logger.warning("%s: failed to start: %s", self.namespace, error)
        self._fail_waiting(
            ErrorType.CONNECTION, f"connection error: server {self.namespace!r} failed to start: {error}"
        )
        self._settle_describe()
        for slot in self.start_waiters:
            settle_exception(
                slot, ToolError(self.namespace, ErrorType.CONNECTION, f"failed to start: {error}")
            )
        self.start_waiters.clear()
        if self.stop_after_start:
            # A stop was asked for while starting: the failed start ends as that stop.
            self.stop_after_start = False
            self._on_closed(self.connection)
            return
        # A server that cannot start is supervised like one that crashed: retried with backoff,
        # then `failed`, so callers get a fast answer instead of a new failed start each.
        if refused:
            # The same start would fail the same way: no restarts, `failed` until fixed.
            self.state = ServerState.FAILED
            if self.supervisor is not None:
                tell(self.supervisor, ServerDown(self.namespace, False, error))
            return
        self.state = ServerState.RESTARTING if self.supervisor is not None else ServerState.STOPPED
        if self.supervisor is not None:
            tell(self.supervisor, ServerDown(self.namespace, True, error))

    def _learn_tools(self, tools: tuple[RemoteTool, ...]) -> None:
        specs = self.adapter.tool_specs_for(self.namespace, tools)
        self.tools = {s.tool_name: s for s in specs}
        if self.registry is not None:
            tell(self.registry, ToolsUpdated(self.namespace, tuple(specs)))

    def _on_describe(self, reply: concurrent.futures.Future[Any]) -> None:
        if self.tools is not None:
            settle(reply, list(self.tools.values()))
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

    def _on_start_request(self, reply: concurrent.futures.Future[Any]) -> None:
        if self.state == ServerState.RUNNING:
            settle(reply, self.status())
            return
        if self.state == ServerState.FAILED and self.supervisor is not None:
            tell(self.supervisor, ResetRestarts(self.namespace))
        self.start_waiters.append(reply)
        if self.state in (ServerState.IDLE, ServerState.STOPPED, ServerState.FAILED, ServerState.STOPPING):
            self._begin_start()

    # ---- stopping -----------------------------------------------------------------------

    def _on_stop_request(self, reply: concurrent.futures.Future[Any]) -> None:
        if self.state in (ServerState.IDLE, ServerState.STOPPED, ServerState.FAILED) and not self.closing:
            self._fail_waiting(ErrorType.CANCELLED, f"cancelled: server {self.namespace!r} was stopped")
            settle(reply, self.status())
            return
        self.stop_waiters.append(reply)
        self._begin_stop("requested")

    def _begin_stop(self, why: str) -> None:
        if self.state == ServerState.STOPPING:
            return
        logger.info("%s: stopping (%s)", self.namespace, why)
        starting = self.state == ServerState.STARTING and not self.closing
        self.state = ServerState.STOPPING
        self.start_after_close = False
        # Calls that were waiting for a start will not get one from this stop.
        if why == "requested":
            self._fail_waiting(ErrorType.CANCELLED, f"cancelled: server {self.namespace!r} was stopped")
        if starting:
            # The connection is still being made: abandon it (its owner reaps what it started),
            # or close it once it is up if it gets there first.
            self.stop_after_start = True
            if self.start_future is not None:
                self.start_future.cancel()
            return
        self._close()

    def _close(self) -> None:
        self.closing = True
        connection = self.connection
        ref = self.actor_ref
        self.adapter.disconnect_future().add_done_callback(lambda _: tell(ref, Closed(connection)))

    def _on_closed(self, connection: int) -> None:
        self.closing = False
        if self.state == ServerState.STOPPING:
            self.state = ServerState.STOPPED
            logger.info("%s: stopped", self.namespace)
            if self.supervisor is not None:
                tell(self.supervisor, ServerDown(self.namespace, False, "stopped"))
            status = self.status()
            for slot in self.stop_waiters:
                settle(slot, status)
            self.stop_waiters.clear()
            if self.waiting and self.config.lazy_start:
                self._begin_start()
        elif self.start_after_close:
            self.start_after_close = False
            self.state = ServerState.STOPPED
            self._begin_start()

    # ---- crashes ------------------------------------------------------------------------

    def _on_connection_lost(self, reason: str) -> None:
        # While starting, the start itself fails and says why.
        if self.state != ServerState.RUNNING:
            return
        self._crashed(f"connection lost: {reason}")

    def _crashed(self, reason: str) -> None:
        logger.warning("%s: crashed: %s", self.namespace, reason)
        self.last_error = reason
        self.state = ServerState.RESTARTING
        self.probing = False
        # Close what is left of the connection (a silent server may still hold its process).
        self._close()
        if self.supervisor is not None:
            tell(self.supervisor, ServerDown(self.namespace, True, reason))

    def _on_restart(self) -> None:
        if self.state != ServerState.RESTARTING:
            return
        self.restarts += 1
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
            ErrorType.FAILED,
            f"failed: server {self.namespace!r} gave up after {self.restarts} restarts ({reason})",
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
        if self.in_flight or self.waiting:
            self._arm_idle(self.config.idle_timeout)
            return
        idle_for = time.monotonic() - self.last_activity
        remaining = self.config.idle_timeout - idle_for
        if remaining > 0.005:
            self._arm_idle(remaining)
            return
        self._begin_stop(f"idle for {idle_for:.1f}s")

    def _arm_idle(self, delay: float) -> None:
        if self.supervisor is not None:
            tell(self.supervisor, ArmIdle(self.namespace, delay))

    def _on_health_check(self) -> None:
        if self.state != ServerState.RUNNING or self.probing:
            return
        self.probing = True
        connection = self.connection
        ref = self.actor_ref
        timeout = max(self.config.health_check_interval, _MIN_PROBE_TIMEOUT)

        def done(future: concurrent.futures.Future[None]) -> None:
            try:
                future.result()
            except BaseException as exc:
                kind = exc.error_type if isinstance(exc, ToolError) else None
                tell(ref, ProbeDone(connection, _reason(exc), kind))
                return
            tell(ref, ProbeDone(connection, None))

        self.adapter.probe_future(timeout).add_done_callback(done)

    def _on_probe_done(self, error: str | None, error_type: str | None) -> None:
        self.probing = False
        if error is None or self.state != ServerState.RUNNING:
            self.probe_timeouts = 0
            return
        self.health_check_failures += 1
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
        connection = self.connection
        ref = self.actor_ref

        def done(future: concurrent.futures.Future[list[RemoteTool]]) -> None:
            try:
                tools = future.result()
            except BaseException as exc:
                tell(ref, ToolsRelisted(connection, None, _reason(exc)))
                return
            tell(ref, ToolsRelisted(connection, tuple(tools)))

        self.adapter.discover_future().add_done_callback(done)

    def _on_relisted(self, tools: tuple[RemoteTool, ...] | None, error: str | None) -> None:
        if tools is None:
            logger.warning("%s: could not list tools after a change: %s", self.namespace, error)
            return
        self._learn_tools(tools)

    # ---- status and the end -------------------------------------------------------------

    def status(self) -> ServerStatus:
        info = self.info
        return ServerStatus(
            namespace=self.namespace,
            state=str(self.state),
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
        message = f"cancelled: {why}"
        self._fail_waiting(ErrorType.CANCELLED, message)
        for call in list(self.in_flight.values()):
            settle(call.reply, ToolResult.fail(ErrorType.CANCELLED, message))
        self.in_flight.clear()
        self._settle_describe()
        status = self.status()
        for slot in self.start_waiters:
            settle_exception(slot, ToolError(self.namespace, ErrorType.CANCELLED, why))
        for slot in self.stop_waiters:
            settle(slot, status)
        self.start_waiters.clear()
        self.stop_waiters.clear()
        if self.adapter.connected:
            try:
                self.adapter.disconnect_future()
            except Exception:
                logger.debug("%s: could not close on stop", self.namespace, exc_info=True)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return exc.details or str(exc)
    return str(exc) or type(exc).__name__
