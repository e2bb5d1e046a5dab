"""`principal_of` and `caller_meta` (`actors.gateway.access.principal`): each caller's subject,
issuer, client, groups and scopes, as the SDK's bearer middleware leaves the verified token on the
request (its `AuthenticatedUser`); the static token's one principal; a forwarded request's caller,
trusted only on a replica's request. And a reload keeps the issuer the gateway verifies with."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from actors.gateway import Gateway
from actors.gateway.access.principal import (
    FORWARDED_CALLER,
    LOCAL,
    STATIC,
    AuthMode,
    Principal,
    ReplicaAccess,
    StaticAccess,
    caller_meta,
    principal_of,
)
from actors.gateway.reload import ConfigReloader

ISSUER = "https://id.example.com"


def context(token: AccessToken | None, meta: dict[str, Any] | None = None) -> Any:
    """A request context as the SDK hands it to a handler: the Starlette request's scope, as the
    bearer middleware left it, and the request's ``_meta``."""
    scope = {"type": "http", "user": AuthenticatedUser(token) if token is not None else None}
    return SimpleNamespace(request=SimpleNamespace(scope=scope), meta=meta)


def alice_token(**more: Any) -> AccessToken:
    claims = {"iss": ISSUER, "sub": "alice", "groups": ["dev", "ops"], "scope": "mcp openid", **more}
    return AccessToken(
        token="eyJ.alice.sig",
        client_id="vscode",
        scopes=["mcp", "openid"],
        subject="alice",
        resource="https://gw.example.com/mcp",
        claims=claims,
    )


def test_an_oauth_caller_is_its_subject_with_its_issuer_client_groups_and_scopes() -> None:
    alice = principal_of(context(alice_token()))
    assert alice == Principal(
        "alice",
        AuthMode.OAUTH,
        issuer=ISSUER,
        client_id="vscode",
        groups=("dev", "ops"),
        scopes=("mcp", "openid"),
    )
    assert alice.credential == "eyJ.alice.sig"
    assert "eyJ" not in repr(alice)
    assert alice.claims["groups"] == ["dev", "ops"]
    # A digest, not the subject, where the subject is someone's at an issuer.
    assert alice.key.startswith("u") and "alice" not in alice.key
    # Groups as one space-separated string, as some issuers write them.
    assert principal_of(context(alice_token(groups="a b"))).groups == ("a", "b")


def test_without_authentication_the_caller_is_local_and_a_static_token_one_principal() -> None:
    assert principal_of(context(None)) is LOCAL
    assert principal_of(SimpleNamespace()) is LOCAL  # stdio: no HTTP request at all
    static = StaticAccess(token="s3cret", client_id="static", subject="static", scopes=[])
    assert principal_of(context(static)) is STATIC
    # A JWT cannot pass for the static token by its claims: only the verifier's type says so.
    posing = alice_token(mcp_actors_mode="static")
    assert principal_of(context(posing)).mode is AuthMode.OAUTH


def test_a_forwarded_request_names_its_caller_and_only_a_replica_is_believed() -> None:
    meta = caller_meta(context(alice_token()))
    assert set(meta) == {FORWARDED_CALLER}
    replica = ReplicaAccess(token="replica-secret", client_id="replica", subject="replica", scopes=["mcp"])
    at_owner = principal_of(context(replica, meta))
    assert at_owner == principal_of(context(alice_token()))
    assert at_owner.credential == "eyJ.alice.sig"  # the owner's per-user credentials need it
    # Forwarded on (it is not: a replica never forwards twice), it would name the same caller.
    assert caller_meta(context(replica, meta)) == meta
    # A replica's own request (a listen stream it holds at the owner) is the replica's.
    assert principal_of(context(replica)).mode is AuthMode.REPLICA
    assert principal_of(context(replica, {FORWARDED_CALLER: {"mode": "oauth", "token": 7}})).mode is (
        AuthMode.REPLICA
    )
    # A client that writes the entry itself is still itself.
    bob = AccessToken(token="eyJ.bob", client_id="cli", scopes=["mcp"], subject="bob", claims={"iss": ISSUER})
    assert principal_of(context(bob, meta)).subject == "bob"
    # The static token's caller goes across as the static principal; nobody's without a token.
    static = StaticAccess(token="s3cret", client_id="static", subject="static", scopes=[])
    assert principal_of(context(replica, caller_meta(context(static)))) is STATIC
    assert caller_meta(context(None)) == {}


def test_a_reload_keeps_the_issuer_the_gateway_started_with(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    section = {"issuer": "https://id.example.com", "resource": "https://gw.example.com/mcp"}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}, "access": {"auth": section}}), "utf-8")
    with Gateway.start(path) as gateway:
        moved = {**section, "issuer": "https://elsewhere.example.com", "scopes": ["mcp"]}
        path.write_text(json.dumps({"mcpServers": {}, "access": {"auth": moved}}), "utf-8")
        assert ConfigReloader(gateway, path).reload().ok
        assert gateway.config.access.auth is not None
        assert gateway.config.access.auth.issuer == "https://id.example.com"
        assert "access.auth (the token issuer) changes only when the gateway restarts" in caplog.text
