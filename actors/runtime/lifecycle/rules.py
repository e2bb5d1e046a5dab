"""The transition table: one rule per event kind, and the stages where each kind is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from actors.runtime.lifecycle.effects import (
    AnswerDescribes,
    AnswerNow,
    AnswerStarts,
    AnswerStops,
    ArmIdleTimer,
    CancelStart,
    CloseSession,
    CompileChecks,
    CountError,
    CountRestart,
    DispatchRequest,
    Effect,
    FailInFlight,
    FailStarts,
    FailWaiting,
    FlushWaiting,
    FollowAtServer,
    FollowSubscriptions,
    ForgetProbe,
    KeepWaiter,
    Learn,
    MarkRunning,
    NoteError,
    NoteGaveUp,
    NoteRetired,
    OpenSession,
    Queue,
    RecordCrash,
    Refuse,
    ResetRestartCount,
    Supervisor,
    Tell,
    Transition,
)
from actors.runtime.lifecycle.events import (
    EVENTS,
    IDLE_SLACK,
    CallArrived,
    Connected,
    ConnectFailed,
    DescribeAsked,
    Event,
    GaveUp,
    IdleTick,
    LinkLost,
    NeedsLogin,
    ProbeFailed,
    Released,
    RestartDue,
    RetireAsked,
    SessionClosed,
    StartAsked,
    StayingDown,
    StopAsked,
    SubscribeAsked,
)
from actors.runtime.lifecycle.stages import Link, Stage, Text, TextKind
from actors.runtime.state import ServerState
from actors.tools import ErrorType

__all__ = ["REFUSED", "RULES", "step", "transitions"]

_S = Stage
_Out = tuple[Stage, tuple[Effect, ...]]
_EVERY = frozenset(Stage)
_STOPPING = frozenset(s for s in Stage if s.public == ServerState.STOPPING)
_CANCELLING = frozenset({_S.CANCELLING, _S.CANCELLING_THEN_START, _S.RETIRING_CANCEL})
_AT_REST = frozenset({_S.IDLE, _S.STOPPED, _S.FAILED, _S.RETIRED, _S.RETIRED_IDLE})
_NEVER_STARTED = (_S.IDLE, _S.RETIRED_IDLE)
_AT_REST_OR_STOPPED = (ServerState.IDLE, ServerState.STOPPED)
_RETIRED_REFUSAL = Refuse(ErrorType.CANCELLED, Text(TextKind.RETIRED))
_STOPPED_TEXT = Text(TextKind.STOPPED)
_NOT_STARTED_WAITING = FailWaiting(ErrorType.NOT_STARTED, Text(TextKind.NOT_STARTED))
_IN_BACKOFF = (_S.RESTARTING, _S.RESTARTING_CLOSING)


# ---- the moves several rules share --------------------------------------------------------


def _start(stage: Stage) -> _Out:
    """Begin a start from ``stage`` (or owe one, or nothing if one is under way)."""
    match stage:
        case _S.CLOSING | _S.CLOSING_THEN_START:
            return _S.CLOSING_THEN_START, ()
        case _S.CANCELLING | _S.CANCELLING_THEN_START:
            return _S.CANCELLING_THEN_START, ()
        case _S.STOPPED_CLOSING | _S.RESTARTING_CLOSING | _S.FAILED_CLOSING:
            return _S.AWAITING_CLOSE, ()
        case _S.IDLE | _S.STOPPED | _S.RESTARTING | _S.FAILED:
            return _S.CONNECTING, (OpenSession(),)
    return stage, ()  # starting, running, retired


def _finish_stop(wanted: bool, then_start: bool) -> _Out:
    effects: tuple[Effect, ...] = (Tell(Supervisor.STOPPED), AnswerStops())
    if not (then_start or wanted):  # no start comes: whoever waited for one is answered now
        ended = (_NOT_STARTED_WAITING, AnswerDescribes(), FailStarts(ErrorType.CANCELLED, _STOPPED_TEXT))
        return _S.STOPPED, effects + ended
    stage, more = _start(_S.STOPPED)
    return stage, effects + more


def _stop(stage: Stage, *, requested: bool) -> _Out:
    """Begin a stop from a stage that is not stopping already."""
    # Calls that waited for a start will not get one from a stop asked for.
    fail = (FailWaiting(ErrorType.CANCELLED, _STOPPED_TEXT),) if requested else ()
    if stage.link == Link.OPENING:
        return _S.CANCELLING, (*fail, CancelStart())
    if stage.link == Link.CLOSING:
        return _S.CLOSING, fail
    # Its calls in flight were ended by the host's own stop: ``cancelled``, answered before the
    # session closes under them (a server that dies on its own fails them ``connection``).
    ended = (FailInFlight(ErrorType.CANCELLED, _STOPPED_TEXT),) if requested and stage.link == Link.UP else ()
    return _S.CLOSING, (*fail, *ended, CloseSession())


def _crash(reason: str) -> _Out:
    # What is left of the connection is closed (a silent server may still hold its process).
    return _S.RESTARTING_CLOSING, (
        RecordCrash(reason),
        NoteError(reason),
        ForgetProbe(),
        CloseSession(),
        Tell(Supervisor.CRASHED, reason),
    )


def _cancelled_start(stage: Stage, wanted: bool) -> _Out:
    """A start that a stop cancelled has ended (either way): it ends as that stop."""
    effects = (AnswerDescribes(), FailStarts(ErrorType.CANCELLED, Text(TextKind.STOPPED_WHILE_STARTING)))
    if stage == _S.RETIRING_CANCEL:
        return _S.RETIRED, (*effects, Tell(Supervisor.STOPPED), AnswerStops())
    to, more = _finish_stop(wanted, then_start=stage == _S.CANCELLING_THEN_START)
    return to, effects + tuple(e for e in more if not isinstance(e, AnswerDescribes | FailStarts))


# ---- one rule per event kind (None: refused) ----------------------------------------------


def _call(stage: Stage, event: CallArrived) -> _Out:
    if stage.retired:
        return stage, (_RETIRED_REFUSAL,)
    if stage == _S.RUNNING:
        return stage, (DispatchRequest(),)
    if stage.public == ServerState.FAILED:
        return stage, (Refuse(ErrorType.FAILED, Text(TextKind.IS_FAILED)),)
    if stage.public in _AT_REST_OR_STOPPED:
        if not event.lazy_start:
            return stage, (Refuse(ErrorType.NOT_STARTED, Text(TextKind.NOT_STARTED)),)
        to, effects = _start(stage)
        return to, (Queue(), *effects)
    return stage, (Queue(),)  # starting, restarting, stopping: it waits, within its timeout


def _start_asked(stage: Stage, event: StartAsked) -> _Out:
    if stage.retired:
        return stage, (_RETIRED_REFUSAL,)
    if stage == _S.RUNNING:
        return stage, (AnswerNow(),)
    if stage in (_S.CONNECTING, _S.AWAITING_CLOSE, _S.RESTARTING, _S.RESTARTING_CLOSING):
        return stage, (KeepWaiter(),)
    reset: tuple[Effect, ...] = (ResetRestartCount(),) if stage.public == ServerState.FAILED else ()
    to, effects = _start(stage)  # while stopping: once the stop is done
    return to, (*reset, KeepWaiter(), *effects)


def _describe(stage: Stage, event: DescribeAsked) -> _Out:
    # A server waiting out its backoff after a crash or a failed start is not started again
    # for a list, nor waited for: the list is answered with what is known (maybe nothing).
    if event.tools_known or stage.retired or stage == _S.RUNNING or stage in _IN_BACKOFF:
        return stage, (AnswerNow(),)
    if stage.public in _AT_REST_OR_STOPPED:
        to, effects = _start(stage)
        return to, (KeepWaiter(), *effects)
    if stage.public == ServerState.FAILED:
        return stage, (KeepWaiter(), AnswerDescribes())
    return stage, (KeepWaiter(),)


def _subscribe(stage: Stage, event: SubscribeAsked) -> _Out:
    if stage.retired:
        return stage, (_RETIRED_REFUSAL,)
    if stage == _S.RUNNING:
        return stage, (KeepWaiter(), FollowAtServer())
    if event.lazy_start and stage.public in (*_AT_REST_OR_STOPPED, ServerState.STOPPING):
        to, effects = _start(stage)
        return to, (KeepWaiter(), *effects)
    return stage, (KeepWaiter(),)


def _connected(stage: Stage, event: Connected) -> _Out | None:
    if stage == _S.CONNECTING:
        return _S.RUNNING, (
            Learn(),
            MarkRunning(),
            Tell(Supervisor.UP),
            FollowSubscriptions(),  # a new session knows nothing of the old one's
            FlushWaiting(),
            AnswerDescribes(),
            AnswerStarts(),
            CompileChecks(),
        )
    if stage in _CANCELLING:  # it got there before the cancel did: close it
        after = {_S.CANCELLING: _S.CLOSING, _S.CANCELLING_THEN_START: _S.CLOSING_THEN_START}
        # Its tools are known now; a start asked before the stop ends as that stop (one asked
        # after it waits for the start owed).
        ended = (FailStarts(ErrorType.CANCELLED, Text(TextKind.STOPPED_WHILE_STARTING)),)
        owed = ended if stage == _S.CANCELLING else ()
        return after.get(stage, _S.RETIRING), (Learn(), AnswerDescribes(), *owed, CloseSession())
    return None


def _connect_failed(stage: Stage, event: ConnectFailed) -> _Out | None:
    if stage in _CANCELLING:
        return _cancelled_start(stage, event.wanted)
    if stage != _S.CONNECTING:
        return None
    effects = (
        NoteError(event.error, "failed to start"),
        CountError(),
        FailWaiting(ErrorType.CONNECTION, Text(TextKind.START_FAILED, event.error)),
        AnswerDescribes(),
        FailStarts(ErrorType.CONNECTION, Text(TextKind.FAILED_TO_START, event.error)),
    )
    if not event.retry:  # the same start would fail the same way: failed until fixed
        return _S.FAILED, (*effects, Tell(Supervisor.STOPPED))
    if event.supervised:  # retried with backoff, then failed, like a crash
        return _S.RESTARTING, (*effects, Tell(Supervisor.CRASHED, event.error))
    return _S.STOPPED, effects


def _login_required(stage: Stage, event: NeedsLogin) -> _Out | None:
    # Neither a crash nor a broken server: a login (elsewhere) may come at any time, so the
    # next call simply tries again.
    if stage in _CANCELLING:
        return _cancelled_start(stage, event.wanted)
    if stage != _S.CONNECTING:
        return None
    text = Text(TextKind.AS_IS, event.error)
    return _S.STOPPED, (
        NoteError(event.error, "login needed"),
        CountError(),
        FailWaiting(ErrorType.AUTH, text),
        AnswerDescribes(),
        FailStarts(ErrorType.AUTH, text),
        Tell(Supervisor.STOPPED),
    )


def _closed(stage: Stage, event: SessionClosed) -> _Out | None:
    match stage:
        case _S.CLOSING | _S.CLOSING_THEN_START:
            return _finish_stop(event.wanted, then_start=stage == _S.CLOSING_THEN_START)
        case _S.AWAITING_CLOSE:
            return _S.CONNECTING, (OpenSession(),)
        case _S.RETIRING:
            return _S.RETIRED, (Tell(Supervisor.STOPPED), AnswerStops())
        case _S.STOPPED_CLOSING:
            return _S.STOPPED, ()
        case _S.RESTARTING_CLOSING:
            return _S.RESTARTING, ()
        case _S.FAILED_CLOSING:
            return _S.FAILED, ()
    return None


def _stop_asked(stage: Stage, event: StopAsked) -> _Out:
    if stage in _AT_REST:
        return stage, (FailWaiting(ErrorType.CANCELLED, _STOPPED_TEXT), AnswerNow())
    if stage in _STOPPING:
        return stage, (KeepWaiter(),)
    to, effects = _stop(stage, requested=True)
    return to, (KeepWaiter(), *effects)


def _retire(stage: Stage, event: RetireAsked) -> _Out:
    effects = (
        NoteRetired(event.reason),
        FailWaiting(ErrorType.CANCELLED, Text(TextKind.RETIRED)),
        AnswerDescribes(),
        FailStarts(ErrorType.CANCELLED, Text(TextKind.RETIRED)),
    )
    if stage in _AT_REST:
        return _S.RETIRED_IDLE if stage in _NEVER_STARTED else _S.RETIRED, (*effects, AnswerNow())
    if stage.link == Link.OPENING:
        cancel: tuple[Effect, ...] = () if stage in _CANCELLING else (CancelStart(),)
        return _S.RETIRING_CANCEL, (*effects, KeepWaiter(), *cancel)
    close: tuple[Effect, ...] = () if stage.link == Link.CLOSING else (CloseSession(),)
    if stage.link == Link.UP:  # as a stop asked for: its calls in flight are cancelled
        close = (FailInFlight(ErrorType.CANCELLED, Text(TextKind.RETIRED)), *close)
    return _S.RETIRING, (*effects, KeepWaiter(), *close)


def _idle_tick(stage: Stage, event: IdleTick) -> _Out | None:
    if stage != _S.RUNNING:
        return None
    if event.idle_timeout <= 0:
        return stage, ()
    if event.busy:  # busy, or someone follows its resources: a stop would cut them off
        return stage, (ArmIdleTimer(event.idle_timeout),)
    remaining = event.idle_timeout - (event.now - event.last_activity)
    if remaining > IDLE_SLACK:
        return stage, (ArmIdleTimer(remaining),)
    return _stop(stage, requested=False)


def _link_lost(stage: Stage, event: LinkLost) -> _Out | None:
    if stage != _S.RUNNING:
        return None  # while starting, the start itself fails and says why
    if event.auth:  # the login was lost: a restart would only be refused again
        return _S.CLOSING, (
            NoteError(event.reason, "login lost"),
            ForgetProbe(),
            CloseSession(),
            Tell(Supervisor.STOPPED),
        )
    return _crash(f"connection lost: {event.reason}")


def _probe_failed(stage: Stage, event: ProbeFailed) -> _Out | None:
    return _crash(f"health check failed: {event.reason}") if stage == _S.RUNNING else None


def _restart(stage: Stage, event: RestartDue) -> _Out | None:
    if stage not in (_S.RESTARTING, _S.RESTARTING_CLOSING):
        return None
    to, effects = _start(_S.STOPPED if stage == _S.RESTARTING else _S.STOPPED_CLOSING)
    return to, (CountRestart(), *effects)


_GIVE_UP = {
    _S.RESTARTING: _S.FAILED,
    _S.STOPPED: _S.FAILED,
    _S.RESTARTING_CLOSING: _S.FAILED_CLOSING,
    _S.STOPPED_CLOSING: _S.FAILED_CLOSING,
}


def _give_up(stage: Stage, event: GaveUp) -> _Out | None:
    if stage not in _GIVE_UP:
        return None
    text = Text(TextKind.GAVE_UP, event.reason)
    return _GIVE_UP[stage], (
        NoteGaveUp(event.reason),
        FailWaiting(ErrorType.FAILED, text),
        AnswerDescribes(),
        FailStarts(ErrorType.FAILED, text),
    )


def _stay_down(stage: Stage, event: StayingDown) -> _Out | None:
    if stage not in (_S.RESTARTING, _S.RESTARTING_CLOSING):
        return None
    down = _S.STOPPED if stage == _S.RESTARTING else _S.STOPPED_CLOSING
    if event.wanted:
        return _start(down)
    # No restart comes: whoever waited for one is answered now.
    text = Text(TextKind.STAYED_DOWN)
    return down, (_NOT_STARTED_WAITING, AnswerDescribes(), FailStarts(ErrorType.CONNECTION, text))


def _released(stage: Stage, event: Released) -> _Out:
    # The actor tears down what is open itself.
    return (_S.RETIRED_IDLE if stage in _NEVER_STARTED else _S.RETIRED), ()


RULES: dict[type[Event], Callable[[Stage, Any], _Out | None]] = {
    CallArrived: _call,
    StartAsked: _start_asked,
    DescribeAsked: _describe,
    SubscribeAsked: _subscribe,
    Connected: _connected,
    ConnectFailed: _connect_failed,
    NeedsLogin: _login_required,
    SessionClosed: _closed,
    StopAsked: _stop_asked,
    RetireAsked: _retire,
    IdleTick: _idle_tick,
    LinkLost: _link_lost,
    ProbeFailed: _probe_failed,
    RestartDue: _restart,
    GaveUp: _give_up,
    StayingDown: _stay_down,
    Released: _released,
}

_OPENING_OR_CANCELLED = _EVERY - {_S.CONNECTING} - _CANCELLING
REFUSED: dict[type[Event], frozenset[Stage]] = {
    CallArrived: frozenset(),
    StartAsked: frozenset(),
    DescribeAsked: frozenset(),
    SubscribeAsked: frozenset(),
    Connected: _OPENING_OR_CANCELLED,
    ConnectFailed: _OPENING_OR_CANCELLED,
    NeedsLogin: _OPENING_OR_CANCELLED,
    SessionClosed: frozenset(s for s in Stage if s.link != Link.CLOSING),
    StopAsked: frozenset(),
    RetireAsked: frozenset(),
    IdleTick: _EVERY - {_S.RUNNING},
    LinkLost: _EVERY - {_S.RUNNING},
    ProbeFailed: _EVERY - {_S.RUNNING},
    RestartDue: _EVERY - {_S.RESTARTING, _S.RESTARTING_CLOSING},
    GaveUp: _EVERY - set(_GIVE_UP),
    StayingDown: _EVERY - {_S.RESTARTING, _S.RESTARTING_CLOSING},
    Released: frozenset(),
}
"""Where each event kind means nothing (news of a session that is not opening, a restart of a
server that did not crash): the stage stays and the actor drops the event."""


def step(stage: Stage, event: Event) -> Transition:
    """What ``event`` does in ``stage``: the next stage and the effects, in order."""
    if stage in REFUSED[type(event)]:
        return Transition(stage, refused=True)
    out = RULES[type(event)](stage, event)
    if out is None:  # a rule and REFUSED disagree: a bug here, which the tests catch
        raise AssertionError(f"no rule for {event.label!r} in {stage.value}")
    return Transition(out[0], out[1])


def transitions() -> Iterator[tuple[Stage, str, Stage]]:
    """Every change of stage the rules make, as (from, event label, to), once each; the actor's
    own end (`Released`, from anywhere to retired) is left out."""
    seen: set[tuple[Stage, str, Stage]] = set()
    for stage in Stage:
        for event in EVENTS:
            if isinstance(event, Released):
                continue
            moved = step(stage, event)
            edge = (stage, event.label, moved.stage)
            if not moved.refused and moved.stage != stage and edge not in seen:
                seen.add(edge)
                yield edge
