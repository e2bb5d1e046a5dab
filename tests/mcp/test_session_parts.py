"""The parts of `SDKTransport`, each alone: no server, no threads, no real waiting.

The sessions themselves (real servers over real transports) are in test_sdk_transport.py; here
each part's own rules are pinned down in milliseconds.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from actors.mcp.auth import AuthRefused
from actors.mcp.eras import AUTO, LEGACY, MODERN_PROTOCOL, EraMemo
from actors.mcp.redaction import Redactor
from actors.mcp.sdk_transport.negotiation import EraNegotiation, PinRejected
from actors.mcp.sdk_transport.notifications import NotificationRouter
from actors.mcp.sdk_transport.owner import CLIENT_INFO
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.sdk_transport.requests import SessionRequests
from actors.mcp.transport import ServerReplyError, StartRefused


class Hooks:
    """What a `PeerWatch` asked the composition to do."""

    def __init__(self) -> None:
        self.stops = 0
        self.closed: list[str] = []
        self.auth_closes: list[bool] = []
        self.aborts = 0

    def _closed(self, reason: str, auth: bool) -> None:
        self.closed.append(reason)
        self.auth_closes.append(auth)

    def watch(self) -> PeerWatch:
        async def probe(timeout: float) -> None:
            raise AssertionError("no probe expected")

        def stop() -> None:
            self.stops += 1

        def abort() -> None:
            self.aborts += 1

        return PeerWatch("srv", on_stop=stop, on_closed=self._closed, abort=abort, probe=probe)


def test_the_client_version_is_the_distribution_version() -> None:
    assert CLIENT_INFO.name == "mcp-actors"
    assert CLIENT_INFO.version == importlib.metadata.version("mcp-actors")


def test_a_lost_peer_stops_the_session_once_and_the_report_tells_the_listener_once() -> None:
    hooks = Hooks()
    watch = hooks.watch()
    assert not watch.stopping
    watch.peer_lost("the server process exited")
    watch.peer_lost("the server closed the connection")
    assert (hooks.stops, watch.lost_hint, watch.stopping) == (1, "the server process exited", True)
    watch.report_lost("srv: the server process exited; exit status 3")
    watch.report_lost("srv: again")
    assert hooks.closed == ["srv: the server process exited; exit status 3"]
    assert hooks.auth_closes == [False], "a dead process is no refused login"
    assert watch.reason == "srv: the server process exited; exit status 3"


def test_a_closing_session_sees_no_death() -> None:
    hooks = Hooks()
    watch = hooks.watch()
    watch.close_requested("srv: the transport was closed")
    watch.peer_lost("the server process exited")
    assert (hooks.stops, watch.lost_hint, watch.reason) == (0, None, "srv: the transport was closed")


def test_a_refusal_aborts_a_handshake_and_ends_a_connected_session() -> None:
    hooks = Hooks()
    watch = hooks.watch()
    watch.refused(AuthRefused("srv", 401))
    assert (hooks.aborts, hooks.closed, watch.auth_error is not None) == (1, [], True)

    hooks = Hooks()
    watch = hooks.watch()
    watch.connected = True
    watch.refused(AuthRefused("srv", 403))
    assert hooks.aborts == 0 and len(hooks.closed) == 1 and hooks.stops == 1
    assert hooks.auth_closes == [True], "the listener must learn the loss was a refused login"
    assert watch.reason == str(watch.auth_error)


def test_an_era_retry_forgets_the_refused_attempts_teardown() -> None:
    watch = Hooks().watch()
    watch.peer_lost("the server closed the connection")
    watch.set_reason("srv: lost")
    watch.retry()
    assert (watch.lost_hint, watch.reason, watch.stopping) == (None, None, False)


def _requests(watch: PeerWatch) -> SessionRequests:
    return SessionRequests("srv", watch)


def test_a_request_fails_at_once_with_the_reason_when_the_peer_dies() -> None:
    hooks = Hooks()
    watch = hooks.watch()
    requests = _requests(watch)

    async def main() -> str:
        watch.begin()

        async def hang() -> None:
            await anyio.sleep_forever()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_die_soon, watch, requests)
            with anyio.fail_after(5), pytest.raises(ConnectionError) as raised:
                await requests.run("tools/call 'x'", hang, timeout=None)
        return str(raised.value)

    assert anyio.run(main) == "srv: the peer died (during tools/call 'x')"


async def _die_soon(watch: PeerWatch, requests: SessionRequests) -> None:
    await anyio.sleep(0)
    watch.report_lost("srv: the peer died")
    requests.cancel_all()


def test_a_request_times_out_at_its_deadline() -> None:
    requests = _requests(Hooks().watch())

    async def main() -> None:
        async def hang() -> None:
            await anyio.sleep_forever()

        with pytest.raises(TimeoutError, match=r"ping got no answer within 0\.01s"):
            await requests.run("ping", hang, timeout=0.01)

    anyio.run(main)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (MCPError(types.METHOD_NOT_FOUND, "no such method"), ServerReplyError),
        (MCPError(types.REQUEST_TIMEOUT, "too slow"), TimeoutError),
    ],
)
def test_the_sdks_errors_become_the_seams(error: MCPError, expected: type[Exception]) -> None:
    requests = _requests(Hooks().watch())

    async def main() -> None:
        async def fail() -> None:
            raise error

        with pytest.raises(expected):
            await requests.run("tools/list", fail, timeout=1)

    anyio.run(main)


class Events:
    def __init__(self) -> None:
        self.news: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.news.append((name, args))


def test_notifications_are_routed_and_listen_stream_copies_dropped() -> None:
    events = Events()
    unreadable: list[str] = []
    router = NotificationRouter("srv", Redactor.for_server({}, {}), unreadable.append)
    router.listen(events)

    async def main() -> None:
        await router.on_message(types.ToolListChangedNotification())
        await router.on_message(
            types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri="file:///a"))
        )
        teed = types.PromptListChangedNotification(
            params=types.NotificationParams.model_validate({"_meta": {SUBSCRIPTION_ID_META_KEY: "s"}})
        )
        await router.on_message(teed)
        await router.on_message(ValueError("not JSON-RPC"))

    anyio.run(main)
    assert events.news == [("on_tools_changed", ()), ("on_resource_updated", ("file:///a",))]
    assert unreadable and "not JSON-RPC" in unreadable[0]


def test_a_remembered_era_refused_is_retried_in_auto_mode() -> None:
    store = {"k": MODERN_PROTOCOL}
    negotiation = EraNegotiation("srv", AUTO, EraMemo(store), "k")
    assert negotiation.modes() == [MODERN_PROTOCOL, AUTO]
    refused = negotiation.refusal(MCPError(types.INVALID_REQUEST, "unknown protocol"), MODERN_PROTOCOL)
    assert isinstance(refused, PinRejected)
    negotiation.retry_after(refused, MODERN_PROTOCOL, last=False, closing=False)
    assert store == {}
    with pytest.raises(ConnectionError, match="srv: handshake failed: unknown protocol"):
        negotiation.retry_after(refused, AUTO, last=True, closing=False)


def test_a_server_without_the_pinned_modern_era_is_refused_for_good() -> None:
    negotiation = EraNegotiation("srv", MODERN_PROTOCOL, EraMemo({}), "k")
    refused = negotiation.refusal(MCPError(types.METHOD_NOT_FOUND, "no server/discover"), MODERN_PROTOCOL)
    assert isinstance(refused, StartRefused)
    assert EraNegotiation("srv", LEGACY, EraMemo({}), "k").refusal(MCPError(-1, "x"), LEGACY) is None
