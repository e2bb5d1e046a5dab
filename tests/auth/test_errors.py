"""The ``auth`` error type, the auth exceptions, and how failures are classified."""

from __future__ import annotations

import pickle

import httpx2
import pytest
from mcp.client.auth import OAuthRegistrationError, OAuthTokenError

from actors.mcp.adapter import classify
from actors.mcp.auth import AuthError, AuthRefused, LoginRequired, auth_failure, refusal_reason
from actors.tools import ErrorType, ToolError, ToolResult, error_label


def refused(status: int, header: str | None) -> httpx2.Response:
    headers = {"WWW-Authenticate": header} if header is not None else {}
    return httpx2.Response(status, headers=headers, request=httpx2.Request("POST", "https://x.example/mcp"))


def test_auth_is_an_error_type_labelled_auth_error() -> None:
    assert ErrorType.AUTH == "auth"
    assert ErrorType.AUTH.label == "auth error"
    assert error_label("auth") == "auth error"
    result = ToolResult.fail(ErrorType.AUTH, "gh needs a login")
    assert result.error_type == "auth"
    assert result.error == "auth error: gh needs a login"


def test_login_required_says_which_command_to_run() -> None:
    exc = LoginRequired("gh")
    assert isinstance(exc, ToolError) and exc.error_type == "auth"
    assert isinstance(exc, ConnectionError)  # what a transport's connect raises
    assert str(exc) == "auth error: gh needs a login: run `mcp-actors login gh`"
    assert classify(exc) == (ErrorType.AUTH, "auth error: gh needs a login: run `mcp-actors login gh`")
    why = LoginRequired("gh", "the stored login could not be renewed")
    assert str(why) == "auth error: gh: the stored login could not be renewed: run `mcp-actors login gh`"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (
            'Bearer error="invalid_token", error_description="The access token expired"',
            "invalid_token: The access token expired",
        ),
        ('Bearer realm="api", error="insufficient_scope", scope="repo"', "insufficient_scope"),
        (
            'Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource"',
            'Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource"',
        ),
        ("Bearer error=invalid_token", "invalid_token"),
        (None, ""),
    ],
)
def test_the_refusal_reason_comes_from_www_authenticate(header: str | None, reason: str) -> None:
    assert refusal_reason(refused(401, header)) == reason


def test_a_long_reason_is_cut() -> None:
    assert len(refusal_reason(refused(401, f'Bearer error_description="{"x" * 5000}"'))) == 300


def transported(exc: BaseException) -> BaseException:
    """What the transport raises for ``exc``: its `AuthError` when it is one (the transport
    converts the SDK's errors, so that classifying needs no SDK import)."""
    return auth_failure(exc) or exc


def test_an_http_401_or_403_raised_by_a_transport_is_auth_with_the_reason() -> None:
    response = refused(401, 'Bearer error="invalid_token", error_description="revoked"')
    exc = httpx2.HTTPStatusError("401 Unauthorized", request=response.request, response=response)
    assert classify(transported(exc)) == (
        ErrorType.AUTH,
        "auth error: the server refused the credentials (HTTP 401): invalid_token: revoked",
    )
    failure = auth_failure(exc, "gh")
    assert isinstance(failure, AuthRefused) and failure.status == 401 and failure.server == "gh"
    forbidden = refused(403, None)
    exc403 = httpx2.HTTPStatusError("403", request=forbidden.request, response=forbidden)
    assert classify(transported(exc403)) == (
        ErrorType.AUTH,
        "auth error: the server forbade the request (HTTP 403)",
    )
    other = refused(500, None)
    assert auth_failure(httpx2.HTTPStatusError("500", request=other.request, response=other)) is None


def test_the_sdks_oauth_errors_are_auth() -> None:
    assert classify(transported(OAuthTokenError("Token exchange failed (400): invalid_grant"))) == (
        ErrorType.AUTH,
        "auth error: the server: the OAuth login failed: Token exchange failed (400): invalid_grant",
    )
    failure = auth_failure(OAuthRegistrationError("Registration failed: 403"), "gh")
    assert (
        isinstance(failure, AuthError)
        and failure.details == "gh: the OAuth login failed: Registration failed: 403"
    )
    assert auth_failure(ValueError("no")) is None


@pytest.mark.parametrize(
    "exc",
    [
        LoginRequired("gh"),
        LoginRequired("gh", "why"),
        AuthRefused("gh", 401, "invalid_token"),
        AuthError("gh", "gh: x"),
    ],
    ids=repr,
)
def test_auth_errors_survive_pickling(exc: AuthError) -> None:
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc)
    assert (str(copy), copy.details, copy.server, copy.error_type) == (
        str(exc),
        exc.details,
        exc.server,
        "auth",
    )
