"""The lifecycle's stages (the public `ServerState` refined by the link beneath) and texts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from actors.runtime.state import ServerState

__all__ = ["Link", "Stage", "Text", "TextKind"]


class Link(Enum):
    """The connection beneath the stage: what the transport itself is doing."""

    DOWN = "down"
    OPENING = "opening"
    UP = "up"
    CLOSING = "closing"


class Stage(Enum):
    """The lifecycle's states; `public` is what `ServerStatus.state` shows."""

    IDLE = "idle"
    CONNECTING = "connecting"
    AWAITING_CLOSE = "awaiting_close"
    """Starting, once the previous session has closed."""
    RUNNING = "running"
    CLOSING = "closing"
    CLOSING_THEN_START = "closing_then_start"
    CANCELLING = "cancelling"
    """Stopping while the session opens: the start is cancelled."""
    CANCELLING_THEN_START = "cancelling_then_start"
    STOPPED = "stopped"
    STOPPED_CLOSING = "stopped_closing"
    RESTARTING = "restarting"
    RESTARTING_CLOSING = "restarting_closing"
    FAILED = "failed"
    FAILED_CLOSING = "failed_closing"
    RETIRING = "retiring"
    RETIRING_CANCEL = "retiring_cancel"
    RETIRED = "retired"
    RETIRED_IDLE = "retired_idle"
    """Retired before it ever started: shown idle."""

    @property
    def public(self) -> ServerState:
        return _PUBLIC[self]

    @property
    def link(self) -> Link:
        return _LINK[self]

    @property
    def retired(self) -> bool:
        return self in _RETIRED


_S = Stage
_PUBLIC = {
    _S.IDLE: ServerState.IDLE,
    _S.CONNECTING: ServerState.STARTING,
    _S.AWAITING_CLOSE: ServerState.STARTING,
    _S.RUNNING: ServerState.RUNNING,
    _S.CLOSING: ServerState.STOPPING,
    _S.CLOSING_THEN_START: ServerState.STOPPING,
    _S.CANCELLING: ServerState.STOPPING,
    _S.CANCELLING_THEN_START: ServerState.STOPPING,
    _S.STOPPED: ServerState.STOPPED,
    _S.STOPPED_CLOSING: ServerState.STOPPED,
    _S.RESTARTING: ServerState.RESTARTING,
    _S.RESTARTING_CLOSING: ServerState.RESTARTING,
    _S.FAILED: ServerState.FAILED,
    _S.FAILED_CLOSING: ServerState.FAILED,
    # Retired is not a public state: status shows it stopping, then stopped.
    _S.RETIRING: ServerState.STOPPING,
    _S.RETIRING_CANCEL: ServerState.STOPPING,
    _S.RETIRED: ServerState.STOPPED,
    _S.RETIRED_IDLE: ServerState.IDLE,
}
_LINK = {
    _S.IDLE: Link.DOWN,
    _S.CONNECTING: Link.OPENING,
    _S.AWAITING_CLOSE: Link.CLOSING,
    _S.RUNNING: Link.UP,
    _S.CLOSING: Link.CLOSING,
    _S.CLOSING_THEN_START: Link.CLOSING,
    _S.CANCELLING: Link.OPENING,
    _S.CANCELLING_THEN_START: Link.OPENING,
    _S.STOPPED: Link.DOWN,
    _S.STOPPED_CLOSING: Link.CLOSING,
    _S.RESTARTING: Link.DOWN,
    _S.RESTARTING_CLOSING: Link.CLOSING,
    _S.FAILED: Link.DOWN,
    _S.FAILED_CLOSING: Link.CLOSING,
    _S.RETIRING: Link.CLOSING,
    _S.RETIRING_CANCEL: Link.OPENING,
    _S.RETIRED: Link.DOWN,
    _S.RETIRED_IDLE: Link.DOWN,
}
_RETIRED = frozenset({_S.RETIRING, _S.RETIRING_CANCEL, _S.RETIRED, _S.RETIRED_IDLE})


class TextKind(Enum):
    STOPPED = "server {namespace!r} was stopped"
    START_FAILED = "server {namespace!r} failed to start: {detail}"
    FAILED_TO_START = "failed to start: {detail}"
    STOPPED_WHILE_STARTING = "stopped while starting"
    GAVE_UP = "server {namespace!r} gave up after {restarts} restarts ({detail})"
    IS_FAILED = (
        "server {namespace!r} is failed after {restarts} restarts ({last_error}); "
        "start it explicitly to try again"
    )
    NOT_STARTED = "server {namespace!r} is not running and lazyStart is off; start it first"
    STAYED_DOWN = "server {namespace!r} stopped ({last_error}) and is not restarted (restart: temporary)"
    RETIRED = "{retired}"
    AS_IS = "{detail}"


@dataclass(frozen=True)
class Text:
    kind: TextKind
    detail: str = ""

    def render(self, namespace: str, restarts: int, last_error: str | None, retired: str | None) -> str:
        return self.kind.value.format(
            namespace=namespace, restarts=restarts, last_error=last_error, retired=retired, detail=self.detail
        )
