"""OAuth 2.1 for remote servers, on the SDK's client auth: the token store, the provider a
transport authenticates with, and the login flow of ``mcp-actors login``.

The SDK does the protocol (discovery, registration, PKCE, refresh, scope step-up); this package
does the wiring, the storage and the user's side: where tokens live (`TokenStore`), what an
embedded runtime does when a server needs a login (`LoginRequired`, at once), how a refusal is
reported (`AuthRefused`, classified ``auth``), and the loopback redirect of a login.
"""

from __future__ import annotations

from actors.mcp.auth.errors import AuthError, AuthRefused, LoginRequired, auth_failure, refusal_reason
from actors.mcp.auth.login import LoginResult, auth_status, login, logout
from actors.mcp.auth.loopback import LoopbackRedirect
from actors.mcp.auth.provider import (
    AssertionHandler,
    CallbackHandler,
    RedirectHandler,
    oauth_provider,
    redirect_uri_for,
)
from actors.mcp.auth.store import (
    STATE_DIR_ENV,
    AuthStatus,
    ServerTokenStorage,
    StoredLogin,
    TokenStore,
    state_dir,
)

__all__ = [
    "STATE_DIR_ENV",
    "AssertionHandler",
    "AuthError",
    "AuthRefused",
    "AuthStatus",
    "CallbackHandler",
    "LoginRequired",
    "LoginResult",
    "LoopbackRedirect",
    "RedirectHandler",
    "ServerTokenStorage",
    "StoredLogin",
    "TokenStore",
    "auth_failure",
    "auth_status",
    "login",
    "logout",
    "oauth_provider",
    "redirect_uri_for",
    "refusal_reason",
    "state_dir",
]
