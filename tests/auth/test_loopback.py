"""The loopback redirect of a login, and the provider's other pieces that need no server:
the key-file assertion, the identity-assertion grant, and what each config builds."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from actors.config import load_config
from actors.mcp.auth import AuthError, LoopbackRedirect, TokenStore, oauth_provider
from actors.mcp.auth.client_assertion import KeyFileAssertion
from actors.mcp.config import ServerConfig
from tests.servers.http_server import free_port


def authorization_url(port: int, path: str = "/callback") -> str:
    query = urlencode({"redirect_uri": f"http://127.0.0.1:{port}{path}", "state": "s1"})
    return f"https://auth.example.com/authorize?{query}"


def deliver(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as page:
            return page.status, page.read().decode()
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read().decode()


def remote(oauth: dict[str, object] | None = None, **entry: object) -> ServerConfig:
    server: dict[str, object] = {"url": "https://api.example.com/mcp", **entry}
    if oauth is not None:
        server["oauth"] = oauth
    return load_config({"mcpServers": {"gh": server}}, environ={}).servers["gh"]


# ---- the loopback redirect -------------------------------------------------------------------------


def test_the_redirect_brings_code_state_and_iss_and_the_browser_gets_a_page() -> None:
    port = free_port()
    pages: list[tuple[int, str]] = []

    def browser(url: str) -> None:
        pages.append(
            deliver(f"http://127.0.0.1:{port}/callback?code=c0de&state=s1&iss=https%3A%2F%2Fauth.example.com")
        )

    async def flow() -> object:
        with LoopbackRedirect(open_url=browser, timeout=30) as redirect:
            await redirect.redirect_handler(authorization_url(port))
            return await redirect.callback_handler()

    result = anyio.run(flow)
    assert (result.code, result.state, result.iss) == ("c0de", "s1", "https://auth.example.com")  # type: ignore[attr-defined]
    assert pages[0][0] == 200 and "You can close this window" in pages[0][1]


def test_a_refused_login_is_an_auth_error_with_the_servers_words() -> None:
    port = free_port()

    def browser(url: str) -> None:
        status, page = deliver(
            f"http://127.0.0.1:{port}/callback?error=access_denied&error_description=No%20%3Cb%3E"
        )
        assert status == 400 and "No &lt;b&gt;" in page

    async def flow() -> None:
        with LoopbackRedirect(open_url=browser, timeout=30, server="gh") as redirect:
            await redirect.redirect_handler(authorization_url(port))
            await redirect.callback_handler()

    with pytest.raises(AuthError, match=r"gh: the login was refused: access_denied \(No <b>\)"):
        anyio.run(flow)


def test_other_paths_are_not_found_and_do_not_end_the_wait() -> None:
    port = free_port()

    def browser(url: str) -> None:
        assert deliver(f"http://127.0.0.1:{port}/favicon.ico")[0] == 404
        assert deliver(f"http://127.0.0.1:{port}/callback?code=c&state=s1")[0] == 200

    async def flow() -> str:
        with LoopbackRedirect(open_url=browser, timeout=30) as redirect:
            await redirect.redirect_handler(authorization_url(port))
            return (await redirect.callback_handler()).code

    assert anyio.run(flow) == "c"


def test_no_redirect_within_the_timeout_is_an_auth_error_not_a_hang() -> None:
    async def flow() -> None:
        with LoopbackRedirect(timeout=0.2, server="gh") as redirect:
            await redirect.redirect_handler(authorization_url(free_port()))
            await redirect.callback_handler()

    with pytest.raises(AuthError, match="gh: no login came back within 0 s"):
        anyio.run(flow)


def test_closing_wakes_a_waiter() -> None:
    redirect = LoopbackRedirect(timeout=60)
    redirect.listen(authorization_url(free_port()))
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            redirect.wait()
        except AuthError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait, name="waiter")
    waiter.start()
    redirect.close()
    waiter.join(30)
    assert not waiter.is_alive()
    assert "abandoned" in str(outcome[0])


@pytest.mark.parametrize(
    "redirect_uri",
    ["https://127.0.0.1:8000/cb", "http://example.com:8000/cb", "http://127.0.0.1/cb", "custom:cb"],
)
def test_only_a_loopback_http_redirect_is_listened_on(redirect_uri: str) -> None:
    url = f"https://auth.example.com/authorize?{urlencode({'redirect_uri': redirect_uri})}"
    with LoopbackRedirect() as redirect, pytest.raises(AuthError, match="is not on the loopback"):
        redirect.listen(url)


def test_a_busy_port_is_an_auth_error_naming_it() -> None:
    port = free_port()
    with LoopbackRedirect() as first, LoopbackRedirect(server="gh") as second:
        first.listen(authorization_url(port))
        with pytest.raises(AuthError, match=f"gh: cannot listen for the login's redirect on port {port}"):
            second.listen(authorization_url(port))


# ---- the key-file assertion (private_key_jwt) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "algorithm"),
    [(ec.generate_private_key(ec.SECP256R1()), "ES256"), (rsa.generate_private_key(65537, 2048), "RS256")],
    ids=["ec", "rsa"],
)
def test_the_assertion_is_signed_with_the_key_files_algorithm(
    tmp_path: Path, key: object, algorithm: str
) -> None:
    pem = key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = tmp_path / "key.pem"
    path.write_bytes(pem)
    signer = KeyFileAssertion("client-1", str(path))
    token = anyio.run(signer, "https://auth.example.com")
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, key.public_key(), algorithms=[algorithm], audience="https://auth.example.com")  # type: ignore[attr-defined]
    assert header["alg"] == algorithm
    assert (claims["iss"], claims["sub"]) == ("client-1", "client-1")
    assert claims["exp"] > claims["iat"] and claims["jti"]


# ---- what each config builds ---------------------------------------------------------------------


def test_each_grant_builds_its_sdk_provider(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    assert type(oauth_provider(remote(), store)).__name__ == "AuthorizationCode"
    basic = remote(
        {"grant": "client_credentials", "clientId": "c", "clientSecret": "s", "issuer": "https://a.example"}
    )
    assert type(oauth_provider(basic, store)).__name__ == "ClientCredentials"
    jwt_grant = remote(
        {
            "grant": "client_credentials",
            "clientId": "c",
            "privateKeyFile": "k.pem",
            "issuer": "https://a.example",
        }
    )
    assert type(oauth_provider(jwt_grant, store)).__name__ == "PrivateKeyJWT"
    enterprise = remote(
        {"grant": "identity_assertion", "clientId": "c", "clientSecret": "s", "issuer": "https://a.example"}
    )
    assert type(oauth_provider(enterprise, store)).__name__ == "_IdentityAssertion"
    # Its own Authorization header and no oauth: refusals are only classified.
    assert (
        type(oauth_provider(remote(headers={"Authorization": "Bearer x"}), store)).__name__ == "_RefusalCheck"
    )
    assert not store.path.exists()  # building reads and writes nothing


def test_handlers_and_interactive_must_agree(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")

    async def redirect(url: str) -> None:
        return None

    with pytest.raises(ValueError, match="needs both"):
        oauth_provider(remote(), store, interactive=True, redirect_handler=redirect)
    with pytest.raises(ValueError, match="interactive=True"):
        oauth_provider(remote(), store, redirect_handler=redirect)
    stdio = load_config({"mcpServers": {"local": {"command": "x"}}}, environ={}).servers["local"]
    with pytest.raises(ValueError, match="not a remote server"):
        oauth_provider(stdio, store)
