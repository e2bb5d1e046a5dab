"""`ServerActor`: one MCP server; a thin interpreter over its lifecycle and its plain parts.

The decisions live elsewhere: `lifecycle` (what each event does in each stage, as effects),
`admission` (what a request can be refused for without the server), `waiting` (requests
queued for a start), `calls` (requests in flight and the counters), `subscriptions`,
`health` and `relisting`. This actor turns messages into events, carries out the effects and
wires the parts to the adapter. All of it runs on the actor's thread; what the loop tells it
comes as messages (`from_loop`) or through `calls.Completions`.
"""

from __future__ import annotations

import concurrent.futures
import logging
from types import TracebackType
from typing import Any

import pykka

from actors.mcp.adapter import MCPToolAdapter
from actors.mcp.config import ServerConfig
from actors.pins.book import PinBook
from actors.runtime import from_loop
from actors.runtime import lifecycle as lc
from actors.runtime.answering import AnsweringActor
from actors.runtime.calls import Calls
from actors.runtime.clock import Clock, SystemClock
from actors.runtime.host import HostCalls
from actors.runtime.lifecycle import effects as fx
from actors.runtime.lifecycle import events as ev
from actors.runtime.messages import (
    SERVER_REQUESTS,
    ArmIdle,
    CallExpired,
    CannotStart,
    CatalogChanged,
    CatalogRelisted,
    Closed,
    ConnectionLost,
    DescribeTools,
    Freshen,
    GetStatus,
    GiveUp,
    HealthCheck,
    IdleCheck,
    LoginNeeded,
    ProbeDone,
    ResetRestarts,
    ResourceUpdated,
    Restart,
    Retire,
    ServerRequest,
    ServerStatus,
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
    UnsubscribeResource,
    refuse,
)
from actors.runtime.record import Record
from actors.runtime.replies import Replies
from actors.runtime.reply import settle, settle_exception, tell
from actors.runtime.schema_cache import CachedLists
from actors.runtime.session import Session
from actors.runtime.state import ServerState
from actors.runtime.subscriptions import Subscriptions
from actors.runtime.telemetry import instruments
from actors.runtime.timers import TimerService
from actors.runtime.waiting import WaitingCalls
from actors.tools import ErrorType, ToolError, ToolResult, duration_text
from actors.tools.check import Refusal

__all__ = ["ServerActor"]

logger = logging.getLogger(__name__)


