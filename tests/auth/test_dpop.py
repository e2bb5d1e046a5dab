"""DPoP proofs (`actors.mcp.auth.dpop`), checked as a server checks them (RFC 9449 4.3): each a
signed JWT of its own key, for one request, never reusable for another. The whole login is
judged by the official conformance suite's ``auth/dpop`` and ``auth/dpop-nonce`` (its
authorization and MCP servers verify every proof); tests/conformance/test_requirements_client.py
runs them."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from actors.mcp.auth.dpop import DPoPKey, Proofs, htu_of, nonce_asked, offered
from actors.mcp.auth.store import StoredLogin, TokenStore

URL = "https://mcp.example.com/mcp"


def verified(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of ``proof``, its signature checked with the key it carries."""
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK.from_dict(header["jwk"], algorithm="ES256")
    return header, jwt.decode(proof, key.key, algorithms=["ES256"])


def test_a_proof_is_signed_by_its_own_public_key_for_one_request() -> None:
    key = DPoPKey.generate()
    header, claims = verified(key.proof("post", f"{URL}?session=1#frag", now=1_000_000))
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"], "the private key never leaves"
    assert claims["htm"] == "POST" and claims["htu"] == URL and claims["iat"] == 1_000_000
    assert "ath" not in claims and "nonce" not in claims


def test_a_proof_for_a_token_names_its_hash_and_the_nonce() -> None:
    _, claims = verified(DPoPKey.generate().proof("POST", URL, access_token="tok", nonce="n-1"))
    assert claims["ath"] == base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert claims["nonce"] == "n-1"


def test_no_two_proofs_share_a_jti() -> None:
    key = DPoPKey.generate()
    jtis = {verified(key.proof("POST", URL))[1]["jti"] for _ in range(50)}
    assert len(jtis) == 50


def test_the_thumbprint_is_rfc_7638s() -> None:
    key = DPoPKey.generate()
    canonical = json.dumps({k: key.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    assert key.thumbprint == expected


def test_a_key_survives_its_pem_and_only_p256_keys_are_taken() -> None:
    key = DPoPKey.generate()
    assert DPoPKey.from_pem(key.to_pem()).jwk == key.jwk
    p384 = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(ValueError, match="P-256"):
        DPoPKey(p384)
    rsa_pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    with pytest.raises(ValueError, match="EC private key"):
        DPoPKey.from_pem(rsa_pem)


@pytest.mark.parametrize(
    ("url", "htu"),
    [
        ("https://a.example/mcp", "https://a.example/mcp"),
        ("https://a.example/mcp?x=1", "https://a.example/mcp"),
        ("https://a.example/mcp#f", "https://a.example/mcp"),
        ("http://127.0.0.1:8080/token?a=b#c", "http://127.0.0.1:8080/token"),
    ],
)
def test_htu_drops_query_and_fragment(url: str, htu: str) -> None:
    assert htu_of(url) == htu


def _response(status: int, headers: dict[str, str], body: Any = None) -> httpx2.Response:
    content = json.dumps(body).encode() if body is not None else b""
    return httpx2.Response(status, headers=headers, content=content)


@pytest.mark.parametrize(
    ("response", "nonce"),
    [
        (_response(400, {"DPoP-Nonce": "n"}, {"error": "use_dpop_nonce"}), "n"),
        (_response(401, {"DPoP-Nonce": "n", "WWW-Authenticate": 'DPoP error="use_dpop_nonce"'}), "n"),
        # A nonce refusal without the nonce, another error, a success: nothing to retry with.
        (_response(400, {}, {"error": "use_dpop_nonce"}), None),
        (_response(400, {"DPoP-Nonce": "n"}, {"error": "invalid_grant"}), None),
        (_response(401, {"DPoP-Nonce": "n", "WWW-Authenticate": 'DPoP error="invalid_token"'}), None),
        (_response(200, {"DPoP-Nonce": "n"}, {}), None),
        (_response(400, {"DPoP-Nonce": "n"}, ["not", "an", "object"]), None),
    ],
)
def test_a_nonce_is_asked_for_only_by_a_use_dpop_nonce_refusal(
    response: httpx2.Response, nonce: str | None
) -> None:
    assert nonce_asked(response) == nonce


@pytest.mark.parametrize(
    ("metadata", "offers"),
    [
        ({"dpop_signing_alg_values_supported": ["ES256", "RS256"]}, True),
        ({"dpop_signing_alg_values_supported": ["RS256"]}, False),
        ({"dpop_signing_alg_values_supported": "ES256"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_dpop_is_offered_only_with_es256(metadata: Any, offers: bool) -> None:
    assert offered(metadata) is offers


def test_a_bound_login_keeps_its_key_across_processes_and_presents_it() -> None:
    """The key a bound token came with is stored with the login; the next process's flow
    presents the token with that key (a new key would not match the token's ``cnf.jkt``)."""
    stored: list[str] = []

    async def store_key(pem: str) -> None:
        stored.append(pem)

    async def scenario() -> tuple[str, str]:
        first = Proofs(None, store_key)
        metadata = httpx2.Request("GET", "https://as.example/.well-known/oauth-authorization-server")
        answer = _response(200, {}, {"dpop_signing_alg_values_supported": ["ES256"]})
        assert not await first.again_with_nonce(metadata, answer)
        token_request = httpx2.Request("POST", "https://as.example/token")
        assert await first.prove_token_request(token_request)
        body = {"access_token": "at", "token_type": "DPoP", "expires_in": 60}
        issued = httpx2.Response(200, content=json.dumps(body).encode(), request=token_request)
        handed_on = await first.token_response(issued)
        assert json.loads(handed_on.content)["token_type"] == "Bearer"  # as the SDK reads it
        assert first.bound and len(stored) == 1
        token_key = jwt.get_unverified_header(token_request.headers["DPoP"])["jwk"]

        later = Proofs(stored[-1], store_key)  # another process, the same login
        call = httpx2.Request("POST", URL, headers={"Authorization": "Bearer at"})
        await later.present(call, "at")
        assert call.headers["Authorization"] == "DPoP at"
        header, claims = verified(call.headers["DPoP"])
        assert claims["htu"] == URL and "ath" in claims
        return json.dumps(token_key, sort_keys=True), json.dumps(header["jwk"], sort_keys=True)

    before, after = anyio.run(scenario)
    assert before == after


def test_a_plain_token_unbinds_the_login_and_goes_out_as_bearer() -> None:
    stored: list[str] = []

    async def store_key(pem: str) -> None:
        stored.append(pem)

    async def scenario() -> httpx2.Request:
        proofs = Proofs(DPoPKey.generate().to_pem(), store_key)  # bound, as stored
        await proofs.token_response(_response(200, {}, {"access_token": "at", "token_type": "Bearer"}))
        call = httpx2.Request("POST", URL, headers={"Authorization": "Bearer at"})
        await proofs.present(call, "at")
        return call

    call = anyio.run(scenario)
    assert stored == [""], "the key is dropped from the login"
    assert call.headers["Authorization"] == "Bearer at" and "DPoP" not in call.headers


def test_the_stored_key_is_never_in_a_repr(tmp_path: Any) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    pem = DPoPKey.generate().to_pem()
    login = store.save(URL, dpop_key=pem)
    assert login.dpop_key == pem and store.load(URL).dpop_key == pem
    assert "PRIVATE KEY" not in repr(login) and "PRIVATE KEY" not in repr(StoredLogin(dpop_key=pem))
