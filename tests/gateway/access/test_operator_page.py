"""The operator's page in a real headless browser: Debian's Chromium, driven by Playwright (its
own browser download is never used), in front of a real gateway (``mcp-actors serve --http``
with ``access.auth`` from our own issuer, ``access.policy`` and the audit) and real servers.

An admin (a token with the ``gateway:admin`` scope, which the policy's ``admins`` rule permits)
sees every server with its state, pid, calls, errors, latency and last error after real calls,
and the recent audit records with each caller's subject; the page reloads itself. A user the
policy does not make an admin is answered 403, a request without a token 401 with the challenge
``/mcp`` gives. Secrets planted in a server's env, a remote server's headers, the arguments, the
static token and the callers' own tokens appear nowhere in the page or its JSON. A screenshot is
kept in the run's temporary folder (its path is printed).

One gateway serves the module; each test starts its own browser (Playwright's async API, inside
the test's own event loop) and closes it, so no browser process outlives a test.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from playwright.async_api import Browser, BrowserContext, Page, Response, async_playwright
from playwright.async_api import Error as PlaywrightError

from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, Planted, auth_keys, client, planted_gateway, post
from tests.gateway.conftest import WAIT, GatewayProcess, fixture, missing, write_config
from tests.servers.http_server import HTTPServer, free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's Chromium (``make test`` installs it: .ci/need-debian)."""
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN_SCOPE = "gateway:admin"

ENV_SECRET = "env-s3cret-5e4d3c2b"
HEADER_SECRET = "hdr-s3cret-1a2b3c4d"
ARG_SECRET = "arg-s3cret-7f6e5d4c"
STATIC_TOKEN = "static-s3cret-token-9c8b"
HOSTILE = '<b id="eve">eve</b>'
"""A subject that is markup: the page must show it as text."""

POLICY = f"""
@id("dev-everything")
permit (principal in Group::"dev", action in Action::"use", resource);

@id("admins")
permit (principal, action == Action::"admin", resource == Gateway::"gateway")
when {{ principal.scopes.contains("{ADMIN_SCOPE}") }};
"""


@pytest.fixture(scope="module")
def gateway(
    issuer: OIDCIssuer, remote: HTTPServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    planted = Planted(env=ENV_SECRET, header=HEADER_SECRET, static_token=STATIC_TOKEN)
    # Arguments kept in the audit: the page must still not show them.
    audit = {"arguments": True}
    with planted_gateway(
        tmp_path_factory.mktemp("operator-page"), issuer, remote, POLICY, planted, audit
    ) as gateway:
        yield gateway


def token(issuer: OIDCIssuer, gateway: GatewayProcess, user: str, *, admin: bool = False) -> str:
    scope = f"{SCOPE} {ADMIN_SCOPE}" if admin else SCOPE
    return issuer.mint(sub=user, aud=gateway.url, scope=scope, groups=["dev"], client_id=f"{user}-cli")


def base(gateway: GatewayProcess) -> str:
    return f"http://127.0.0.1:{gateway.port}"


def operator_json(gateway: GatewayProcess, bearer: str | None) -> tuple[int, Any]:
    """``GET /operator.json`` over plain HTTP: its status and body (parsed where it is JSON)."""
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        connection.request("GET", "/operator.json", headers=headers)
        response = connection.getresponse()
        body = response.read()
        kind = response.getheader("content-type") or ""
        return response.status, json.loads(body) if kind.startswith("application/json") else body
    finally:
        connection.close()


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, closed (with Playwright's driver) when the block ends."""
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} (Debian package chromium) is not installed")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=BROWSER_ARGS, timeout=WAIT * 1000
        )
        try:
            yield browser
        finally:
            await browser.close()


async def visit(browser: Browser, url: str, bearer: str | None) -> tuple[BrowserContext, Page, Response]:
    """A new browsing context that sends ``bearer`` with every request, at ``url``."""
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    context = await browser.new_context(extra_http_headers=headers, viewport={"width": 1400, "height": 900})
    context.set_default_timeout(WAIT * 1000)
    page = await context.new_page()
    response = await page.goto(url)
    assert response is not None
    return context, page, response


