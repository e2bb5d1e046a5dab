"""The token verifiers and the issuer's keys (`actors.gateway.access.verifiers`, `.keys`), in this
process against a real issuer of ours on loopback: discovery, one fetch for many concurrent
first tokens, the leeway, the issuer's metadata naming another issuer, an issuer that is down
and then up, and what a key set may hold that is never used to check a signature."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import jwt
import pytest

from actors.config import AuthKeys, ConfigError, load_config
from actors.gateway.access.keys import IssuerKeys, http_client, parse_jwks
from actors.gateway.access.principal import StaticAccess
from actors.gateway.access.verifiers import JWTVerifier, StaticTokenVerifier, Verifiers, refusal
from actors.mcp.tls import default_ssl_context
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer, SigningKey

RESOURCE = "https://gw.example.com/mcp"


def auth(issuer_url: str, **keys: Any) -> AuthKeys:
    section = {"issuer": issuer_url, "resource": RESOURCE, "scopes": ["mcp"], **keys}
    found = load_config({"mcpServers": {}, "access": {"auth": section}}).access.auth
    assert found is not None
    return found


def verifier(keys: AuthKeys) -> JWTVerifier:
    return JWTVerifier(
        keys, IssuerKeys(keys.issuer, http_client(default_ssl_context()), jwks_uri=keys.jwks_uri)
    )


async def verdict(check: Verifiers | JWTVerifier, token: str) -> tuple[Any, str | None]:
    accepted = await check.verify_token(token)
    return accepted, refusal.get()


def test_many_first_tokens_at_once_cost_the_issuer_one_discovery_and_one_key_fetch(
    issuer: OIDCIssuer,
) -> None:
    check = verifier(auth(issuer.url))
    before = issuer.seen.copy()
    tokens = [
        issuer.mint(alg="ES256" if i % 2 else "RS256", sub=f"user-{i}", aud=RESOURCE, scp=["mcp", "x"])
        for i in range(20)
    ]

    async def scenario() -> list[Any]:
        found: list[Any] = []

        async def one(token: str) -> None:
            found.append(await check.verify_token(token))

        async with anyio.create_task_group() as group:
            for token in tokens:
                group.start_soon(one, token)
        await check.keys.aclose()
        return found

    accepted = anyio.run(scenario)
    assert all(a is not None for a in accepted), accepted
    assert {a.subject for a in accepted} == {f"user-{i}" for i in range(20)}
    assert all(a.scopes == ["mcp", "x"] and a.resource == RESOURCE for a in accepted)
    assert issuer.seen["metadata"] - before["metadata"] == 1
    assert issuer.seen["jwks"] - before["jwks"] == 1


def test_the_leeway_a_token_without_kid_and_the_jwks_uri_given(issuer: OIDCIssuer) -> None:
    check = verifier(auth(issuer.url, jwksUri=f"{issuer.url}/jwks", leeway=30))
    now = int(time.time())
    before = issuer.seen["metadata"]
    claims = issuer.claims(aud=[RESOURCE, "other"], scope="mcp")
    no_kid = jwt.encode(claims, issuer.key("ES256").private, algorithm="ES256")

    async def scenario() -> None:
        assert (await verdict(check, issuer.mint(aud=RESOURCE, exp=now - 10)))[0] is not None
        late = await verdict(check, issuer.mint(aud=RESOURCE, exp=now - 120))
        assert late == (None, "the token has expired")
        early = await verdict(check, issuer.mint(aud=RESOURCE, nbf=now + 10))
        assert early[0] is not None
        accepted, _ = await verdict(check, no_kid)
        assert accepted is not None and accepted.subject == "alice"
        await check.keys.aclose()

    anyio.run(scenario)
    assert issuer.seen["metadata"] == before, "with jwksUri, no discovery"


def test_metadata_that_names_another_issuer_is_not_believed(issuer: OIDCIssuer) -> None:
    # The same server under another name: its metadata says it is 127.0.0.1, not localhost.
    other = issuer.url.replace("127.0.0.1", "localhost")
    check = verifier(auth(other))

    async def scenario() -> tuple[Any, str | None]:
        try:
            return await verdict(check, issuer.mint(iss=other, aud=RESOURCE))
        finally:
            await check.keys.aclose()

    assert anyio.run(scenario) == (None, "the issuer's keys cannot be fetched now")


def test_an_issuer_down_at_first_is_asked_again_once_it_is_up() -> None:
    port = free_port()
    down = OIDCIssuer(port)
    check = verifier(auth(down.url))
    token = down.mint(aud=RESOURCE)

    async def until_accepted() -> list[str | None]:
        reasons = [(await verdict(check, token))[1]]
        with OIDCIssuer(port) as up:
            up._keys, up._signing = down._keys, down._signing  # the same issuer, now serving
            with anyio.fail_after(30):
                while (await check.verify_token(token)) is None:
                    reasons.append(refusal.get())
                    await anyio.sleep(0.2)
            await check.keys.aclose()
        return reasons

    reasons = anyio.run(until_accepted)
    assert set(reasons) == {"the issuer's keys cannot be fetched now"}, reasons


def test_only_public_signing_keys_of_a_key_set_are_ever_used() -> None:
    signing = SigningKey.make("RS256", kid="sig")
    document = {
        "keys": [
            dict(signing.jwk),
            {"kty": "oct", "kid": "shared", "k": "c2VjcmV0"},
            {**signing.jwk, "kid": "enc", "use": "enc"},
            {**signing.jwk, "kid": "private", "d": "AQAB"},
            {"kty": "EC", "kid": "broken", "crv": "P-256", "x": "AA", "y": "AA"},
        ]
    }
    keys = parse_jwks(json.dumps(document).encode())
    assert [key.kid for key in keys] == ["sig"]
    [key] = keys
    assert key.signs("RS256") and key.signs("PS256") is False  # its JWK says RS256 only
    assert not key.signs("ES256") and not key.signs("HS256") and not key.signs("none")


def test_the_static_token_is_one_principal_and_anything_else_is_refused() -> None:
    check = Verifiers(StaticTokenVerifier("s3cret-static", scopes=("mcp",)))

    async def scenario() -> None:
        accepted, _ = await verdict(check, "s3cret-static")
        assert isinstance(accepted, StaticAccess) and accepted.scopes == ["mcp"]
        assert await verdict(check, "s3cret-stati") == (None, "the token is not one this gateway accepts")

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("auth_section", "key"),
    [
        ({"resource": RESOURCE}, "access.auth.issuer"),
        ({"issuer": "http://idp.example.com", "resource": RESOURCE}, "access.auth.issuer"),
        ({"issuer": "https://idp.example.com", "resource": "gateway"}, "access.auth.resource"),
        (
            {"issuer": "https://idp.example.com", "resource": RESOURCE, "algorithms": ["HS256"]},
            "access.auth.algorithms.0",
        ),
        (
            {"issuer": "https://idp.example.com", "resource": RESOURCE, "algorithms": []},
            "access.auth.algorithms",
        ),
        (
            {"issuer": "https://idp.example.com", "resource": RESOURCE, "scopes": ["a b"]},
            "access.auth.scopes",
        ),
        (
            {"issuer": "https://idp.example.com", "resource": RESOURCE, "jwksUri": "ftp://k"},
            "access.auth.jwksUri",
        ),
        ({"issuer": "https://idp.example.com", "resource": RESOURCE, "leeway": 3600}, "access.auth.leeway"),
        (
            {"issuer": "https://idp.example.com", "resource": RESOURCE, "audiance": "x"},
            "access.auth.audiance",
        ),
    ],
)
def test_each_bad_auth_value_is_refused_at_load_with_its_key(auth_section: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config({"mcpServers": {}, "access": {"auth": auth_section}})
    assert key in {problem.key for problem in refused.value.problems}, refused.value
