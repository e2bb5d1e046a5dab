"""The failures of a remote server's login, all classified `ErrorType.AUTH`."""

from __future__ import annotations

import re

import httpx2
from mcp.client.auth import OAuthFlowError

from actors.tools.errors import ErrorType, ToolError

__all__ = ["AuthError", "AuthRefused", "LoginRequired", "auth_failure", "refusal_reason"]

# A server's WWW-Authenticate text is shown to users: enough to say why, never a wall of text.
_MAX_REASON = 300

_PARAMETER = re.compile(r'([A-Za-z_]+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


class AuthError(ToolError, ConnectionError):
    """A remote server needs a login, or refused the credentials it was given.

    A `ToolError` of type ``auth``: ``details`` is the whole message, naming the server. Also a
    ``ConnectionError``: the session cannot go on, and code that knows nothing of logins treats
    it as the lost connection it is (a transport's ``connect`` raises it as it is).
    """

    def __init__(self, server: str, details: str) -> None:
        super().__init__(server, ErrorType.AUTH, details)
        self.server = server

    def __str__(self) -> str:
        return f"{ErrorType.AUTH.label}: {self.details}"

    def __reduce__(self) -> tuple[type[AuthError], tuple[str, str]]:  # type: ignore[override]
        return (AuthError, (self.server, self.details))


class LoginRequired(AuthError):
    """No usable login for the server, and nobody to ask: the user must run ``mcp-actors login NS``.

    Raised at the server's first refusal, before any browser would be needed, so an embedded
    runtime never waits on one.
    """

    def __init__(self, server: str, why: str = "") -> None:
        self.why = why
        lead = f"{server}: {why}" if why else f"{server} needs a login"
        super().__init__(server, f"{lead}: run `mcp-actors login {server}`")

    def __reduce__(self) -> tuple[type[LoginRequired], tuple[str, str]]:  # type: ignore[override]
        return (LoginRequired, (self.server, self.why))


class AuthRefused(AuthError):
    """The server answered HTTP 401 or 403 to the credentials it was given, after any refresh or login."""

    def __init__(self, server: str, status: int, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        what = "refused the credentials" if status == 401 else "forbade the request"
        because = f": {reason}" if reason else ""
        super().__init__(server, f"{server} {what} (HTTP {status}){because}")

    def __reduce__(self) -> tuple[type[AuthRefused], tuple[str, int, str]]:  # type: ignore[override]
        return (AuthRefused, (self.server, self.status, self.reason))


def refusal_reason(response: httpx2.Response) -> str:
    """Why the server refused, from its ``WWW-Authenticate`` header: ``error: error_description``."""
    header = response.headers.get("WWW-Authenticate", "")
    fields = {
        m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _PARAMETER.finditer(header)
    }
    error, description = fields.get("error", ""), fields.get("error_description", "")
    reason = f"{error}: {description}" if error and description else error or description
    if not reason and header:
        reason = header
    return reason[:_MAX_REASON]


def auth_failure(exc: BaseException, server: str = "") -> AuthError | None:
    """The `AuthError` that ``exc`` is or stands for, else None.

    The SDK's OAuth errors (discovery, registration, token exchange) and an HTTP 401 or 403
    raised as ``httpx2.HTTPStatusError`` (the SSE transport, the GET stream) count as auth
    failures; ``server`` names the server in a message made here.
    """
    if isinstance(exc, AuthError):
        return exc
    name = server or "the server"
    if isinstance(exc, OAuthFlowError):
        return AuthError(
            name, f"{name}: the OAuth login failed: {str(exc)[:_MAX_REASON] or type(exc).__name__}"
        )
    if isinstance(exc, httpx2.HTTPStatusError) and exc.response.status_code in (401, 403):
        return AuthRefused(name, exc.response.status_code, refusal_reason(exc.response))
    return None
