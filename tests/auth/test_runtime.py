"""A `Runtime` with a remote server behind OAuth (tests/servers/oauth_server.py), end to end:
without a login it fails fast as ``auth`` and stays stopped; with one it works, refreshes an
expired token mid-session, reports a revoked login or a server that refuses forever as ``auth``
without looping; and with the host's `LoginHandlers` it logs in by itself."""

from __future__ import annotations

import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from actors.mcp.auth import TokenStore
from actors.runtime import LoginHandlers, Runtime
from actors.tools import ToolResult
from tests.auth.conftest import NAMESPACE, OAuthServer, log_in
from tests.conftest import wait_until

TIMEOUT = 60.0
LOGIN_HINT = f"run `mcp-actors login {NAMESPACE}`"


def runtime_config(oauth_server: OAuthServer) -> dict[str, Any]:
    entry = {"url": oauth_server.url, "healthCheckInterval": 0, "idleTimeout": 0, "connectTimeout": 30}
    return {"mcpServers": {NAMESPACE: entry}, "builtin": {"enabled": False}}


@pytest.fixture
def runtime(oauth_server: OAuthServer, store: TokenStore) -> Iterator[Runtime]:
    with Runtime.start(runtime_config(oauth_server)) as rt:
        yield rt


def whoami(rt: Runtime) -> ToolResult:
    return rt.call_tool(f"{NAMESPACE}/whoami", {}, timeout=TIMEOUT)


def state(rt: Runtime) -> str:
    return rt.status(NAMESPACE)[0].state


def assert_auth(result: ToolResult, *words: str) -> None:
    assert not result.success, result
    assert result.error_type == "auth", result
    for word in words:
        assert word in (result.error or ""), result


def test_without_a_login_a_call_fails_fast_as_auth_and_the_server_stays_stopped(
    oauth_server: OAuthServer, runtime: Runtime
) -> None:
    before = oauth_server.stats()
    assert_auth(whoami(runtime), f"{NAMESPACE} needs a login", LOGIN_HINT)
    assert wait_until(lambda: state(runtime) == "stopped", TIMEOUT), runtime.status()
    status = runtime.status(NAMESPACE)[0]
    assert status.restarts == 0
    assert LOGIN_HINT in (status.last_error or "")
    # No restart loop, and the next call tries again (a login may have happened meanwhile).
    assert_auth(whoami(runtime), LOGIN_HINT)
    after = oauth_server.stats()
    assert after["mcp:401"] - before["mcp:401"] == 2
    for step in ("discovery", "register", "authorize"):
        assert after[step] == before[step], step
    assert runtime.status(NAMESPACE)[0].restarts == 0


def test_after_a_login_a_call_succeeds(
    oauth_server: OAuthServer, store: TokenStore, runtime: Runtime
) -> None:
    assert_auth(whoami(runtime), LOGIN_HINT)
    log_in(oauth_server.config(), store)
    result = whoami(runtime)
    assert result.success, result
    client = store.load(oauth_server.url).client_info
    assert client is not None and result.text == client.client_id
    assert state(runtime) == "running"


def test_a_token_that_expires_mid_session_is_refreshed_transparently(
    oauth_server: OAuthServer, store: TokenStore, runtime: Runtime
) -> None:
    log_in(oauth_server.config(), store)
    first = whoami(runtime)
    assert first.success, first
    before = oauth_server.stats()
    oauth_server.control("expire")
    second = whoami(runtime)
    assert second.success and second.text == first.text, second
    assert oauth_server.stats()["token:refresh_token"] - before["token:refresh_token"] == 1
    status = runtime.status(NAMESPACE)[0]
    assert (status.state, status.restarts) == ("running", 0)


def test_a_revoked_login_is_auth_and_the_server_ends_stopped(
    oauth_server: OAuthServer, store: TokenStore, runtime: Runtime
) -> None:
    log_in(oauth_server.config(), store)
    assert whoami(runtime).success
    oauth_server.control("revoke")
    assert_auth(whoami(runtime), LOGIN_HINT)
    assert wait_until(lambda: state(runtime) == "stopped", TIMEOUT), runtime.status()
    assert store.load(oauth_server.url).tokens is None  # the dead refresh token is not tried again
    assert_auth(whoami(runtime), LOGIN_HINT)


def test_a_server_that_answers_401_forever_is_auth_bounded_with_no_loop(
    oauth_server: OAuthServer, store: TokenStore, runtime: Runtime
) -> None:
    log_in(oauth_server.config(), store)
    oauth_server.control("refuse", status="401")
    before = oauth_server.stats()
    assert_auth(whoami(runtime), f"{NAMESPACE} refused the credentials (HTTP 401)", "refused by the test")
    assert wait_until(lambda: state(runtime) == "stopped", TIMEOUT), runtime.status()
    after = oauth_server.stats()
    # One refusal, one refresh, one retry with the new token: then it stops.
    assert after["mcp:401"] - before["mcp:401"] == 2
    assert after["token:refresh_token"] - before["token:refresh_token"] == 1
    assert after["authorize"] == before["authorize"]
    assert runtime.status(NAMESPACE)[0].restarts == 0


