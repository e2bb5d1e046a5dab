"""Peer-death detection and diagnostics: why a session ended, told once, with evidence.

`PeerWatch` hears of the peer's death as it happens (the end of the server's message stream,
the exit of its process, a refused login, a probe that got no answer) and says why in one
reason that names the exit status, the last stderr lines and any output that was not JSON-RPC.
What to do about a death (fail the in-flight requests, stop the session, tell the listener) is
given to it as hooks by the composition (`SDKTransport`): it reaches into no other part.

Owned by the event-loop thread. The stdio process's reader thread never calls in here directly:
`actors.mcp.stdio_process` hands its exit over to the loop before ``on_exit`` runs.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

import anyio
import anyio.abc

from actors.mcp.auth import AuthError, auth_failure
from actors.mcp.sdk_transport.failures import exc_text
from actors.mcp.stdio_process import StdioProcess
from actors.mcp.transport import stray_text

__all__ = ["PeerWatch"]

logger = logging.getLogger(__name__)

_REPORTED_STDERR_LINES: Final = 8
_QUOTED_STRAY_LINES: Final = 2
_EXIT_STATUS_WAIT: Final = 0.5
_STDERR_EOF_WAIT: Final = 0.3
_REASON_WAIT: Final = 2.0
_SUSPECT_WAIT: Final = 0.2
_CHECK_TIMEOUT: Final = 10.0


class _Closable(Protocol):
    def close(self) -> None: ...


@dataclass
class _ConnectAttempt:
    """What one connection attempt started."""

    stdio: StdioProcess | None = None
    stream_errors: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    """The last items of output that were not JSON-RPC (what a death quotes)."""
    first_errors: list[str] = field(default_factory=list)
    """The first ones (a banner printed before the server speaks MCP: what a timeout quotes)."""
    read_stream: _Closable | None = None


class PeerWatch:
    """Watches one session's peer; single use, like the transport.

    ``on_stop`` ends the session now (fails in-flight requests, stops the owner), ``on_closed``
    tells the listener the reason, ``abort`` cuts a handshake short and ``probe(timeout)`` asks
    the server whether it is there.
    """

    def __init__(
        self,
        label: str,
        *,
        on_stop: Callable[[], None],
        on_closed: Callable[[str, bool], None],
        abort: Callable[[], None],
        probe: Callable[[float], Awaitable[None]],
    ) -> None:
        self.label = label
        self._on_stop = on_stop
        self._on_closed = on_closed
        self._abort = abort
        self._probe = probe
        self.spawned_pid: int | None = None
        """The pid of the last server process started, kept after it exits (diagnostics)."""
        self.closing = False
        """`close` (or a failed connect) is ending the session: nothing it meets is a death."""
        self.connected = False
        """The handshake finished; set by the owner."""
        self.ended = False
        """The owner has finished; set by the owner."""
        self._attempt = _ConnectAttempt()
        self._reason: str | None = None
        self._reason_ready: anyio.Event | None = None  # made on the loop, by `begin`
        self._lost_hint: str | None = None
        self._lost_reported = False
        self._auth_error: AuthError | None = None
        self._checks: anyio.abc.TaskGroup | None = None
        self._checking = False

    def begin(self) -> None:
        """Arm the watch for a connect (on the loop)."""
        self._reason_ready = anyio.Event()

    # -- what is known -----------------------------------------------------------------------

    @property
    def reason(self) -> str | None:
        """Why the session ended, once it has."""
        return self._reason

    @property
    def auth_error(self) -> AuthError | None:
        """The refusal that ended the session, if a refusal did."""
        return self._auth_error

    @property
    def lost_hint(self) -> str | None:
        """What was seen of the peer's death, before the reason is composed."""
        return self._lost_hint

    @property
    def stopping(self) -> bool:
        """The session is ending: closed, or its peer is gone."""
        return self.closing or self._lost_hint is not None or self._lost_reported

    @property
    def pid(self) -> int | None:
        """The stdio server's pid while its process runs, else None."""
        stdio = self._attempt.stdio
        return stdio.pid if stdio is not None else None

    def set_reason(self, reason: str) -> None:
        """The first reason given is the one that stays."""
        if self._reason is None:
            self._reason = reason
        if self._reason_ready is not None:
            self._reason_ready.set()

    def close_requested(self, reason: str) -> None:
        """`close`, or a failed connect, ends the session for ``reason``."""
        self.closing = True
        self.set_reason(reason)

    # -- one connection attempt --------------------------------------------------------------

    def new_attempt(self) -> None:
        """A connection attempt begins: forget the evidence of the last one."""
        self.unwatch_process()
        self._attempt = _ConnectAttempt()

    def retry(self) -> None:
        """The era negotiation starts over: the refused attempt's teardown was no death."""
        self._lost_hint = None
        self._reason = None

    def process_started(self, stdio: StdioProcess) -> None:
        self._attempt.stdio = stdio

    def after_spawn(self) -> None:
        """The server's process was started (or failed to start)."""
        stdio = self._attempt.stdio
        if stdio is not None and stdio.process is not None:
            self.spawned_pid = stdio.process.pid

    def stream_opened(self, read_stream: _Closable) -> None:
        self._attempt.read_stream = read_stream

    def unreadable(self, text: str) -> None:
        """The server sent something that is not JSON-RPC (kept for the reason)."""
        self._attempt.stream_errors.append(text)
        if len(self._attempt.first_errors) < _QUOTED_STRAY_LINES:
            self._attempt.first_errors.append(text)

    @property
    def stray_output(self) -> tuple[str, ...]:
        """The first lines (two at most) a stdio server of this attempt wrote to stdout that are
        not JSON-RPC, quoted and cut short; none for HTTP. A snapshot: safe to hand over."""
        if self._attempt.stdio is None:
            return ()
        return tuple(self._attempt.first_errors)

    def process_exited(self) -> None:
        self.peer_lost("the server process exited")

    def stdout_failed(self, error: ConnectionError) -> None:
        """The stream gave up on the server's output (a message over ``max_message_bytes``)."""
        self.peer_lost(str(error))

    def unwatch_process(self) -> None:
        if self._attempt.stdio is not None:
            self._attempt.stdio.unwatch()

    # -- deaths --------------------------------------------------------------------------------

    def peer_lost(self, hint: str) -> None:
        """The server's stream ended or its process exited: stop the session now."""
        if self.closing or self._lost_hint is not None or self.ended:
            return
        self._lost_hint = hint
        logger.info("%s: %s", self.label, hint)
        if self._attempt.read_stream is not None:
            # Ends the SDK's receive loop, which fails every pending request (the handshake too)
            # even if a grandchild still holds the server's stdout open.
            self._attempt.read_stream.close()
        self._on_stop()

    def report_lost(self, reason: str, *, auth: bool = False) -> None:
        """The session is over for ``reason`` (``auth``: a refused login): stop it and tell the
        listener, once."""
        if self._lost_reported:
            return
        self._lost_reported = True
        self.set_reason(reason)
        self._on_stop()
        logger.warning("%s", reason)
        self._on_closed(reason, auth)

    def auth_in(self, failure: BaseException) -> AuthError | None:
        """The `AuthError` this session met, or the first one in ``failure`` (which the SDK's
        task groups may have wrapped), the SDK's OAuth errors and HTTP 401/403 included."""
        if self._auth_error is not None:
            return self._auth_error
        if isinstance(failure, BaseExceptionGroup):
            for inner in failure.exceptions:
                if (found := self.auth_in(inner)) is not None:
                    return found
            return None
        return auth_failure(failure, self.label)

    def note_failure(self, failure: BaseException) -> AuthError | None:
        """What ended the owner: remember a refusal in it (before the requests wake)."""
        auth = self.auth_in(failure)
        if auth is not None and self._auth_error is None and not self.closing:
            self._auth_error = auth
        return auth

    def session_failed(self, failure: BaseException) -> None:
        """The connected session ended with ``failure`` (a transport crash ends the client)."""
        auth = self.note_failure(failure)
        if self.closing or self._lost_reported:
            logger.debug("%s: error while closing: %s", self.label, exc_text(failure))
            return
        if auth is not None:
            self.report_lost(self._reason or str(auth), auth=True)
            return
        self.report_lost(self._reason or f"{self.label}: the connection was lost: {exc_text(failure)}")

    def refused(self, failure: AuthError) -> None:
        """The credentials were refused, or a login is needed that nobody can do now: the
        session cannot go on (the session's auth flow reports it as it fails)."""
        if self._auth_error is not None or self.closing or self.ended:
            return
        self._auth_error = failure
        if self.connected:
            self.report_lost(str(failure), auth=True)
            return
        # The handshake cannot succeed; over SSE it would not even end (the SDK only logs a
        # failed POST), so end it now: `connect` raises the failure.
        self.set_reason(str(failure))
        self._abort()

    # -- reasons and evidence ------------------------------------------------------------------

    async def wait_reason(self, what: str, cause: BaseException | None) -> str:
        """Why a request was cut off: the session's reason, or (it goes on) what cut it off."""
        # Stopping: the owner is composing the reason (exit status, stderr). Otherwise the SDK
        # cut one request off (an HTTP stream dropped): wait briefly, then check the server.
        ready = self._reason_ready
        if ready is not None:
            with anyio.move_on_after(_REASON_WAIT if self.stopping else _SUSPECT_WAIT):
                await ready.wait()
        if self._reason is not None:
            return f"{self._reason} (during {what})"
        self.suspect()
        detail = f": {exc_text(cause)}" if cause is not None else ""
        return f"{self.label}: the connection was lost during {what}{detail}"

    async def describe(self, what: str) -> str:
        """``what`` plus the exit status, the last stderr lines and any unreadable output."""
        parts = [f"{self.label}: {what}"]
        stdio = self._attempt.stdio
        if stdio is not None:
            status = await stdio.exit_status(_EXIT_STATUS_WAIT)
            if status:
                parts.append(status)
            await stdio.stderr_closed(_STDERR_EOF_WAIT)
        diagnostics = self.diagnostics()
        if diagnostics:
            parts.append(diagnostics)
        return "; ".join(parts)

    def diagnostics(self) -> str:
        """The last stderr lines and the output that was not JSON-RPC, as they are now."""
        parts = []
        stdio = self._attempt.stdio
        if stdio is not None and (lines := stdio.stderr_lines(_REPORTED_STDERR_LINES)):
            parts.append("stderr: " + " | ".join(lines))
        if errors := self._attempt.stream_errors:
            parts.append(
                stray_text(errors)
                if stdio is not None
                else "the server sent what is not MCP: " + " | ".join(errors)
            )
        return "; ".join(parts)

    # -- liveness checks -------------------------------------------------------------------------

    def check_in(self, checks: anyio.abc.TaskGroup | None) -> None:
        """Run liveness checks in ``checks`` (the owner's task group), or none (None)."""
        self._checks = checks

    def suspect(self) -> None:
        """A request was cut off but the session goes on: find out now whether the server is there."""
        checks = self._checks
        if checks is None or self._checking or self.stopping:
            return
        self._checking = True
        checks.start_soon(self._check_alive)

    async def _check_alive(self) -> None:
        try:
            await self._probe(_CHECK_TIMEOUT)
        except ConnectionError:
            pass  # the transport failed; the owner reports the end of the session
        except TimeoutError:
            self.peer_lost(f"the server did not answer a probe within {_CHECK_TIMEOUT}s")
        except Exception as exc:
            logger.debug("%s: liveness probe failed: %s", self.label, exc_text(exc))
        finally:
            self._checking = False
