"""Fixtures for the OAuth tests: a token store in a temporary state folder, the OAuth-protected
test server (tests/servers/oauth_server.py), a login that follows the redirect the way the
conformance suite does (no browser), and sessions through a bare SDK client on an `EventLoop`."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from actors.config import load_config
from actors.mcp.auth import STATE_DIR_ENV, LoginResult, TokenStore, login, oauth_provider
from actors.mcp.config import ServerConfig
from actors.mcp.loop import EventLoop
from actors.mcp.tls import default_ssl_context
from tests.servers.http_server import HTTPServer

OAUTH_MODULE = "tests.servers.oauth_server"
NAMESPACE = "srv"
CLIENT_ID = "preregistered-app"
CLIENT_SECRET = "app-secret-7f3a9c1e"  # a secret: must never show in a log or repr
REDIRECT_PORT_ENV = "AUTH_TEST_REDIRECT_PORT"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def follow_redirect(authorization_url: str) -> str:
    """Do what the user's browser would: open the authorization URL (the test server consents
    at once and redirects back with a code) and deliver the redirect to the loopback listener.
    urllib, not httpx2: the redirect URL carries the code and httpx2 logs request lines."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(authorization_url, timeout=30)
    except urllib.error.HTTPError as answer:
        location = answer.headers["Location"]
    else:
        raise AssertionError("the authorization endpoint did not redirect")
    with urllib.request.urlopen(location, timeout=30) as page:
        page.read()
    return str(location)


class OAuthServer:
    """The running test server, its controls and its counters."""

    def __init__(self, process: HTTPServer) -> None:
        self.process = process
        self.url = process.url
        self.base = self.url.removesuffix("/mcp")

    def control(self, what: str, **params: str) -> None:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        request = urllib.request.Request(f"{self.base}/control/{what}{query}", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()

    def stats(self) -> Counter[str]:
        with urllib.request.urlopen(f"{self.base}/control/stats", timeout=30) as answer:
            return Counter(json.loads(answer.read()))

    def config(self, oauth: dict[str, Any] | None = None, **keys: Any) -> ServerConfig:
        entry: dict[str, Any] = {"url": self.url, **keys}
        if oauth is not None:
            entry["oauth"] = oauth
        return load_config({"mcpServers": {NAMESPACE: entry}}, environ={}).servers[NAMESPACE]


@pytest.fixture
def store(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> TokenStore:
    """The default store, in a state folder of the test's own (``MCP_ACTORS_STATE_DIR``)."""
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    return TokenStore()


@pytest.fixture(scope="module")
def oauth_process() -> Iterator[HTTPServer]:
    with HTTPServer(
        module=OAUTH_MODULE,
        extra_args=("--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET),
    ) as process:
        yield process


@pytest.fixture
def oauth_server(oauth_process: HTTPServer) -> Iterator[OAuthServer]:
    server = OAuthServer(oauth_process)
    yield server
    server.control("refuse")  # whatever the test switched on
    server.control("iss")


@pytest.fixture
def loop() -> Iterator[EventLoop]:
    """An event loop like the runtime's (the lag watchdog measures it)."""
    loop = EventLoop.start("auth-test-loop")
    yield loop
    loop.stop()


def log_in(config: ServerConfig, store: TokenStore) -> LoginResult:
    """`login` with the redirect followed instead of a browser."""
    return login(config, store, open_browser=False, timeout=60, on_url=follow_redirect)


Step = Callable[[Client], Awaitable[Any]]


def run_session(
    loop: EventLoop, config: ServerConfig, store: TokenStore, *steps: Step, **auth: Any
) -> list[Any]:
    """Connect a bare SDK client through `oauth_provider` on ``loop`` and run ``steps`` in one session."""
    # Built here, off the loop, as the transports do: httpx2 would build one per client, on the loop.
    ssl_context = default_ssl_context()

    async def session() -> list[Any]:
        provider = oauth_provider(config, store, **auth)
        results = []
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30, verify=ssl_context) as http,
            Client(streamable_http_client(config.url or "", http_client=http)) as client,
        ):
            for step in steps:
                results.append(await step(client))
        return results

    return loop.portal.call(session)


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    text = result.content[0]
    return str(getattr(text, "text", text))


def leaf(exc: BaseException) -> BaseException:
    """The first exception inside exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc
