"""The gateway as an OAuth 2.1 resource server (issue 23, item 1), through a real
``mcp-actors serve --http`` and a real issuer of ours that signs real JWTs: a valid token lists
and calls; every bad token is refused with the status and ``WWW-Authenticate`` the MCP
authorization specification asks for; the protected resource metadata (RFC 9728); the issuer
rotating its keys; ``/healthz`` and ``/metrics`` behind the same identity.

One gateway and one issuer serve the whole module (the tests only read, but for the rotation,
which only adds keys)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import jwt
import pytest

from tests.gateway.access.identity import SCOPE, challenge, client, oauth_gateway, post
from tests.gateway.conftest import ROOT, WAIT, GatewayProcess, gateway_env, serve_args, write_config
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with oauth_gateway(tmp_path_factory.mktemp("oauth-gateway"), issuer) as gateway:
        yield gateway


def resource_of(gateway: GatewayProcess) -> str:
    return gateway.url


def metadata_url(gateway: GatewayProcess) -> str:
    return f"http://127.0.0.1:{gateway.port}/.well-known/oauth-protected-resource/mcp"


def good(issuer: OIDCIssuer, gateway: GatewayProcess, **claims: object) -> str:
    return issuer.mint(aud=gateway.url, scope=f"openid {SCOPE}", **claims)


# ---- a valid token -----------------------------------------------------------------------------


@pytest.mark.parametrize(("alg", "mode"), [("RS256", "legacy"), ("ES256", "2026-07-28")])
def test_a_valid_token_lists_and_calls_through_a_real_client(
    issuer: OIDCIssuer, gateway: GatewayProcess, alg: str, mode: str
) -> None:
    token = issuer.mint(alg=alg, aud=gateway.url, scope=SCOPE, groups=["dev"])

    async def scenario() -> None:
        async with client(gateway, token, mode) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "fx__echo" in names, names
            result = await session.call_tool("fx__echo", {"text": f"signed with {alg}"})
            assert result.content[0].text == f"signed with {alg}"  # type: ignore[union-attr]

    anyio.run(scenario)


# ---- bad tokens --------------------------------------------------------------------------------

Mint = Callable[[OIDCIssuer, GatewayProcess], str]
_HOUR = 3600
BAD: dict[str, tuple[Mint, str]] = {
    "forged signature": (lambda i, g: i.forged(aud=g.url, scope=SCOPE), "signature does not verify"),
    "alg none": (lambda i, g: i.unsigned(aud=g.url, scope=SCOPE), "algorithm 'none'"),
    "HS256 keyed with the public key": (lambda i, g: i.hmac_confused(aud=g.url, scope=SCOPE), "'HS256'"),
    "expired": (
        lambda i, g: good(i, g, iat=int(time.time()) - 2 * _HOUR, exp=int(time.time()) - _HOUR),
        "expired",
    ),
    "not yet valid": (lambda i, g: good(i, g, nbf=int(time.time()) + _HOUR), "not valid yet"),
    "wrong issuer": (lambda i, g: good(i, g, iss="https://issuer.example.com"), "another issuer"),
    "wrong audience": (lambda i, g: i.mint(aud="https://api.example.com", scope=SCOPE), "another audience"),
    "for another resource": (
        lambda i, g: i.mint(aud=f"http://127.0.0.1:{free_port()}/mcp", scope=SCOPE),
        "another audience",
    ),
    "no audience": (lambda i, g: i.mint(scope=SCOPE), "'aud'"),
    "no expiry": (lambda i, g: good(i, g, exp=None), "'exp'"),
    "not a JWT": (lambda i, g: "opaque-token-of-another-kind", "not a JWT"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_token_is_refused_401_invalid_token(
    issuer: OIDCIssuer, gateway: GatewayProcess, case: str
) -> None:
    make, reason = BAD[case]
    status, headers, body = post(gateway, make(issuer, gateway))
    assert status == 401, (status, body)
    params = challenge(headers["www-authenticate"])
    assert params["error"] == "invalid_token", params
    assert reason in params["error_description"], params
    assert params["resource_metadata"] == metadata_url(gateway), params
    assert params["scope"] == SCOPE, params
    assert json.loads(body)["error"] == "invalid_token"


def test_a_token_without_the_scope_is_refused_403_insufficient_scope(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    status, headers, body = post(gateway, issuer.mint(aud=gateway.url, scope="openid profile"))
    assert status == 403, (status, body)
    params = challenge(headers["www-authenticate"])
    assert params["error"] == "insufficient_scope", params
    assert params["scope"] == SCOPE, params
    assert params["resource_metadata"] == metadata_url(gateway), params


def test_no_token_is_asked_for_one_without_an_error(gateway: GatewayProcess) -> None:
    status, headers, _ = post(gateway, None)
    assert status == 401
    # RFC 6750 3.1: a request without credentials is told how to get them, not that they failed.
    params = challenge(headers["www-authenticate"])
    assert params == {"scope": SCOPE, "resource_metadata": metadata_url(gateway)}, params


def test_the_protected_resource_metadata_names_the_issuer_and_the_scopes(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    status, _, body = post(gateway, None, "/.well-known/oauth-protected-resource/mcp", method="GET")
    assert status == 200, body
    document = json.loads(body)
    assert document["resource"] == gateway.url
    assert document["authorization_servers"] == [issuer.url]
    assert document["scopes_supported"] == [SCOPE]
    assert document["bearer_methods_supported"] == ["header"]


def test_healthz_and_metrics_behind_the_same_identity(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    status, _, body = post(gateway, None, "/healthz", method="GET")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    status, _, body = post(gateway, good(issuer, gateway), "/healthz", method="GET")
    assert status == 200 and "fx" in json.loads(body)["servers"], body
    # Without the scope, a valid token learns no more than a probe.
    status, _, body = post(gateway, issuer.mint(aud=gateway.url), "/healthz", method="GET")
    assert json.loads(body) == {"status": "ok"}
    status, headers, _ = post(gateway, None, "/metrics", method="GET")
    assert status == 401 and challenge(headers["www-authenticate"])["scope"] == SCOPE
    status, headers, _ = post(gateway, issuer.forged(aud=gateway.url, scope=SCOPE), "/metrics", method="GET")
    assert status == 401 and challenge(headers["www-authenticate"])["error"] == "invalid_token"
    status, _, body = post(gateway, good(issuer, gateway), "/metrics", method="GET")
    assert status == 200, body


# ---- key rotation (last: it adds keys to the module's issuer) ---------------------------------


def test_a_token_signed_with_a_new_key_verifies_after_the_key_set_is_fetched_again(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    assert post(gateway, good(issuer, gateway))[0] == 200  # the key set is held by now
    fetched = issuer.seen["jwks"]
    former = issuer.key("RS256")
    rotated = issuer.rotate("RS256")
    status, _, body = post(gateway, good(issuer, gateway))
    assert status == 200, body
    assert issuer.seen["jwks"] == fetched + 1, "the gateway fetched the keys again for the new kid"
    assert jwt.get_unverified_header(good(issuer, gateway))["kid"] == rotated.kid
    # A token of the former key, still listed, verifies too, without another fetch.
    claims = issuer.claims(aud=gateway.url, scope=SCOPE)
    older = jwt.encode(claims, former.private, algorithm="RS256", headers={"kid": former.kid})
    assert post(gateway, older)[0] == 200
    # A key nobody lists: refused, and the key set is not fetched again so soon (a flood of made-up
    # key ids costs the issuer nothing).
    status, headers, _ = post(gateway, issuer.mint(kid="made-up", aud=gateway.url, scope=SCOPE))
    assert status == 401
    assert "does not list" in challenge(headers["www-authenticate"])["error_description"]
    assert issuer.seen["jwks"] == fetched + 1


def test_serve_refuses_an_issuer_without_a_resource_url(tmp_path: Path) -> None:

    config = write_config(tmp_path, {})
    done = subprocess.run(
        serve_args(config, "--http", f"0.0.0.0:{free_port()}", "--issuer", "https://idp.example.com"),
        cwd=ROOT,
        env={k: v for k, v in gateway_env(tmp_path).items() if k != "MCP_ACTORS_TOKEN"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--resource-url" in done.stderr, done.stderr


def test_off_loopback_an_issuer_is_enough_without_the_static_token(
    issuer: OIDCIssuer, tmp_path: Path
) -> None:
    with oauth_gateway(tmp_path, issuer, host="0.0.0.0") as gateway:
        assert post(gateway, None)[0] == 401
        assert post(gateway, good(issuer, gateway))[0] == 200
