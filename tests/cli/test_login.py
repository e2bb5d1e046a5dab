"""``mcp-actors login``, ``logout`` and the ``auth:`` lines of ``check``, through the entry point,
against the OAuth-protected test server (tests/servers/oauth_server.py); the browser is replaced by
a function that follows the authorization redirect to the command's loopback listener."""

from __future__ import annotations

import io
import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.auth import OAuthToken

from actors.cli import main
from actors.mcp.auth import STATE_DIR_ENV, TokenStore
from tests.auth.conftest import CLIENT_ID, CLIENT_SECRET, OAUTH_MODULE, OAuthServer, follow_redirect
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import HTTPServer

NS = "remote"


@pytest.fixture(scope="module")
def oauth_process() -> Iterator[HTTPServer]:
    with HTTPServer(
        module=OAUTH_MODULE, extra_args=("--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET)
    ) as process:
        yield process


@pytest.fixture
def oauth_server(oauth_process: HTTPServer) -> Iterator[OAuthServer]:
    server = OAuthServer(oauth_process)
    yield server
    server.control("refuse")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TokenStore:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    return TokenStore()


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the command opened "in the browser", which follows each redirect back."""
    opened: list[str] = []

    def open_url(url: str, *args: Any, **kwargs: Any) -> bool:
        opened.append(url)
        follow_redirect(url)
        return True

    monkeypatch.setattr("webbrowser.open", open_url)
    return opened


def write_config(folder: Path, oauth_server: OAuthServer, **entry: Any) -> Path:
    path = folder / "mcp.json"
    servers = {NS: {"url": oauth_server.url, **entry}, "local": stdio_server()}
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}}))
    return path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def auth_line(output: str) -> str:
    [line] = [line.strip() for line in output.splitlines() if line.strip().startswith(f"{NS}: auth:")]
    return line


def test_login_opens_the_url_stores_the_tokens_and_check_shows_ok(
    oauth_server: OAuthServer, store: TokenStore, browser: list[str], tmp_path: Path
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    status, out = run("check", "--config", config)
    assert status == 0, out
    assert auth_line(out) == f"{NS}: auth: needs login (run `mcp-actors login {NS}`)"
    assert "local: auth" not in out  # a stdio server has no login

    status, out = run("login", NS, "--config", config)
    assert status == 0, out
    assert len(browser) == 1 and browser[0].startswith(f"{oauth_server.base}/authorize?")
    assert f"Open this URL to log in to {NS}:\n  {browser[0]}\n" in out
    assert out.endswith(f"{NS}: auth: ok\n")
    login = store.load(oauth_server.url)
    assert login.tokens is not None and login.tokens.refresh_token
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert login.tokens.access_token not in out

    status, out = run("check", "--config", config)
    assert (status, auth_line(out)) == (0, f"{NS}: auth: ok")
    status, out = run("call", f"{NS}/whoami", "--config", config)
    assert status == 0, out
    assert login.client_info is not None and out == f"{login.client_info.client_id}\n"


def test_status_lists_each_servers_auth(
    oauth_server: OAuthServer, store: TokenStore, browser: list[str], tmp_path: Path
) -> None:
    config = write_config(tmp_path, oauth_server)
    status, out = run("status", "--config", str(config))
    assert status == 0, out
    source, header, _rule, *rows = out.splitlines()
    assert source == str(config)
    assert header.split() == ["server", "transport", "auth", "boundary"]
    # Columns are two spaces apart or more; "needs login" has one.
    assert [[c.strip() for c in row.split("  ") if c.strip()] for row in rows] == [
        [NS, "streamable-http", "needs login", "-"],
        ["local", "stdio", "-", "none"],
    ]
    assert run("login", NS, "--config", str(config))[0] == 0
    rows = run("status", "--config", str(config))[1].splitlines()[3:]
    assert rows[0].split() == [NS, "streamable-http", "ok", "-"]


def test_a_server_with_its_own_authorization_header_shows_header(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path
) -> None:
    config = str(write_config(tmp_path, oauth_server, headers={"Authorization": "Bearer from-config"}))
    status, out = run("check", "--config", config)
    assert (status, auth_line(out)) == (0, f"{NS}: auth: header")
    assert "from-config" not in out


def test_a_server_with_static_headers_of_its_own_does_not_need_a_login(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path
) -> None:
    """An API key in a header of its own (no ``Authorization``, no ``oauth``): the entry sends its
    credentials, and ``check`` says so rather than asking for a login the server never wants."""
    config = str(write_config(tmp_path, oauth_server, headers={"X-API-Key": "static-key-from-config"}))
    status, out = run("check", "--config", config)
    assert (status, auth_line(out)) == (0, f"{NS}: auth: header")
    assert "login" not in out and "static-key-from-config" not in out


def test_logout_forgets_the_login(
    oauth_server: OAuthServer, store: TokenStore, browser: list[str], tmp_path: Path
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    assert run("login", NS, "--config", config)[0] == 0
    assert run("logout", NS, "--config", config) == (0, f"{NS}: logged out\n")
    assert store.load(oauth_server.url).tokens is None
    assert auth_line(run("check", "--config", config)[1]).startswith(f"{NS}: auth: needs login")
    assert run("logout", NS, "--config", config) == (0, f"{NS}: no login was stored\n")


def test_check_says_expired_for_an_expired_token_that_cannot_be_refreshed(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    token = OAuthToken(access_token="stale-access-token", token_type="Bearer", expires_in=60)
    store.save(oauth_server.url, tokens=token, now=time.time() - 120)
    status, out = run("check", "--config", config)
    assert (status, auth_line(out)) == (0, f"{NS}: auth: expired (run `mcp-actors login {NS}`)")
    assert "stale-access-token" not in out


def test_check_reports_an_unreadable_token_store(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json")
    status, out = run("check", "--config", config)
    assert status == 0, out
    assert auth_line(out).startswith(f"{NS}: auth: needs login")
    assert f"warning: the token store {store.path} cannot be read" in out


def test_a_refused_login_is_an_auth_error_on_stderr(
    oauth_server: OAuthServer,
    store: TokenStore,
    browser: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    oauth_server.control("refuse", status="401")
    status, _ = run("login", NS, "--config", config)
    assert status == 1
    assert len(browser) == 1  # one login, then the refusal: no loop
    err = capsys.readouterr().err
    assert err == (
        f"error: auth: {NS} refused the credentials (HTTP 401): invalid_token: refused by the test\n"
    )


def test_a_client_credentials_server_logs_in_without_anyone(
    oauth_server: OAuthServer, store: TokenStore, browser: list[str], tmp_path: Path
) -> None:
    oauth = {
        "grant": "client_credentials",
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "issuer": oauth_server.base,
    }
    config = str(write_config(tmp_path, oauth_server, oauth=oauth))
    status, out = run("login", NS, "--config", config)
    assert (status, out) == (0, f"{NS}: auth: ok (not asked: no login was needed)\n")
    assert browser == []
    assert CLIENT_SECRET not in out
    assert auth_line(run("check", "--config", config)[1]) == f"{NS}: auth: ok"


def test_login_names_what_is_wrong_with_the_server(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(tmp_path, oauth_server))
    assert run("login", "nope", "--config", config) == (1, "")
    assert capsys.readouterr().err == "error: not_found: no server 'nope' (servers: remote, local)\n"
    assert run("logout", "local", "--config", config) == (1, "")
    assert "server 'local' runs locally (stdio): it has no login" in capsys.readouterr().err


def test_a_per_user_server_shows_the_callers_token_not_a_login(
    oauth_server: OAuthServer, store: TokenStore, tmp_path: Path
) -> None:
    entry = {"affinity": "user", "headers": {"Authorization": "Bearer ${caller:token}"}}
    status, out = run("check", "--config", str(write_config(tmp_path, oauth_server, **entry)))
    assert (status, auth_line(out)) == (0, f"{NS}: auth: per caller"), out
    assert "mcp-actors login" not in out
