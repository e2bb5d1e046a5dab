"""Logins, refreshes and refusals against a real OAuth-protected MCP server on the loopback.

The sessions are bare SDK clients (``streamable_http_client`` with ``oauth_provider`` as the
httpx2 auth) run on an `EventLoop` like the runtime's, until the transport is wired.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from mcp import Client

from actors.mcp.adapter import classify
from actors.mcp.auth import (
    AuthRefused,
    LoginRequired,
    LoopbackRedirect,
    TokenStore,
    auth_status,
    logout,
    oauth_provider,
)
from actors.mcp.auth.store import StoredLogin
from actors.mcp.loop import EventLoop
from actors.tools.errors import ErrorType
from tests.auth.conftest import (
    CLIENT_ID,
    CLIENT_SECRET,
    OAuthServer,
    follow_redirect,
    leaf,
    log_in,
    run_session,
    whoami,
)
from tests.servers.http_server import free_port
from tests.servers.oauth_server import GOOD_ASSERTION, WORKLOAD_CLIENT


def refusal(loop: EventLoop, config: Any, store: TokenStore, *steps: Any, **auth: Any) -> BaseException:
    """The (leaf) exception a session ends with; fails the test if it does not fail."""
    with pytest.raises(BaseException) as caught:
        run_session(loop, config, store, *steps, **auth)
    return leaf(caught.value)


def redirect_uri(authorization_url: str | None) -> str:
    assert authorization_url is not None
    return urllib.parse.parse_qs(urllib.parse.urlparse(authorization_url).query)["redirect_uri"][0]


def expire_stored_token(store: TokenStore, url: str) -> None:
    """Make the stored access token expired, as after a night's sleep."""
    data = json.loads(store.path.read_text())
    data["servers"][url]["expiresAt"] = 1.0
    store.path.write_text(json.dumps(data))


# ---- login ------------------------------------------------------------------------------------------