def test_a_server_that_starts_answering_401_mid_session_is_auth_and_stops_with_no_loop(
    oauth_server: OAuthServer, store: TokenStore, runtime: Runtime
) -> None:
    log_in(oauth_server.config(), store)
    assert whoami(runtime).success
    oauth_server.control("refuse", status="401")
    before = oauth_server.stats()
    assert_auth(whoami(runtime), f"{NAMESPACE} refused the credentials (HTTP 401)")
    assert wait_until(lambda: state(runtime) == "stopped", TIMEOUT), runtime.status()
    after = oauth_server.stats()
    status = runtime.status(NAMESPACE)[0]
    # A lost login is not a crash: no restart (it would be refused the same way); one refusal,
    # one refresh, one retry; then it stays stopped until the next call.
    assert status.restarts == 0
    assert after["mcp:401"] - before["mcp:401"] == 2
    assert after["token:refresh_token"] - before["token:refresh_token"] == 1
    assert after["authorize"] == before["authorize"]
    assert "HTTP 401" in (status.last_error or "")


class _HostLogin:
    """What a host's login handlers do without a browser: open the authorization URL, read the
    redirect's ``code`` and ``state`` instead of following it."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.urls: list[str] = []
        self._answer: tuple[str, str | None, str | None] | None = None
        self.drop_iss = False
        """Answer ``(code, state)`` as a host written before ``iss`` was passed on would."""

    def redirect(self, url: str) -> None:
        self.threads.append(threading.current_thread().name)
        self.urls.append(url)
        location = _redirect_location(url)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
        self._answer = (query["code"][0], query.get("state", [None])[0], query.get("iss", [None])[0])

    def callback(self) -> tuple[str, str | None, str | None] | tuple[str, str | None]:
        self.threads.append(threading.current_thread().name)
        assert self._answer is not None, "callback before redirect"
        answer, self._answer = self._answer, None
        return answer[:2] if self.drop_iss else answer


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _redirect_location(url: str) -> str:
    try:
        urllib.request.build_opener(_NoRedirect).open(url, timeout=30)
    except urllib.error.HTTPError as answer:
        return str(answer.headers["Location"])
    raise AssertionError("the authorization endpoint did not redirect")


def test_with_the_hosts_login_handlers_the_runtime_logs_in_by_itself(
    oauth_server: OAuthServer, store: TokenStore
) -> None:
    host = _HostLogin()
    login = LoginHandlers(redirect=host.redirect, callback=host.callback, timeout=TIMEOUT)
    with Runtime.start(runtime_config(oauth_server), login=login) as rt:
        result = whoami(rt)
        assert result.success, result
        assert len(host.urls) == 1 and host.urls[0].startswith(f"{oauth_server.base}/authorize?")
        # The host's code ran on the runtime's host threads, never on the loop or an actor.
        assert host.threads and all(name.startswith("mcp-actors-host-") for name in host.threads)
        stored = store.load(oauth_server.url)
        assert stored.tokens is not None and stored.client_info is not None
        assert result.text == stored.client_info.client_id
    # The login is kept: a runtime without handlers uses it.
    with Runtime.start(runtime_config(oauth_server)) as rt:
        assert whoami(rt).success


def test_the_issuer_of_the_redirect_reaches_the_login_and_is_checked(
    oauth_server: OAuthServer, store: TokenStore
) -> None:
    # RFC 9207: the authorization server advertises and sends `iss`; the host's callback hands
    # it on, and the login goes on only when it is the issuer the metadata named.
    oauth_server.control("iss", mode="right")
    exchanged = oauth_server.stats()["token:authorization_code"]
    host = _HostLogin()
    login = LoginHandlers(redirect=host.redirect, callback=host.callback, timeout=TIMEOUT)
    with Runtime.start(runtime_config(oauth_server), login=login) as rt:
        result = whoami(rt)
        assert result.success, result
    assert oauth_server.stats()["token:authorization_code"] == exchanged + 1
    assert store.load(oauth_server.url).tokens is not None


@pytest.mark.parametrize("answer", ["wrong", "missing"])
def test_a_redirect_from_another_issuer_or_without_one_is_auth(
    oauth_server: OAuthServer, store: TokenStore, answer: str
) -> None:
    oauth_server.control("iss", mode="wrong" if answer == "wrong" else "right")
    exchanged = oauth_server.stats()["token:authorization_code"]
    host = _HostLogin()
    host.drop_iss = answer == "missing"
    login = LoginHandlers(redirect=host.redirect, callback=host.callback, timeout=TIMEOUT)
    with Runtime.start(runtime_config(oauth_server), login=login) as rt:
        assert_auth(whoami(rt), "iss")
    # Refused before the code was exchanged for a token.
    assert oauth_server.stats()["token:authorization_code"] == exchanged
    assert store.load(oauth_server.url).tokens is None


def test_a_callback_that_answers_nonsense_is_auth_and_names_the_contract(
    oauth_server: OAuthServer, store: TokenStore
) -> None:
    host = _HostLogin()

    def callback() -> Any:
        host.callback()
        return {"code": "x"}

    login = LoginHandlers(redirect=host.redirect, callback=callback, timeout=TIMEOUT)
    with Runtime.start(runtime_config(oauth_server), login=login) as rt:
        assert_auth(whoami(rt), "LoginHandlers.callback must return (code, state, iss)", "dict")
