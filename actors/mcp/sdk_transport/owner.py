"""The session owner: the one long-lived task per session that enters and leaves the SDK.

``mcp.Client`` must be left in the task that entered it (the SDK's cancel scopes demand it), and
the session outlives the `connect` call that opened it. So `SessionOwner.start` starts the owner
task with anyio's ``TaskGroup.start`` in the task group of its loop's `SessionHost`: until the
handshake is done the task runs under the caller's cancel scopes (a connect timeout or a
cancelled caller ends it), a failed handshake is raised to the caller as the exception it is,
and ``task_status.started(server_info)`` hands the caller what the server said. The task then
serves until `stop` and leaves the client; `wait_finished` waits (bounded) for that.

Requests from other tasks use the published `client`, so many calls share one session.

Owned by the event-loop thread: every method is called there. The `SessionHost` task group is
one per loop (an anyio ``RunVar``); its task is spawned with `EventLoop.spawn`, which cannot
report readiness, so the first session of a loop waits for the group once.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from typing import Any, Final

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from actors.mcp.listen import ListenKinds, ListenStreams
from actors.mcp.loop import EventLoop
from actors.mcp.redaction import Redactor
from actors.mcp.revisions import Notices, Revision, revision_of
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.sdk_transport.channel import Prepared, open_channel
from actors.mcp.sdk_transport.convert import server_info
from actors.mcp.sdk_transport.failures import exc_text, first_in
from actors.mcp.sdk_transport.negotiation import EraNegotiation, PinRejected
from actors.mcp.sdk_transport.notifications import NotificationRouter
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.sdk_transport.server_requests import ServerRequests
from actors.mcp.sdk_transport.tasks import TasksExtension
from actors.mcp.transport import ServerInfo

__all__ = ["CLIENT_INFO", "SessionHost", "SessionOwner"]

logger = logging.getLogger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("mcp-actors")
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


CLIENT_INFO: Final = types.Implementation(name="mcp-actors", version=_version())
"""How the client introduces itself; the version read once, at import (never on the loop)."""

_CLOSE_MARGIN: Final = 5.0

_HOSTS: anyio.lowlevel.RunVar[SessionHost] = anyio.lowlevel.RunVar("mcp_actors_session_host")


class SessionHost:
    """The task group the session owners of one event loop run in, for as long as the loop runs."""

    def __init__(self) -> None:
        self._group: anyio.abc.TaskGroup | None = None
        self._ready = anyio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def current(cls) -> SessionHost:
        """This loop's host, started on first use; ``RuntimeError`` if the loop is stopping."""
        try:
            host = _HOSTS.get()
        except LookupError:
            host = cls()
            loop = EventLoop.current()
            if loop is not None:
                loop.spawn(host._serve, name="mcp sessions")
            else:
                # Not on an EventLoop thread (a bare anyio.run, say): a plain asyncio task.
                host._task = asyncio.get_running_loop().create_task(host._serve())
            _HOSTS.set(host)
        # The host task runs on this very loop, so it is ready within a few loop turns; the bound
        # only keeps a wedged loop from parking every session start behind it.
        with anyio.move_on_after(_CLOSE_MARGIN):
            await host._ready.wait()
        if host._group is None:
            raise RuntimeError("the event loop's session host did not start")
        return host

    async def _serve(self) -> None:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                self._ready.set()
                await anyio.sleep_forever()
        finally:
            self._group = None
            self._ready.set()

    async def start(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: str) -> Any:
        """``TaskGroup.start(fn, *args)`` in the host's group: what ``fn`` gave ``started``."""
        group = self._group
        if group is None:
            raise RuntimeError("the event loop is not running")
        return await group.start(fn, *args, name=name)