def test_login_stores_tokens_and_a_call_then_succeeds_without_anyone(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    assert auth_status(config, store) == "needs login"
    result = log_in(config, store)
    assert result.status == "ok"
    assert result.authorization_url is not None
    assert result.authorization_url.startswith(f"{oauth_server.base}/authorize?")
    login = store.load(oauth_server.url)
    assert login.tokens is not None and login.tokens.refresh_token
    assert login.client_info is not None and login.oauth_metadata is not None
    assert auth_status(config, store) == "ok"
    before = oauth_server.stats()
    [caller] = run_session(loop, config, store, whoami)
    assert caller == login.client_info.client_id
    after = oauth_server.stats()
    assert after["authorize"] == before["authorize"]
    assert after["mcp:401"] == before["mcp:401"]


def test_a_second_login_reuses_the_registration_and_its_redirect_port(
    oauth_server: OAuthServer, store: TokenStore
) -> None:
    config = oauth_server.config()
    first = log_in(config, store)
    registered = oauth_server.stats()["register"]
    first_client = store.load(oauth_server.url).client_info
    second = log_in(config, store)
    assert oauth_server.stats()["register"] == registered
    assert store.load(oauth_server.url).client_info == first_client
    assert first_client is not None and first_client.redirect_uris
    assert redirect_uri(first.authorization_url) == redirect_uri(second.authorization_url)
    assert redirect_uri(second.authorization_url) == str(first_client.redirect_uris[0])


def test_logout_forgets_the_login(oauth_server: OAuthServer, store: TokenStore, loop: EventLoop) -> None:
    config = oauth_server.config()
    log_in(config, store)
    assert logout(config, store) is True
    assert auth_status(config, store) == "needs login"
    assert logout(config, store) is False
    assert isinstance(refusal(loop, config, store, whoami), LoginRequired)


def test_a_preregistered_client_logs_in_on_its_fixed_redirect_port(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    port = free_port()
    config = oauth_server.config({"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET, "redirectPort": port})
    # The server knows this client with one redirect URI only: another port would be refused.
    oauth_server.control("redirect", uri=f"http://127.0.0.1:{port}/callback")
    registered = oauth_server.stats()["register"]
    result = log_in(config, store)
    assert result.authorization_url is not None and f"%3A{port}%2Fcallback" in result.authorization_url
    assert oauth_server.stats()["register"] == registered  # no dynamic registration
    assert run_session(loop, config, store, whoami) == [CLIENT_ID]


def test_configured_scopes_are_asked_for_beside_the_servers(
    oauth_server: OAuthServer, store: TokenStore
) -> None:
    config = oauth_server.config({"scopes": ["extra"]})
    result = log_in(config, store)
    assert result.authorization_url is not None and "scope=extra+mcp" in result.authorization_url
    tokens = store.load(oauth_server.url).tokens
    assert tokens is not None and set((tokens.scope or "").split()) == {"extra", "mcp"}


# ---- the embedded runtime never waits on a person -----------------------------------------------------


def test_without_a_login_the_first_refusal_raises_login_required_before_any_discovery(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    before = oauth_server.stats()
    exc = refusal(loop, oauth_server.config(), store, whoami)
    assert isinstance(exc, LoginRequired)
    assert classify(exc) == (ErrorType.AUTH, "auth error: srv needs a login: run `mcp-actors login srv`")
    after = oauth_server.stats()
    assert after["mcp:401"] - before["mcp:401"] == 1
    for step in ("discovery", "register", "authorize"):
        assert after[step] == before[step], step


def test_an_expired_access_token_is_refreshed_before_it_is_sent(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    old = store.load(oauth_server.url)
    expire_stored_token(store, oauth_server.url)
    before = oauth_server.stats()
    run_session(loop, config, store, whoami)
    after = oauth_server.stats()
    assert after["token:refresh_token"] - before["token:refresh_token"] == 1
    assert after["mcp:401"] == before["mcp:401"]  # refreshed first: the old token never went out
    assert after["authorize"] == before["authorize"]
    new = store.load(oauth_server.url)
    assert new.tokens is not None and old.tokens is not None
    assert new.tokens.access_token != old.tokens.access_token
    assert new.expires_at is not None and not new.expired()


def test_a_token_that_expires_mid_session_is_refreshed_once_transparently(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    counts: dict[str, int] = {}

    async def expire(client: Client) -> None:
        counts["before"] = oauth_server.stats()["token:refresh_token"]
        await anyio.to_thread.run_sync(
            oauth_server.control, "expire"
        )  # the server forgets every access token

    first, _, second = run_session(loop, config, store, whoami, expire, whoami)
    assert first == second
    assert oauth_server.stats()["token:refresh_token"] - counts["before"] == 1


def test_a_revoked_login_is_classified_auth_and_forgotten(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    oauth_server.control("revoke")  # access and refresh tokens both
    before = oauth_server.stats()
    exc = refusal(loop, config, store, whoami)
    assert isinstance(exc, LoginRequired)
    assert "srv: the stored login could not be renewed: run `mcp-actors login srv`" in str(exc)
    assert classify(exc)[0] is ErrorType.AUTH
    after = oauth_server.stats()
    assert after["token:refresh_token"] - before["token:refresh_token"] <= 1
    assert after["authorize"] == before["authorize"]
    assert store.load(oauth_server.url).tokens is None  # a dead refresh token is not tried again
    assert auth_status(config, store) == "needs login"


def test_a_server_that_refuses_forever_is_classified_auth_with_its_reason_and_no_loop(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    oauth_server.control("refuse", status="401")
    before = oauth_server.stats()
    exc = refusal(loop, config, store, whoami)
    assert isinstance(exc, AuthRefused)
    assert exc.status == 401
    kind, message = classify(exc)
    assert kind is ErrorType.AUTH
    assert message == "auth error: srv refused the credentials (HTTP 401): invalid_token: refused by the test"
    after = oauth_server.stats()
    # One refusal, one refresh, one retry: then it stops.
    assert after["mcp:401"] - before["mcp:401"] == 2
    assert after["token:refresh_token"] - before["token:refresh_token"] == 1
    assert after["authorize"] == before["authorize"]


def test_an_interactive_provider_logs_in_at_most_once_per_request_against_endless_refusals(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    oauth_server.control("refuse", status="401")
    before = oauth_server.stats()
    with LoopbackRedirect(open_url=follow_redirect, timeout=60, server="srv") as redirect:
        exc = refusal(
            loop,
            config,
            store,
            whoami,
            interactive=True,
            redirect_handler=redirect.redirect_handler,
            callback_handler=redirect.callback_handler,
        )
    assert isinstance(exc, AuthRefused)
    after = oauth_server.stats()
    assert after["authorize"] - before["authorize"] == 1
    assert after["mcp:401"] - before["mcp:401"] == 2


def test_a_forbidden_request_is_classified_auth_with_the_servers_reason(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    oauth_server.control("refuse", status="403")
    exc = refusal(loop, config, store, whoami)
    assert isinstance(exc, AuthRefused)
    assert classify(exc) == (
        ErrorType.AUTH,
        "auth error: srv forbade the request (HTTP 403): insufficient_permissions: refused by the test",
    )


def test_a_scope_step_up_without_a_person_asks_for_a_login_that_then_requests_the_scopes(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    oauth_server.control("refuse", status="403", error="insufficient_scope", scope="mcp extra")
    before = oauth_server.stats()
    exc = refusal(loop, config, store, whoami)
    assert str(exc) == (
        "auth error: srv: the server asks for more access (scope mcp extra): run `mcp-actors login srv`"
    )
    assert oauth_server.stats()["authorize"] == before["authorize"]
    assert store.load(oauth_server.url).wanted_scope == "mcp extra"
    oauth_server.control("refuse")
    result = log_in(config, store)
    assert result.authorization_url is not None
    query = urllib.parse.parse_qs(urllib.parse.urlparse(result.authorization_url).query)
    assert set(query["scope"][0].split()) == {"mcp", "extra"}
    login = store.load(oauth_server.url)
    assert login.wanted_scope is None  # granted
    assert login.tokens is not None and set((login.tokens.scope or "").split()) == {"mcp", "extra"}


# ---- client credentials -------------------------------------------------------------------------------


def test_client_credentials_log_in_without_anyone_and_store_the_token(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config(
        {
            "grant": "client_credentials",
            "clientId": CLIENT_ID,
            "clientSecret": CLIENT_SECRET,
            "issuer": oauth_server.base,
        }
    )
    assert auth_status(config, store) == "ok"
    before = oauth_server.stats()
    assert run_session(loop, config, store, whoami) == [CLIENT_ID]
    after = oauth_server.stats()
    assert after["token:client_credentials"] - before["token:client_credentials"] == 1
    assert after["authorize"] == before["authorize"]
    assert store.load(oauth_server.url).tokens is not None
    # The next connection uses the stored token: no new exchange.
    run_session(loop, config, store, whoami)
    assert oauth_server.stats()["token:client_credentials"] == after["token:client_credentials"]


def test_wrong_client_credentials_are_classified_auth(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = oauth_server.config(
        {
            "grant": "client_credentials",
            "clientId": CLIENT_ID,
            "clientSecret": "wrong!!",
            "issuer": oauth_server.base,
        }
    )
    exc = refusal(loop, config, store, whoami)
    kind, message = classify(exc)
    assert kind is ErrorType.AUTH
    assert message.startswith("auth error: srv: the OAuth login failed: Token exchange failed (401)")


# ---- enterprise-managed (SEP-990 identity assertion) --------------------------------------------------


def identity_config(oauth_server: OAuthServer) -> Any:
    return oauth_server.config(
        {
            "grant": "identity_assertion",
            "clientId": CLIENT_ID,
            "clientSecret": CLIENT_SECRET,
            "issuer": oauth_server.base,
        }
    )


def test_an_identity_assertion_from_the_host_logs_in_without_a_browser(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    asked: list[tuple[str, str]] = []

    async def id_jag(audience: str, resource: str) -> str:
        asked.append((audience, resource))
        return GOOD_ASSERTION

    before = oauth_server.stats()
    assert run_session(loop, identity_config(oauth_server), store, whoami, assertion_handler=id_jag) == [
        CLIENT_ID
    ]
    assert asked == [(oauth_server.base, oauth_server.url)]
    after = oauth_server.stats()
    assert after["token:identity_assertion"] - before["token:identity_assertion"] == 1
    assert after["authorize"] == before["authorize"]


def test_an_identity_assertion_grant_without_one_or_with_a_bad_one_is_auth(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop
) -> None:
    config = identity_config(oauth_server)
    missing = refusal(loop, config, store, whoami)
    assert classify(missing) == (
        ErrorType.AUTH,
        "auth error: srv: the identity_assertion grant needs an identity assertion from the host",
    )

    async def bad(audience: str, resource: str) -> str:
        return "forged"

    kind, message = classify(refusal(loop, config, store, whoami, assertion_handler=bad))
    assert kind is ErrorType.AUTH
    assert "Token exchange failed (400)" in message and "invalid_grant" in message


# ---- nothing blocks the loop; no secret is shown ---------------------------------------------------------


def test_the_store_is_never_read_or_written_on_the_loop_thread(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = oauth_server.config()
    log_in(config, store)
    expire_stored_token(store, oauth_server.url)  # so the session also writes (the refresh)
    threads: list[str] = []
    load, save = TokenStore.load, TokenStore.save

    def spy_load(self: TokenStore, url: str) -> StoredLogin:
        threads.append(threading.current_thread().name)
        return load(self, url)

    def spy_save(self: TokenStore, url: str, **parts: Any) -> StoredLogin:
        threads.append(threading.current_thread().name)
        return save(self, url, **parts)

    monkeypatch.setattr(TokenStore, "load", spy_load)
    monkeypatch.setattr(TokenStore, "save", spy_save)
    run_session(loop, config, store, whoami)
    assert len(threads) >= 2
    assert loop.thread is not None and loop.thread.name not in threads


def test_secrets_never_reach_logs_or_reprs(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    preregistered = oauth_server.config({"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET})
    config = oauth_server.config()
    secrets = {CLIENT_SECRET}

    def remember() -> None:
        login = store.load(oauth_server.url)
        if login.tokens is not None:
            secrets.update([login.tokens.access_token, login.tokens.refresh_token or ""])
        if login.client_info is not None:
            secrets.add(login.client_info.client_secret or "")

    with caplog.at_level(logging.DEBUG):
        log_in(config, store)
        remember()
        expire_stored_token(store, oauth_server.url)
        run_session(loop, config, store, whoami)  # a refresh
        remember()
        oauth_server.control("refuse", status="401")
        refusal(loop, config, store, whoami)  # a refresh, then a refusal
        remember()
        oauth_server.control("refuse")
        provider = oauth_provider(config, store)
        shown = " ".join(
            [repr(preregistered), repr(provider), repr(store), repr(store.for_server(config.url or ""))]
        )
    assert len(secrets) >= 6
    for secret in secrets:
        assert secret
        assert secret not in caplog.text
        assert secret not in shown
    assert any(r.name.startswith("actors.mcp.auth") for r in caplog.records)  # the log was on


# ---- workload identity (SEP-1933) ---------------------------------------------------------------------


def workload_config(oauth_server: OAuthServer, token_file: Path) -> Any:
    return oauth_server.config(
        {
            "grant": "workload_identity",
            "clientId": WORKLOAD_CLIENT,
            "workloadTokenFile": str(token_file),
            "issuer": oauth_server.base,
        }
    )


def test_workload_identity_logs_in_with_the_platforms_token_and_stores_the_access_token(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("workload-token-one\n")
    config = workload_config(oauth_server, token_file)
    assert auth_status(config, store) == "ok"  # nobody needs to log in
    before = oauth_server.stats()
    assert run_session(loop, config, store, whoami) == [WORKLOAD_CLIENT]
    after = oauth_server.stats()
    assert after["workload:workload-token-one"] - before["workload:workload-token-one"] == 1
    assert after["authorize"] == before["authorize"]
    # The next connection uses the stored token: no new exchange.
    run_session(loop, config, store, whoami)
    assert oauth_server.stats()["token:workload_identity"] == after["token:workload_identity"]


def test_workload_identity_exchanges_the_rotated_token_before_expiry_and_on_a_401(
    oauth_server: OAuthServer, store: TokenStore, loop: EventLoop, tmp_path: Path
) -> None:
    """The platform rotates its token in the file: each exchange reads it afresh. An access token
    about to expire is replaced before it goes out; one the server refuses, on the 401; neither
    needs a person (there is no refresh token: a new exchange is the renewal)."""
    token_file = tmp_path / "token"
    token_file.write_text("workload-token-first")
    config = workload_config(oauth_server, token_file)
    run_session(loop, config, store, whoami)

    token_file.write_text("workload-token-second")
    expire_stored_token(store, oauth_server.url)
    before = oauth_server.stats()
    assert run_session(loop, config, store, whoami) == [WORKLOAD_CLIENT]
    after = oauth_server.stats()
    assert after["workload:workload-token-second"] - before["workload:workload-token-second"] == 1
    assert after["mcp:401"] == before["mcp:401"]  # replaced first: the old token never went out

    counts: dict[str, int] = {}

    async def rotate_and_expire(client: Client) -> None:
        counts["before"] = oauth_server.stats()["workload:workload-token-third"]
        await anyio.to_thread.run_sync(token_file.write_text, "workload-token-third")
        await anyio.to_thread.run_sync(oauth_server.control, "expire")  # every access token refused

    first, _, second = run_session(loop, config, store, whoami, rotate_and_expire, whoami)
    assert first == second == WORKLOAD_CLIENT
    assert oauth_server.stats()["workload:workload-token-third"] - counts["before"] == 1
    assert oauth_server.stats()["authorize"] == after["authorize"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read the workload token file"),
        ("", "is empty"),
        ("not-a-workload-token", "Token exchange failed (400)"),
    ],
)
def test_a_missing_or_refused_workload_token_is_classified_auth_and_names_why(
    oauth_server: OAuthServer,
    store: TokenStore,
    loop: EventLoop,
    tmp_path: Path,
    content: str | None,
    reason: str,
) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    before = oauth_server.stats()
    exc = refusal(loop, workload_config(oauth_server, token_file), store, whoami)
    kind, message = classify(exc)
    assert kind is ErrorType.AUTH, message
    assert message.startswith("auth error: srv") and reason in message, message
    if content is None or not content:
        assert str(token_file) in message
    # Refused once, never retried with the same token or another grant.
    expected = 0 if content is None or not content else 1
    assert oauth_server.stats()["token:workload_identity"] - before["token:workload_identity"] == expected
