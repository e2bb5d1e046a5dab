"""Per-user credentials toward remote backends (issue 23, item 5): a remote server's headers carry
the caller's own token (``${caller:token}``, for a backend that trusts the gateway's issuer and
audience), or the token the issuer exchanged it for (``tokenExchange``, RFC 8693); a caller
without a token of their own gets an ``auth`` error, never the gateway's credentials.

Everything is real: an issuer of ours signing real JWTs (with its token endpoint's exchange), a
backend that verifies every bearer token against that issuer's keys and answers who the token
says calls (tests/servers/bearer_backend.py), and ``mcp-actors serve --http`` with
``access.auth`` and a static token beside it. One of each serves the module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from actors.tools import ErrorType
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import GatewayProcess, write_config
from tests.servers.http_server import HTTPServer, free_port
from tests.servers.oidc_issuer import TOKEN_EXCHANGE, OIDCIssuer, serve_issuer

pytestmark = pytest.mark.timeout(180)

BACKEND = "urn:mcp-actors:test:backend"
"""The backend's audience at the issuer (what an exchanged token is for)."""
STATIC = "static-token-of-the-gateway-8d7c"
CLIENT_SECRET = "the-gateways-exchange-secret-3e1f"
EXCHANGED = f"token:{TOKEN_EXCHANGE}"


@pytest.fixture(scope="module")
def issuer() -> Iterator[OIDCIssuer]:
    with serve_issuer() as issuer:
        issuer.client("mcp-actors-gateway", CLIENT_SECRET)
        yield issuer


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def backend(issuer: OIDCIssuer, port: int) -> Iterator[HTTPServer]:
    audiences = ("--audience", f"http://127.0.0.1:{port}/mcp", "--audience", BACKEND)
    with HTTPServer(
        module="tests.servers.bearer_backend", extra_args=("--issuer", issuer.url, *audiences)
    ) as server:
        yield server


def exchange(secret: str = "${EXCHANGE_SECRET}") -> dict[str, Any]:
    return {"audience": BACKEND, "scope": SCOPE, "clientId": "mcp-actors-gateway", "clientSecret": secret}


@pytest.fixture(scope="module")
def gateway(
    issuer: OIDCIssuer, backend: HTTPServer, port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("per-user-tokens")
    remote = {"url": backend.url, "affinity": "user"}
    servers = {
        "pass": {**remote, "headers": {"Authorization": "Bearer ${caller:token}"}},
        "swap": {**remote, "tokenExchange": exchange()},
        "wrong": {**remote, "tokenExchange": exchange("not-the-secret")},
    }
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp")}
    config = write_config(folder, servers, access=access)
    options: dict[str, Any] = {"token": STATIC, "extra_args": ("--log-level", "DEBUG")}
    with GatewayProcess(
        config, folder, port=port, env={"EXCHANGE_SECRET": CLIENT_SECRET}, **options
    ) as gateway:
        yield gateway


def user(issuer: OIDCIssuer, gateway: GatewayProcess, name: str) -> str:
    return issuer.mint(sub=name, aud=gateway.url, scope=SCOPE, groups=["dev"])


def whoami(gateway: GatewayProcess, token: str, server: str) -> Any:
    async def scenario() -> Any:
        async with client(gateway, token) as session:
            return await session.call_tool(f"{server}__whoami", {})

    return anyio.run(scenario)


def said(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    return dict(json.loads(result.content[0].text))


def test_pass_through_gives_the_backend_the_callers_own_token(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    alice = said(whoami(gateway, user(issuer, gateway, "alice"), "pass"))
    bob = said(whoami(gateway, user(issuer, gateway, "bob"), "pass"))
    assert (alice["sub"], alice["aud"], alice["act"]) == ("alice", gateway.url, None)
    assert (bob["sub"], bob["aud"]) == ("bob", gateway.url)
    # One connection per caller: each with its own token in its headers.
    copies = [name for name in gateway.healthz()["servers"] if name.startswith("pass@")]
    assert len(copies) == 2, copies


def test_token_exchange_gives_the_caller_with_the_backends_audience(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    before = issuer.seen[EXCHANGED]
    alice = user(issuer, gateway, "alice")
    first = said(whoami(gateway, alice, "swap"))
    assert first["sub"] == "alice"
    assert first["aud"] == BACKEND
    assert first["act"] == {"sub": "mcp-actors-gateway"}  # the gateway acts for alice
    assert first["scope"] == SCOPE
    # Kept until shortly before it expires: alice's next call costs the issuer nothing.
    assert said(whoami(gateway, alice, "swap"))["sub"] == "alice"
    assert issuer.seen[EXCHANGED] == before + 1
    carol = said(whoami(gateway, user(issuer, gateway, "carol"), "swap"))
    assert (carol["sub"], carol["aud"]) == ("carol", BACKEND)
    assert issuer.seen[EXCHANGED] == before + 2


@pytest.mark.parametrize("server", ["pass", "swap"])
def test_a_caller_without_a_token_of_their_own_gets_auth(gateway: GatewayProcess, server: str) -> None:
    # The static token is the gateway's own secret: it never goes to a backend.
    result = whoami(gateway, STATIC, server)
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(f"{ErrorType.AUTH.label}:") and "access token" in text, text
    assert not any(name.startswith(f"{server}@static") for name in gateway.healthz()["servers"])


def test_an_exchange_the_issuer_refuses_is_an_auth_error(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    result = whoami(gateway, user(issuer, gateway, "dave"), "wrong")
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(f"{ErrorType.AUTH.label}:") and "invalid_client" in text, text


def test_no_token_or_secret_reaches_the_gateways_log(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    alice = user(issuer, gateway, "alice")
    said(whoami(gateway, alice, "pass"))
    said(whoami(gateway, alice, "swap"))
    log = gateway.log_path.read_text(errors="replace")
    assert "per-user" in log  # it logged at DEBUG: the check below has something to read
    for secret in (alice, CLIENT_SECRET, STATIC):
        assert secret not in log
    assert "eyJ" not in log  # nor any other JWT (the exchanged ones)
