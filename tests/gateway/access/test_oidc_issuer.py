"""The test suite's own OIDC issuer (tests/servers/oidc_issuer.py) does what a real one does:
discovery, its public keys, ``client_credentials``, RFC 8693 token exchange, the refusals of its
token endpoint; and it runs as a process of its own for a test that needs it there."""

from __future__ import annotations

import subprocess
import sys

import httpx
import jwt

from tests.conftest import wait_until
from tests.gateway.conftest import ROOT, WAIT
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import TOKEN_EXCHANGE, OIDCIssuer

ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


def test_discovery_and_the_key_set(issuer: OIDCIssuer) -> None:
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        document = httpx.get(issuer.url + path, timeout=WAIT).json()
        assert document["issuer"] == issuer.url
        assert document["jwks_uri"] == f"{issuer.url}/jwks"
        assert TOKEN_EXCHANGE in document["grant_types_supported"]
    keys = httpx.get(f"{issuer.url}/jwks", timeout=WAIT).json()["keys"]
    assert {(key["kty"], key["alg"]) for key in keys} >= {("RSA", "RS256"), ("EC", "ES256")}
    assert not any("d" in key for key in keys), "no private part is ever published"
    # A token it mints verifies against what it publishes, as any resource server checks it.
    token = issuer.mint(alg="ES256", aud="https://api.example.com", groups=["dev"])
    [key] = [k for k in keys if k["kid"] == jwt.get_unverified_header(token)["kid"]]
    claims = jwt.decode(token, jwt.PyJWK(key).key, algorithms=["ES256"], audience="https://api.example.com")
    assert claims["iss"] == issuer.url and claims["groups"] == ["dev"]


def test_client_credentials_and_token_exchange(issuer: OIDCIssuer) -> None:
    client_id, secret = issuer.client()
    answer = httpx.post(
        f"{issuer.url}/token",
        data={"grant_type": "client_credentials", "resource": "https://api.example.com", "scope": "mcp"},
        auth=(client_id, secret),
        timeout=WAIT,
    ).json()
    service = issuer.verify(answer["access_token"])
    assert (service["sub"], service["aud"], service["scope"]) == (client_id, "https://api.example.com", "mcp")

    user = issuer.mint(sub="alice", aud="https://gw.example.com/mcp", scope="mcp", groups=["dev"])
    exchange = {
        "grant_type": TOKEN_EXCHANGE,
        "subject_token": user,
        "subject_token_type": ACCESS_TOKEN,
        "audience": "https://backend.example.com",
    }
    answer = httpx.post(f"{issuer.url}/token", data=exchange, auth=(client_id, secret), timeout=WAIT).json()
    assert answer["issued_token_type"] == ACCESS_TOKEN
    exchanged = issuer.verify(answer["access_token"])
    assert exchanged["sub"] == "alice" and exchanged["aud"] == "https://backend.example.com"
    assert exchanged["act"] == {"sub": client_id} and exchanged["groups"] == ["dev"]

    def refused(data: dict[str, str], auth: tuple[str, str] = (client_id, secret)) -> tuple[int, str]:
        response = httpx.post(f"{issuer.url}/token", data=data, auth=auth, timeout=WAIT)
        return response.status_code, response.json()["error"]

    assert refused(exchange, (client_id, "wrong")) == (401, "invalid_client")
    assert refused({**exchange, "subject_token": issuer.forged(sub="mallory")}) == (400, "invalid_grant")
    assert refused({**exchange, "audience": ""}) == (400, "invalid_target")
    assert refused({"grant_type": "password"}) == (400, "unsupported_grant_type")


def test_it_runs_as_a_process_of_its_own_and_mints_over_http() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.oidc_issuer", "--port", str(port), "--client", "gw:s3cret"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{url}/jwks", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_until(up, WAIT, interval=0.1)
        token = httpx.post(f"{url}/test/mint", json={"sub": "bob", "alg": "ES256"}, timeout=WAIT).json()
        assert jwt.decode(token["access_token"], options={"verify_signature": False})["sub"] == "bob"
        grant = {"grant_type": "client_credentials"}
        assert httpx.post(f"{url}/token", data=grant, auth=("gw", "s3cret"), timeout=WAIT).status_code == 200
    finally:
        process.terminate()
        process.wait(WAIT)