READ_PAGE = """() => {
  const rows = id => {
    const table = document.getElementById(id);
    const heads = [...table.querySelectorAll("thead th")].map(cell => cell.innerText);
    return [...table.querySelectorAll("tbody tr")].map(
      row => Object.fromEntries([...row.children].map((cell, i) => [heads[i], cell.innerText])));
  };
  return {title: document.title, servers: rows("servers"), audit: rows("audit"),
          hostile: document.querySelectorAll("#eve").length, html: document.documentElement.outerHTML};
}"""
"""Everything the tests read of the page, in one evaluation: the page reloads itself every few
seconds, and one evaluation sees one load of it."""


async def read(page: Page) -> dict[str, Any]:
    """The page as `READ_PAGE` reads it (once more if a reload came in between)."""
    for _ in range(3):
        try:
            await page.wait_for_load_state("load")
            found: dict[str, Any] = await page.evaluate(READ_PAGE)
            return found
        except PlaywrightError:
            continue  # the page reloaded while it was read
    raise AssertionError("the operator page never stayed loaded long enough to be read")


def row(view: dict[str, Any], server: str) -> dict[str, str]:
    [found] = [r for r in view["servers"] if r["Server"] == server]
    return dict(found)


def test_an_admin_sees_every_server_and_the_recent_requests(
    issuer: OIDCIssuer, gateway: GatewayProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = token(issuer, gateway, "alice", admin=True)
    bob = token(issuer, gateway, "bob")
    eve = token(issuer, gateway, HOSTILE)
    planted = [ENV_SECRET, HEADER_SECRET, ARG_SECRET, STATIC_TOKEN, alice, bob, eve]
    screenshot = tmp_path / "operator-page.png"

    async def calls() -> None:
        async with client(gateway, alice) as session:
            assert not (
                await session.call_tool("fx__echo", {"text": f"plant {ARG_SECRET} {ENV_SECRET}"})
            ).is_error
            assert (await session.call_tool("fx__fail", {"message": f"failing with {ARG_SECRET}"})).is_error
            header = await session.call_tool("web__header", {"name": "x-api-key", "password": ARG_SECRET})
            assert HEADER_SECRET in header.content[0].text  # type: ignore[union-attr]  # the secret was in play
        async with client(gateway, bob) as session:
            assert not (await session.call_tool("fx__add", {"a": 1, "b": 2})).is_error
        async with client(gateway, eve) as session:
            assert not (await session.call_tool("fx__echo", {"text": "eve"})).is_error

    anyio.run(calls)

    def recorded() -> bool:
        status, view = operator_json(gateway, alice)
        subjects = {r["subject"] for r in view["audit"]} if status == 200 else set()
        return {"alice", "bob", HOSTILE} <= subjects

    assert wait_until(recorded, WAIT), operator_json(gateway, alice)

    async def browse() -> None:
        async with chromium() as browser:
            context, page, response = await visit(browser, f"{base(gateway)}/", alice)
            assert response.status == 200 and response.headers["content-type"].startswith("text/html")
            view = await read(page)
            assert view["title"] == "mcp-actors gateway"
            fx = row(view, "fx")
            assert fx["State"] == "running" and int(fx["PID"]) in gateway.servers()
            assert int(fx["Calls"]) >= 4 and int(fx["Errors"]) >= 1 and fx["Transport"] == "stdio"
            assert 0 < float(fx["p50 ms"]) <= float(fx["p99 ms"])
            assert fx["Last error"].startswith("server_error: the last failed call: server error")
            web = row(view, "web")
            assert web["State"] == "running" and web["PID"] == "—" and int(web["Calls"]) >= 1
            assert float(web["p99 ms"]) > 0 and web["Last error"] == "—"
            # The recent requests: each caller as themselves, the hostile subject as text.
            assert {"alice", "bob", HOSTILE} <= {r["Subject"] for r in view["audit"]}
            assert view["hostile"] == 0
            [failed] = [r for r in view["audit"] if r["Tool / prompt / URI"] == "fail"]
            assert (failed["Subject"], failed["Outcome"], failed["Error type"]) == (
                "alice",
                "error",
                "server_error",
            )
            await page.screenshot(path=str(screenshot), full_page=True)
            html = view["html"]
            twin = await context.request.get(f"{base(gateway)}/operator.json")
            assert twin.status == 200
            text = await twin.text()
            # Asked for JSON only, / answers the twin too.
            negotiated = await context.request.get(
                f"{base(gateway)}/", headers={"Accept": "application/json"}
            )
            assert negotiated.headers["content-type"] == "application/json"
            for secret in planted:
                assert secret not in html and secret not in text, secret
            assert "sha256:" not in text and "arguments" not in text
            # The page reloads itself (meta refresh), with the same credentials, and is current.
            before = int(fx["Calls"])
            async with client(gateway, alice) as session:
                await session.call_tool("fx__echo", {"text": "again"})
            for _ in range(5):  # a reload may come before the call is counted: a few more, then
                async with page.expect_event("load", timeout=WAIT * 1000):
                    pass
                if int(row(await read(page), "fx")["Calls"]) > before:
                    break
            else:
                raise AssertionError("the page did not reload with the new call counted")
            await context.close()

    anyio.run(browse)
    assert screenshot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\noperator page screenshot: {screenshot}")


def test_others_are_refused_as_mcp_refuses_them(issuer: OIDCIssuer, gateway: GatewayProcess) -> None:
    bob = token(issuer, gateway, "bob")
    foreign = issuer.mint(
        sub="alice", aud="http://elsewhere/mcp", scope=f"{SCOPE} {ADMIN_SCOPE}", groups=["dev"]
    )
    _, mcp_headers, _ = post(gateway, None)

    async def browse() -> None:
        async with chromium() as browser:
            # No token: 401, with the challenge the MCP endpoint gives.
            context, _, response = await visit(browser, f"{base(gateway)}/", None)
            assert response.status == 401
            challenge = response.headers["www-authenticate"]
            assert challenge == mcp_headers["www-authenticate"]
            assert challenge.startswith("Bearer") and "resource_metadata=" in challenge
            await context.close()
            # A token for another resource: 401, invalid_token.
            context, _, response = await visit(browser, f"{base(gateway)}/", foreign)
            assert response.status == 401 and 'error="invalid_token"' in response.headers["www-authenticate"]
            await context.close()
            # Authenticated, but no rule makes bob, or the static token's holder, an admin: 403.
            for bearer in (bob, STATIC_TOKEN):
                context, _, response = await visit(browser, f"{base(gateway)}/", bearer)
                assert response.status == 403, bearer
                body = await response.text()
                assert "permits you no admin action" in body and "fx" not in body
                twin = await context.request.get(f"{base(gateway)}/operator.json")
                assert twin.status == 403 and "servers" not in await twin.text()
                await context.close()

    anyio.run(browse)


def test_without_a_policy_the_static_token_is_the_operator(issuer: OIDCIssuer, tmp_path: Path) -> None:
    """No policy names an admin: the static token's holder may see the page, an OAuth user may
    not, however many scopes they hold."""
    port = free_port()
    access = {"auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp")}
    config = write_config(tmp_path, {"fx": fixture()}, access=access)
    with GatewayProcess(config, tmp_path, port=port, env={"MCP_ACTORS_TOKEN": STATIC_TOKEN}) as gateway:
        status, view = operator_json(gateway, STATIC_TOKEN)
        assert status == 200 and [s["namespace"] for s in view["servers"]] == ["fx"]
        assert view["servers"][0]["state"] == "idle"  # seen, not woken
        alice = issuer.mint(sub="alice", aud=gateway.url, scope=f"{SCOPE} {ADMIN_SCOPE}", groups=["dev"])
        assert operator_json(gateway, alice)[0] == 403
        assert operator_json(gateway, None)[0] == 401


def test_on_loopback_without_a_token_the_local_user_is_the_operator(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture()})
    with GatewayProcess(config, tmp_path) as gateway:
        status, view = operator_json(gateway, None)
        assert status == 200 and [s["namespace"] for s in view["servers"]] == ["fx"]
        # The page refuses a foreign Host (DNS rebinding), as /healthz does.
        code, _ = gateway.request("GET", "/", headers={"Host": "attacker.example"})
        assert code == 421
        code, body = gateway.request("GET", "/")
        assert code == 200 and re.search(rb'<tr data-server="fx">', body)
