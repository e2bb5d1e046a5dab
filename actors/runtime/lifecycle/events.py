"""What happens to a server: the lifecycle's events, frozen, carrying whatever the rules need
to know (the time, whether calls wait for a start) so the rules read nothing else."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EVENTS",
    "IDLE_SLACK",
    "CallArrived",
    "ConnectFailed",
    "Connected",
    "DescribeAsked",
    "Event",
    "GaveUp",
    "IdleTick",
    "LinkLost",
    "NeedsLogin",
    "ProbeFailed",
    "Released",
    "RestartDue",
    "RetireAsked",
    "SessionClosed",
    "StartAsked",
    "StayingDown",
    "StopAsked",
    "SubscribeAsked",
]

# An idle check that finds less than this left of the idle timeout stops the server now.
IDLE_SLACK = 0.005


@dataclass(frozen=True)
class Event:
    """Something that happened to the server. ``label`` names it in the docs' table."""

    @property
    def label(self) -> str:
        return _LABELS[type(self)]


@dataclass(frozen=True)
class CallArrived(Event):
    """A request (tool call, read, prompt, completion) passed admission."""

    lazy_start: bool = True

    @property
    def label(self) -> str:
        return "call" if self.lazy_start else "call (lazyStart off)"


@dataclass(frozen=True)
class StartAsked(Event):
    """`StartServer`."""


@dataclass(frozen=True)
class DescribeAsked(Event):
    tools_known: bool = False

    @property
    def label(self) -> str:
        return "describe (tools known)" if self.tools_known else "describe"


@dataclass(frozen=True)
class SubscribeAsked(Event):
    lazy_start: bool = True

    @property
    def label(self) -> str:
        return "subscribe" if self.lazy_start else "subscribe (lazyStart off)"


@dataclass(frozen=True)
class Connected(Event):
    """The session opened: handshake done, tools listed."""


@dataclass(frozen=True)
class ConnectFailed(Event):
    """The start failed; ``retry`` is false when the same start would fail the same way.
    ``wanted``: calls wait for a start (and lazy start is on)."""

    error: str = "refused"
    retry: bool = True
    supervised: bool = True
    wanted: bool = False

    @property
    def label(self) -> str:
        if not self.retry:
            return "start failed (no retry)"
        return "start failed" if self.supervised else "start failed (unsupervised)"


@dataclass(frozen=True)
class NeedsLogin(Event):
    error: str = "login needed"
    wanted: bool = False


@dataclass(frozen=True)
class SessionClosed(Event):
    wanted: bool = False

    @property
    def label(self) -> str:
        return "closed (calls wait)" if self.wanted else "closed"


@dataclass(frozen=True)
class StopAsked(Event):
    """`StopServer` or `Shutdown`."""


@dataclass(frozen=True)
class RetireAsked(Event):
    """The server is being unregistered."""

    reason: str = "unregistered"


@dataclass(frozen=True)
class IdleTick(Event):
    """An idle check at ``now``; ``busy``: calls in flight or waiting, or subscribers."""

    now: float = 0.0
    last_activity: float = 0.0
    idle_timeout: float = 300.0
    busy: bool = False

    @property
    def label(self) -> str:
        expired = self.now - self.last_activity >= self.idle_timeout - IDLE_SLACK
        return "idle timeout" if self.idle_timeout > 0 and not self.busy and expired else "idle check"


@dataclass(frozen=True)
class LinkLost(Event):
    """The process exited or the stream closed; ``auth``: the login was lost."""

    reason: str = "stream closed"
    auth: bool = False

    @property
    def label(self) -> str:
        return "login lost" if self.auth else "connection lost"


@dataclass(frozen=True)
class ProbeFailed(Event):
    reason: str = "no answer"


@dataclass(frozen=True)
class RestartDue(Event):
    """The supervisor's backoff passed (`Restart`)."""


@dataclass(frozen=True)
class GaveUp(Event):
    """Too many restarts in the window (`GiveUp`)."""

    reason: str = "too many restarts"


@dataclass(frozen=True)
class StayingDown(Event):
    """A `temporary` server is not restarted (`StayDown`)."""

    wanted: bool = False

    @property
    def label(self) -> str:
        return "stay down (calls wait)" if self.wanted else "stay down"


@dataclass(frozen=True)
class Released(Event):
    """The actor itself stops: nothing after this."""


_LABELS: dict[type[Event], str] = {
    StartAsked: "start",
    Connected: "connected",
    NeedsLogin: "login needed",
    StopAsked: "stop",
    RetireAsked: "retire",
    ProbeFailed: "probe failed",
    RestartDue: "restart",
    GaveUp: "give up",
    Released: "actor stopped",
}

EVENTS: tuple[Event, ...] = (
    CallArrived(),
    CallArrived(lazy_start=False),
    StartAsked(),
    DescribeAsked(),
    DescribeAsked(tools_known=True),
    SubscribeAsked(),
    SubscribeAsked(lazy_start=False),
    Connected(),
    ConnectFailed(),
    ConnectFailed(retry=False),
    ConnectFailed(supervised=False),
    NeedsLogin(),
    SessionClosed(),
    SessionClosed(wanted=True),
    StopAsked(),
    RetireAsked(),
    IdleTick(now=1000.0, last_activity=0.0),
    IdleTick(now=1000.0, last_activity=999.0),
    LinkLost(),
    LinkLost(auth=True),
    ProbeFailed(),
    RestartDue(),
    GaveUp(),
    StayingDown(),
    StayingDown(wanted=True),
    Released(),
)
"""One event of each kind and variant: what the tests and the docs' table enumerate."""