class SessionOwner:
    """Owns one session: its attempts (one per era tried), the client, its listen streams."""

    def __init__(
        self,
        label: str,
        target: StdioCommand | HTTPEndpoint,
        options: SDKOptions,
        redact: Redactor,
        *,
        watch: PeerWatch,
        negotiation: EraNegotiation,
        router: NotificationRouter,
        answers: ServerRequests,
    ) -> None:
        self._label = label
        self._target = target
        self._options = options
        self._redact = redact
        self._watch = watch
        self._negotiation = negotiation
        self._router = router
        self._answers = answers
        self.client: Client | None = None
        """The connected client, while the session serves."""
        self.streams: ListenStreams | None = None
        """The listen streams of a 2026-07-28 session, while it serves."""
        self.era: str | None = None
        self.negotiated_protocol: str | None = None
        self.connect_mode: str | None = None
        self.server_info: ServerInfo | None = None
        self._scope: anyio.CancelScope | None = None  # the anyio objects are made on the loop
        self._stop: anyio.Event | None = None
        self._finished: anyio.Event | None = None
        self._entered = False

    @property
    def revision(self) -> Revision:
        """What the negotiated protocol revision does differently (`actors.mcp.revisions`)."""
        return revision_of(self.negotiated_protocol)

    @property
    def launched(self) -> bool:
        return self._finished is not None

    async def start(self, prepared: Prepared) -> ServerInfo:
        """Start the owner task; return once the handshake is done (or raise why it failed)."""
        self._scope = anyio.CancelScope()
        self._stop = anyio.Event()
        self._finished = finished = anyio.Event()
        try:
            try:
                host = await SessionHost.current()
                info: ServerInfo = await host.start(self._run, prepared, name=f"mcp-session {self._label}")
            except RuntimeError as exc:  # the loop is stopping
                if self._entered:
                    raise
                raise ConnectionError(f"{self._label}: cannot start the session: {exc}") from exc
        finally:
            if not self._entered:
                finished.set()
        return info

    def stop(self) -> None:
        """End the session (the owner leaves the client and reaps the server)."""
        if self._stop is not None:
            self._stop.set()

    def abort(self) -> None:
        """Cut the handshake short (a refusal, or `close` during `connect`)."""
        if self._scope is not None and not self._watch.connected:
            self._scope.cancel()

    async def wait_finished(self) -> None:
        """Wait until the owner has left the client, within the close graces."""
        finished = self._finished
        if finished is None:
            return
        options = self._options
        with anyio.move_on_after(options.close_grace + options.kill_grace + _CLOSE_MARGIN) as scope:
            await finished.wait()
        if scope.cancelled_caught:
            logger.warning("%s: the session did not wind down in time", self._label)

    async def _run(self, prepared: Prepared, *, task_status: anyio.abc.TaskStatus[ServerInfo]) -> None:
        self._entered = True
        watch = self._watch
        try:
            failure = await self._serve(prepared, task_status)
        except BaseException:
            # Cancelled: the loop stops, or (before the handshake ended) the connect's caller
            # was, and `connect` gives the reason.
            if watch.connected:
                watch.set_reason(watch.reason or f"{self._label}: the session ended")
            self._wound_down()
            raise
        error: BaseException | None = None
        try:
            if not watch.connected:
                error = self._connect_error(failure)
            elif failure is not None:
                watch.session_failed(failure)
            watch.set_reason(watch.reason or f"{self._label}: the session ended")
        finally:
            self._wound_down()
        if error is not None:
            raise error

    def _wound_down(self) -> None:
        self.client = None
        self.streams = None
        self._watch.check_in(None)
        self._watch.unwatch_process()
        self._watch.ended = True
        assert self._finished is not None
        self._finished.set()

    async def _serve(
        self, prepared: Prepared, task_status: anyio.abc.TaskStatus[ServerInfo]
    ) -> Exception | None:
        """Serve until stopped or lost; the exception that ended the session, if one did."""
        assert self._scope is not None
        try:
            with self._scope:
                async with anyio.create_task_group() as checks:
                    self._watch.check_in(checks)
                    try:
                        await self._attempts(prepared, task_status)
                    except Exception as exc:
                        return exc
        except Exception as exc:  # the owner must not fail the host's task group
            return exc
        return None

    def _connect_error(self, failure: Exception | None) -> BaseException:
        """What `connect` raises for a session that ended before its handshake did."""
        watch = self._watch
        if failure is None:
            return watch.auth_error or ConnectionError(
                watch.reason or f"{self._label}: the connection was aborted before the handshake finished"
            )
        auth = watch.note_failure(failure)
        found: BaseException = auth or first_in(failure, ConnectionError) or failure
        if isinstance(found, ConnectionError):
            error = found
        else:
            error = ConnectionError(f"{self._label}: {exc_text(found)}")
            error.__cause__ = found
        watch.set_reason(str(error))
        return error

    async def _attempts(self, prepared: Prepared, task_status: anyio.abc.TaskStatus[ServerInfo]) -> None:
        modes = self._negotiation.modes()
        for attempt, mode in enumerate(modes):
            try:
                await self._session(mode, prepared, task_status)
                return
            except BaseException as failure:
                # Raised inside the SDK's task groups, it may arrive wrapped in a group.
                rejected = first_in(failure, PinRejected)
                if rejected is None:
                    raise
                last = attempt + 1 >= len(modes)
                self._negotiation.retry_after(rejected, mode, last=last, closing=self._watch.closing)
                # The refused attempt's teardown looked like a lost peer: start the next one clean.
                self._stop = anyio.Event()
                self._watch.retry()

    async def _session(
        self, mode: str, prepared: Prepared, task_status: anyio.abc.TaskStatus[ServerInfo]
    ) -> None:
        options = self._options
        watch = self._watch
        self.connect_mode = mode
        watch.new_attempt()
        async with AsyncExitStack() as stack:
            channel = await open_channel(stack, self._target, options, prepared, watch, self._redact)
            client = Client(
                channel,
                mode=mode,
                cache=None,
                client_info=CLIENT_INFO,
                message_handler=self._router.on_message,
                logging_callback=self._router.on_log,
                log_level=options.log_level,
                extensions=[TasksExtension()],
                **self._answers.callbacks(),
            )
            try:
                await stack.enter_async_context(client)
                await self._negotiation.confirm(client, mode)
            except MCPError as exc:
                if (auth := watch.auth_in(exc)) is not None:
                    raise auth from auth.__cause__
                if (refusal := self._negotiation.refusal(exc, mode)) is not None:
                    raise refusal from exc
                raise ConnectionError(await watch.describe(self._handshake_failure(exc))) from exc
            except Exception as exc:
                if (auth := watch.auth_in(exc)) is not None:
                    # A login is needed, or was refused: not a handshake failure. Raised as it is.
                    raise auth from auth.__cause__
                raise ConnectionError(await watch.describe(self._handshake_failure(exc))) from exc
            self._record(client)
            self.client = client
            async with anyio.create_task_group() as tasks:
                if self.revision.notices is Notices.LISTEN:
                    self.streams = self._listen_streams(client)
                    await tasks.start(self.streams.run)
                elif options.log_level is not None and self._offers("logging"):
                    await self._negotiation.set_log_level(client, options.log_level, options.request_timeout)
                watch.connected = True
                logger.info(
                    "%s: connected (%s, protocol %s%s)",
                    self._label,
                    self._target.kind,
                    self.negotiated_protocol,
                    f", pid {watch.spawned_pid}" if watch.spawned_pid else "",
                )
                assert self.server_info is not None and self._stop is not None
                task_status.started(self.server_info)
                await self._stop.wait()
                if watch.lost_hint is not None and not watch.closing:
                    watch.report_lost(await watch.describe(watch.lost_hint))
                tasks.cancel_scope.cancel()
            self.client = None
            self.streams = None

    def _record(self, client: Client) -> None:
        self.negotiated_protocol = client.protocol_version
        self.era = self._negotiation.learned(client)
        self.server_info = server_info(client)

    def _handshake_failure(self, exc: BaseException) -> str:
        hint = self._watch.lost_hint
        if hint is not None:
            return f"{hint} during the handshake"
        return f"handshake failed: {exc_text(exc)}"

    def _offers(self, capability: str) -> bool:
        info = self.server_info
        return info is not None and info.capabilities.get(capability) is not None

    def _listen_streams(self, client: Client) -> ListenStreams:
        kinds = ListenKinds(resources=self._offers("resources"), prompts=self._offers("prompts"))
        return ListenStreams(client, self._label, kinds, self._router.on_event, self._watch.suspect)
