"""The loopback redirect of a login: a tiny HTTP server on a worker thread that receives the code.

::

    with LoopbackRedirect(open_url=webbrowser.open, timeout=300) as redirect:
        provider = oauth_provider(config, store, interactive=True,
                                  redirect_handler=redirect.redirect_handler,
                                  callback_handler=redirect.callback_handler)

`redirect_handler` reads the redirect URI from the authorization URL, starts listening there
(``127.0.0.1`` or ``localhost`` only) and hands the URL to ``open_url``; `callback_handler`
waits, up to ``timeout``, for the browser to come back with ``code`` and ``state`` (or an
``error``). The listener serves one redirect and answers with a page that says the window may
be closed. It never logs the query: it carries the code.
"""

from __future__ import annotations

import html
import http.server
import logging
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio.to_thread
from mcp.shared.auth import AuthorizationCodeResult

from actors.mcp.auth.errors import AuthError

__all__ = ["LoopbackRedirect"]

logger = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost")
_POLL = 0.1
_JOIN_TIMEOUT = 5.0
_REQUEST_TIMEOUT = 10.0

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>mcp-actors</title></head>
<body style="font-family: sans-serif"><h1>{title}</h1><p>{text}</p></body></html>
"""


class LoopbackRedirect:
    """Receives one authorization redirect on the loopback; leaving it as a context manager stops it."""

    def __init__(
        self, *, open_url: Callable[[str], object] | None = None, timeout: float = 300.0, server: str = ""
    ) -> None:
        """``open_url`` is called (on a worker thread) with the authorization URL; ``server``
        names the server in errors."""
        self.open_url = open_url
        self.timeout = timeout
        self.server = server
        self.authorization_url: str | None = None
        """The URL the user was sent to, once `redirect_handler` ran."""
        self._done = threading.Event()
        self._query: dict[str, str] | None = None
        self._httpd: http.server.HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the SDK's handlers -------------------------------------------------------------------

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        # A second round (a scope step-up in the same login) waits for its own redirect.
        self._query = None
        self._done.clear()
        await anyio.to_thread.run_sync(self.listen, authorization_url)
        if self.open_url is not None:
            await anyio.to_thread.run_sync(self.open_url, authorization_url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        query = await anyio.to_thread.run_sync(self.wait, abandon_on_cancel=True)
        if "error" in query:
            description = query.get("error_description", "")
            because = f" ({description[:200]})" if description else ""
            raise AuthError(self._name, f"{self._name}: the login was refused: {query['error']}{because}")
        if not query.get("code"):
            raise AuthError(self._name, f"{self._name}: the redirect came back without a code")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    # -- the listener -------------------------------------------------------------------------

    def listen(self, authorization_url: str) -> None:
        """Start listening where the authorization URL's ``redirect_uri`` points (blocking: a socket bind)."""
        if self._httpd is not None:
            return
        redirect = parse_qs(urlparse(authorization_url).query).get("redirect_uri", [""])[0]
        target = urlparse(redirect)
        if target.scheme != "http" or target.hostname not in _LOOPBACK or not target.port:
            raise AuthError(self._name, f"{self._name}: the redirect URI {redirect!r} is not on the loopback")
        path = target.path or "/"
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = _REQUEST_TIMEOUT  # a client that connects and says nothing must not hold the listener

            def do_GET(self) -> None:
                url = urlparse(self.path)
                if url.path != path:
                    self.send_error(404)
                    return
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                failed = "error" in query or not query.get("code")
                title = "Login failed" if failed else "Logged in"
                text = (
                    html.escape(query.get("error_description") or query.get("error") or "no code came back")
                    if failed
                    else "You can close this window and return to the terminal."
                )
                body = _PAGE.format(title=title, text=text).encode()
                self.send_response(400 if failed else 200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                owner._received(query)

            def log_message(self, format: str, *args: Any) -> None:
                # The request line carries the code: never log it.
                logger.debug("login redirect: %s", self.command)

        try:
            httpd = http.server.HTTPServer((target.hostname or "127.0.0.1", target.port), Handler)
        except OSError as exc:
            raise AuthError(
                self._name,
                f"{self._name}: cannot listen for the login's redirect on port {target.port}: "
                f"{exc.strerror or exc}",
            ) from exc
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": _POLL},
            name="mcp-actors-login-redirect",
            daemon=True,
        )
        self._thread.start()
        logger.debug("listening for the login redirect on %s:%s", target.hostname, target.port)

    def wait(self) -> dict[str, str]:
        """The redirect's query parameters, once it came (blocking, up to ``timeout``)."""
        if not self._done.wait(self.timeout):
            raise AuthError(
                self._name,
                f"{self._name}: no login came back within {self.timeout:.0f} s; run the login again",
            )
        if self._query is None:
            raise AuthError(self._name, f"{self._name}: the login was abandoned")
        return self._query

    def close(self) -> None:
        """Stop listening, and wake a `wait` that is still waiting. Idempotent."""
        self._done.set()
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(_JOIN_TIMEOUT)

    def _received(self, query: dict[str, str]) -> None:
        if not self._done.is_set():
            self._query = query
            self._done.set()

    @property
    def _name(self) -> str:
        return self.server or "the server"

    def __enter__(self) -> LoopbackRedirect:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