class ServerActor(AnsweringActor):
    """Owns one MCP server: starts it lazily, multiplexes calls over its one session, stops it
    when idle, and reports crashes to the supervisor. Never blocks: what it asks of the loop
    comes back as messages, so status and health checks are answered while calls run."""

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
        clock: Clock | None = None,
        pins: PinBook | None = None,
    ) -> None:
        super().__init__()
        self.config, self.adapter, self.timers, self.host = config, adapter, timers, host
        self.supervisor, self.registry = supervisor, registry
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.stage = lc.Stage.IDLE
        self.record = Record(config.name, self.clock)
        self.session = Session(config, adapter, self.actor_ref, self.clock, host, registry, known, pins)
        self.calls = Calls(config.name, adapter, host, self.clock, lambda: self.session.tools)
        self.waiting = WaitingCalls(config.name, timers)
        self.subscriptions, self.replies = Subscriptions(), Replies()
        self.followed: str | None = None  # a subscription's URI that is new to the session

    @property
    def namespace(self) -> str:
        return self.config.name

    @property
    def state(self) -> ServerState:
        return self.stage.public

    # ---- the mailbox ------------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        # An exception escaping a tell handler would kill this actor and strand its callers.
        try:
            if self.calls.completions:
                self.calls.count_completions()
            self._handle(message)
        except Exception as exc:
            logger.exception("%s: error handling %r", self.namespace, type(message).__name__)
            refuse(message, ErrorType.EXECUTION, f"{self.namespace}: internal error: {exc!r}")
        return None

    def _handle(self, message: Any) -> None:
        """Requests from outside (the registry, the supervisor, callers) and timer ticks."""
        match message:
            case _ if isinstance(message, SERVER_REQUESTS):
                if self.stage.retired:
                    return self.calls.answer(
                        message, ToolResult.fail(ErrorType.CANCELLED, str(self.record.retired))
                    )
                # Check what can be checked without waking the server: the tool and its arguments.
                if (refused := self._refusal(message)) is not None:
                    return self.calls.refuse(message, refused)
                self._step(ev.CallArrived(self.config.lazy_start), message)
            case GetStatus(reply=reply):
                settle(reply, [self.status()])
            case DescribeTools():
                self._step(ev.DescribeAsked(self.session.tools is not None), message)
            case Freshen():  # a stale list the host wants: listed again if running
                self.session.freshen(message, running=self.stage == lc.Stage.RUNNING)
            case StartServer():
                self._step(ev.StartAsked(), message)
            case StopServer() | Shutdown():
                self._step(ev.StopAsked(), message)
            case Retire(reason=reason):
                self._step(ev.RetireAsked(reason), message)
            case SubscribeResource(uri=uri, on_update=on_update, reply=reply):
                if self.stage.retired:
                    return self._refuse(reply, ErrorType.CANCELLED, str(self.record.retired))
                if not isinstance(uri, str) or not callable(on_update):
                    return self._refuse(
                        reply, ErrorType.VALIDATION, "a subscription needs a uri and a callable"
                    )
                self._step(ev.SubscribeAsked(self.config.lazy_start), message)
            case UnsubscribeResource(subscription=sid, reply=reply):
                self._on_unsubscribe(sid, reply)
            case IdleCheck():
                now, last = self.clock.monotonic(), self.calls.last_activity
                busy = self.calls.busy(now) or bool(self.waiting or self.subscriptions)
                self._step(ev.IdleTick(now, last, self.config.idle_timeout, busy))
            case HealthCheck() if self.stage == lc.Stage.RUNNING:
                self.session.probe()
            case Restart():
                self._step(ev.RestartDue())
            case GiveUp(reason=reason):
                self._step(ev.GaveUp(reason))
            case StayDown():
                self._step(ev.StayingDown(self._wanted()))
            case CallExpired(call=call) if self.waiting.expire(call):
                waited = duration_text(self._timeout(call))
                text = f"server {self.namespace!r} was not ready within {waited} (state {self.state})"
                self.calls.answer(call, ToolResult.fail(ErrorType.TIMEOUT, text))
            case _:  # a call that expired after it went, and news of the loop
                self._handle_news(message)
        return None

    def _handle_news(self, message: Any) -> None:
        """Outcomes piped back from the loop and the transport's pushed news; news of an
        earlier connection is stale and dropped."""
        if not self.session.current(message):
            logger.debug("%s: ignored %r", self.namespace, message)
            return
        running = self.stage == lc.Stage.RUNNING
        match message:
            case Started():
                self.session.start_ended()
                self._step(ev.Connected(), message)
            case StartFailed(error=error) | CannotStart(error=error):
                self.session.start_ended()
                retry, supervised = isinstance(message, StartFailed), self.supervisor is not None
                self._step(ev.ConnectFailed(error, retry, supervised, self._wanted()))
            case LoginNeeded(error=error):
                self.session.start_ended()
                self._step(ev.NeedsLogin(error, self._wanted()))
            case Closed():
                self._step(ev.SessionClosed(self._wanted()))
            case ConnectionLost(reason=reason, auth=auth):
                self._step(ev.LinkLost(reason, auth=auth))
            case ProbeDone(error=error, error_type=error_type):
                if self.session.probe_answered(error, error_type, running=running):
                    self._step(ev.ProbeFailed(str(error)))
            case ToolsChanged() | CatalogChanged() if running:
                self.session.changed(tools=isinstance(message, ToolsChanged))
            case ToolsRelisted() | CatalogRelisted():
                self.session.relisted(message, running=running)
            case ResourceUpdated(uri=uri) if self.host is not None:
                for on_update in self.subscriptions.followers(uri):
                    self.host.notify(on_update, uri)
            case Subscribed(uri=uri, error=error) if error is not None:
                logger.warning("%s: could not subscribe to %s: %s", self.namespace, uri, error)
            case _:
                logger.debug("%s: ignored %r", self.namespace, message)

    # ---- the lifecycle's effects ------------------------------------------------------

    def _step(self, event: lc.Event, subject: Any = None) -> None:
        moved = lc.step(self.stage, event)
        if moved.refused:
            logger.debug("%s: %s ignored while %s", self.namespace, event.label, self.stage.value)
            return
        old, self.stage = self.stage.public, moved.stage
        if moved.stage.public != old:
            _log_state(self.namespace, old, moved.stage.public)
        for effect in moved.effects:
            self._do(effect, event, subject)

    def _do(self, effect: lc.Effect, event: lc.Event, subject: Any) -> None:
        """The effects on requests and their replies; the rest in `_do_session`."""
        match effect:
            case fx.DispatchRequest():
                self.calls.send(subject, self._timeout(subject), None, self.record.restarts)
            case fx.Queue():
                ref, expired = self.actor_ref, CallExpired(subject)
                now, timeout = self.clock.monotonic(), self._timeout(subject)
                self.waiting.add(subject, now, timeout, lambda: tell(ref, expired))
            case fx.Refuse(error_type=error_type, text=text) if isinstance(subject, SERVER_REQUESTS):
                self.calls.answer(subject, ToolResult.fail(error_type, self.record.render(text)))
            case fx.Refuse(error_type=error_type, text=text):
                self._refuse(subject.reply, error_type, self.record.render(text))
            case fx.AnswerNow() if isinstance(subject, DescribeTools):
                settle(subject.reply, self.session.tool_list())
            case fx.AnswerNow():
                settle(subject.reply, self.status())
            case fx.KeepWaiter():
                self._keep(subject)
            case fx.FlushWaiting():
                self._flush_waiting()
            case fx.FailWaiting(error_type=error_type, text=text):
                self._fail_waiting(ToolResult.fail(error_type, self.record.render(text)))
            case fx.FailInFlight(error_type=error_type, text=text):
                self.calls.fail_in_flight(ToolResult.fail(error_type, self.record.render(text)))
            case fx.AnswerDescribes():
                self.replies.described(self.session.tool_list())
            case fx.AnswerStarts():
                self.replies.started(self.status())
            case fx.FailStarts(error_type=error_type, text=text):
                self.replies.start_failed(ToolError(self.namespace, error_type, self.record.render(text)))
            case fx.AnswerStops():  # a stop's answer says stopped, even with a start owed
                self.replies.stopped(self.status(ServerState.STOPPED))
            case _:
                self._do_session(effect, event, subject)

    def _do_session(self, effect: lc.Effect, event: lc.Event, subject: Any) -> None:
        session, supervisor = self.session, self.supervisor
        match effect:
            case fx.OpenSession():
                session.open(self.config.connect_timeout, self.config.transport)
            case fx.CancelStart():
                session.cancel_start()
            case fx.CloseSession():
                session.close()
            case fx.Learn():
                session.learn(subject)
            case fx.MarkRunning():
                self.calls.touch()
                session.went_up(self.calls.last_activity)
            case fx.Tell(what=what, reason=reason) if supervisor is not None:
                tell(supervisor, from_loop.for_supervisor(what, self.namespace, reason))
            case fx.FollowSubscriptions():
                for uri in self.subscriptions.uris():
                    session.subscribe(uri)
            case fx.FollowAtServer() if self.followed is not None:
                session.subscribe(self.followed)
            case fx.NoteError(reason=reason, what=what):
                self.record.note_error(reason, what)
            case fx.CountError():
                self.calls.errors += 1
            case fx.RecordCrash(reason=reason):
                self.record.crashed(reason)
            case fx.ForgetProbe():
                session.health.forget()
            case fx.ResetRestartCount() if supervisor is not None:
                tell(supervisor, ResetRestarts(self.namespace))
            case fx.CountRestart():
                self.record.restarted()
            case fx.ArmIdleTimer(delay=delay):
                self._arm_idle(delay)
            case fx.NoteRetired(reason=reason):
                self.record.retired = reason
            case fx.NoteGaveUp(reason=reason):
                self.record.gave_up(reason)
            case fx.CompileChecks():
                session.compile_checks()

    def _keep(self, subject: Any) -> None:
        if not isinstance(subject, SubscribeResource):
            return self.replies.keep(subject)
        self.followed = self.subscriptions.keep(subject, self.namespace, self.actor_ref)
        return None

    # ---- the wiring, status and the end -------------------------------------------------

    def _flush_waiting(self) -> None:
        entries, now = self.waiting.drain(), self.clock.monotonic()
        self.calls.send_waited(entries, now, self._refusal, self._timeout, self.record.restarts)

    def _fail_waiting(self, failed: ToolResult) -> None:
        self.calls.answer_all([entry.call for entry in self.waiting.drain()], failed)

    def _on_unsubscribe(self, sid: int, reply: concurrent.futures.Future[bool]) -> None:
        existed, unfollowed = self.subscriptions.remove(sid)
        settle(reply, existed)
        if unfollowed is None:
            return
        if self.stage == lc.Stage.RUNNING:
            self.session.subscribe(unfollowed, subscribe=False)
        if not self.subscriptions:
            self.calls.touch()
            self._arm_idle(self.config.idle_timeout)

    def _refusal(self, call: ServerRequest) -> Refusal | None:  # running: the adapter checks the schema
        return self.session.refusal(call, schema=self.stage != lc.Stage.RUNNING)

    def _timeout(self, call: ServerRequest) -> float:
        return call.timeout if call.timeout is not None else self.config.call_timeout

    def _wanted(self) -> bool:  # calls wait for a start, and may have one (lazy start)
        return bool(self.waiting) and self.config.lazy_start

    def _refuse(self, slot: concurrent.futures.Future[Any], error_type: ErrorType, text: str) -> None:
        settle_exception(slot, ToolError(self.namespace, error_type, text))

    def _arm_idle(self, delay: float) -> None:
        if self.supervisor is not None:
            tell(self.supervisor, ArmIdle(self.namespace, delay))

    def status(self, state: ServerState | None = None) -> ServerStatus:
        return server_status(self, state or self.state)  # a stop's answer says stopped

    def on_stop(self) -> None:
        self._release("the server actor stopped")

    def on_failure(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release(f"the server actor crashed: {value!r}")

    def _release(self, why: str) -> None:
        # Pykka does not fail reply slots carried inside messages: fail them here, or callers hang.
        self.record.retired = self.record.retired or why
        link, self.stage = self.stage.link, lc.step(self.stage, ev.Released()).stage
        self.calls.count_completions()
        self._fail_waiting(ToolResult.fail(ErrorType.CANCELLED, why))
        self.calls.cancel_all(why)
        self.replies.described(self.session.tool_list())
        self.replies.start_failed(ToolError(self.namespace, ErrorType.CANCELLED, why))
        self.replies.stopped(self.status())
        self.session.release(link)


def server_status(actor: ServerActor, state: ServerState) -> ServerStatus:
    """What `GetStatus` answers for ``actor``, showing ``state``."""
    session, adapter, calls = actor.session, actor.adapter, actor.calls
    latency = calls.latencies.percentiles()
    return ServerStatus(
        namespace=actor.namespace,
        state=state,
        transport=actor.config.transport,
        pid=adapter.pid if actor.state == ServerState.RUNNING else None,
        connected=adapter.connected,
        restarts=actor.record.restarts,
        health_check_failures=session.health.failures,
        calls=calls.calls,
        errors=calls.errors,
        in_flight=len(calls.in_flight),
        tools=len(session.tools) if session.tools is not None else None,
        last_error=actor.record.last_error,
        last_error_at=actor.record.last_error_at,
        latency_p50_ms=latency.p50_ms if latency is not None else None,
        latency_p99_ms=latency.p99_ms if latency is not None else None,
        last_call_error=calls.last_call_error,
        last_call_error_at=calls.last_call_error_at,
        protocol_version=session.info.protocol_version if session.info else None,
        capabilities=adapter.capability_metadata if adapter.connected else {},
    )


def _log_state(namespace: str, old: ServerState, new: ServerState) -> None:
    instruments().state_changes.add(1, {"namespace": namespace, "state": str(new)})
    extra = {"mcp_event": "state", "namespace": namespace, "state": str(new), "previous": str(old)}
    logger.info("%s: %s -> %s", namespace, old, new, extra=extra)
