"""What the actor does for a transition: the lifecycle's effects, frozen, in order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from actors.runtime.lifecycle.stages import Stage, Text
from actors.tools import ErrorType

__all__ = [
    "AnswerDescribes",
    "AnswerNow",
    "AnswerStarts",
    "AnswerStops",
    "ArmIdleTimer",
    "CancelStart",
    "CloseSession",
    "CompileChecks",
    "CountError",
    "CountRestart",
    "DispatchRequest",
    "Effect",
    "FailInFlight",
    "FailStarts",
    "FailWaiting",
    "FlushWaiting",
    "FollowAtServer",
    "FollowSubscriptions",
    "ForgetProbe",
    "KeepWaiter",
    "Learn",
    "MarkRunning",
    "NoteError",
    "NoteGaveUp",
    "NoteRetired",
    "OpenSession",
    "Queue",
    "RecordCrash",
    "Refuse",
    "ResetRestartCount",
    "Supervisor",
    "Tell",
    "Transition",
]


@dataclass(frozen=True)
class Effect:
    """Something the actor does, in the order given."""


class Supervisor(Enum):
    UP = "up"
    CRASHED = "crashed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class DispatchRequest(Effect):
    """Send this request to the session now."""


@dataclass(frozen=True)
class Queue(Effect):
    """Keep this request until the server runs (or its deadline passes)."""


@dataclass(frozen=True)
class Refuse(Effect):
    """Answer this request with a failure."""

    error_type: ErrorType
    text: Text


@dataclass(frozen=True)
class AnswerNow(Effect):
    """Answer this start, stop or describe request now (status, or the tools known)."""


@dataclass(frozen=True)
class KeepWaiter(Effect):
    """Keep this start, stop or describe request's reply until its outcome (or accept this
    subscription)."""


@dataclass(frozen=True)
class OpenSession(Effect):
    """A new connection: open a session (the start)."""


@dataclass(frozen=True)
class CancelStart(Effect):
    """Cancel the start under way (the transport closes what it had opened)."""


@dataclass(frozen=True)
class CloseSession(Effect):
    pass


@dataclass(frozen=True)
class Learn(Effect):
    """Take in what the start found (server info, tools, catalog)."""


@dataclass(frozen=True)
class MarkRunning(Effect):
    """Note the activity and how long the start took."""


@dataclass(frozen=True)
class Tell(Effect):
    """Tell the supervisor the server is up, crashed (``reason``) or stopped."""

    what: Supervisor
    reason: str = ""


@dataclass(frozen=True)
class FollowSubscriptions(Effect):
    """Subscribe the new session to every followed resource."""


@dataclass(frozen=True)
class FollowAtServer(Effect):
    """Subscribe the session to this subscription's resource (if it is new)."""


@dataclass(frozen=True)
class FlushWaiting(Effect):
    """Send every queued request."""


@dataclass(frozen=True)
class FailWaiting(Effect):
    error_type: ErrorType
    text: Text


@dataclass(frozen=True)
class FailInFlight(Effect):
    """Answer every request in flight with this failure now, before the session closes under
    them (which would fail them as a dead server's, ``connection``)."""

    error_type: ErrorType
    text: Text


@dataclass(frozen=True)
class AnswerDescribes(Effect):
    """Answer every waiting describe request with the tools known (maybe none)."""


@dataclass(frozen=True)
class AnswerStarts(Effect):
    """Answer every waiting start request with the status."""


@dataclass(frozen=True)
class FailStarts(Effect):
    error_type: ErrorType
    text: Text


@dataclass(frozen=True)
class AnswerStops(Effect):
    """Answer every waiting stop request with the status."""


@dataclass(frozen=True)
class NoteError(Effect):
    """``last_error`` and ``last_error_at``, kept after the server recovers; and the log."""

    reason: str
    what: str = "crashed"
    """What happened, for the log."""


@dataclass(frozen=True)
class CountError(Effect):
    pass


@dataclass(frozen=True)
class RecordCrash(Effect):
    reason: str


@dataclass(frozen=True)
class ForgetProbe(Effect):
    pass


@dataclass(frozen=True)
class ResetRestartCount(Effect):
    pass


@dataclass(frozen=True)
class CountRestart(Effect):
    pass


@dataclass(frozen=True)
class ArmIdleTimer(Effect):
    delay: float


@dataclass(frozen=True)
class NoteRetired(Effect):
    reason: str


@dataclass(frozen=True)
class NoteGaveUp(Effect):
    reason: str


@dataclass(frozen=True)
class CompileChecks(Effect):
    """Compile every tool's argument check now, after the queued calls went."""


@dataclass(frozen=True)
class Transition:
    stage: Stage
    effects: tuple[Effect, ...] = ()
    refused: bool = False
