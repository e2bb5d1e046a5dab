"""The ``oauth`` key of a remote server: parsed, expanded, checked, and its secret never shown."""

from __future__ import annotations

from typing import Any

import pytest

from actors.config import load_config
from actors.mcp.config import ConfigError, OAuthConfig
from actors.mcp.redaction import Redactor

SECRET = "s3cr3t-client-value"


def server(oauth: Any, **entry: Any) -> dict[str, Any]:
    return {"mcpServers": {"gh": {"url": "https://api.example.com/mcp", **entry, "oauth": oauth}}}


def problems(config: dict[str, Any], environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(config, environ=environ or {})
    return str(caught.value)


def test_the_github_style_entry_loads_with_expanded_variables() -> None:
    config = load_config(
        server(
            {
                "clientId": "${GH_CLIENT_ID}",
                "clientSecret": "${GH_CLIENT_SECRET}",
                "scopes": ["repo", "read:org"],
            },
            type="http",
        ),
        environ={"GH_CLIENT_ID": "Iv1.abc", "GH_CLIENT_SECRET": SECRET},
    )
    assert not config.warnings
    oauth = config.servers["gh"].oauth
    assert oauth == OAuthConfig(client_id="Iv1.abc", client_secret=SECRET, scopes=("repo", "read:org"))
    assert oauth.grant == "authorization_code"


def test_every_key_is_optional_and_scopes_may_be_one_string() -> None:
    assert load_config(server({}), environ={}).servers["gh"].oauth == OAuthConfig()
    oauth = load_config(server({"scopes": "repo  read:org"}), environ={}).servers["gh"].oauth
    assert oauth is not None and oauth.scopes == ("repo", "read:org")


def test_all_keys_reach_their_fields() -> None:
    oauth = (
        load_config(
            server(
                {
                    "clientId": "c",
                    "privateKeyFile": "~/key.pem",
                    "grant": "client_credentials",
                    "issuer": "https://auth.example.com",
                    "redirectPort": 8765,
                    "clientMetadataUrl": "https://app.example.com/client.json",
                }
            ),
            environ={},
        )
        .servers["gh"]
        .oauth
    )
    assert oauth == OAuthConfig(
        client_id="c",
        private_key_file="~/key.pem",
        grant="client_credentials",
        issuer="https://auth.example.com",
        redirect_port=8765,
        client_metadata_url="https://app.example.com/client.json",
    )


def test_oauth_on_a_stdio_server_is_an_error_naming_the_server_and_key() -> None:
    text = problems({"mcpServers": {"local": {"command": "srv", "oauth": {}}}})
    assert "server 'local': key 'oauth'" in text
    assert "only for remote servers" in text


def test_oauth_is_ours_now_not_an_ignored_foreign_key() -> None:
    config = load_config(server({"clientId": "c"}), environ={})
    assert not config.warnings
    assert config.servers["gh"].oauth is not None


@pytest.mark.parametrize(
    ("oauth", "says"),
    [
        ({"grant": "client_credentials"}, "needs a 'clientId'"),
        ({"grant": "client_credentials", "clientId": "c"}, "needs a 'clientSecret' or a 'privateKeyFile'"),
        ({"grant": "identity_assertion", "clientId": "c"}, "needs 'clientSecret', 'issuer'"),
        ({"grant": "workload_identity", "clientId": "c"}, "needs a 'clientId' and a 'workloadTokenFile'"),
        (
            {"grant": "workload_identity", "workloadTokenFile": "/t"},
            "needs a 'clientId' and a 'workloadTokenFile'",
        ),
        (
            {
                "grant": "workload_identity",
                "clientId": "c",
                "workloadTokenFile": "/t",
                "clientSecret": SECRET,
            },
            "sends no secret",
        ),
        ({"workloadTokenFile": "/t"}, "only used by the workload_identity grant"),
        ({"grant": "password"}, "oauth.grant"),
        ({"clientSecret": SECRET}, "'clientSecret' needs the 'clientId'"),
        ({"privateKeyFile": "k.pem"}, "only used by the client_credentials grant"),
        ({"redirectPort": 0}, "oauth.redirectPort"),
        ({"redirectPort": 70000}, "oauth.redirectPort"),
        ({"redirectPort": True}, "must be a number, not true"),
        ({"clientMetadataUrl": "http://app.example.com/c.json"}, "must be an https URL with a path"),
        ({"clientMetadataUrl": "https://app.example.com/"}, "must be an https URL with a path"),
        ({"issuer": "auth.example.com"}, "must be an http:// or https:// URL"),
        ({"clientid": "c"}, "key 'oauth.clientid': unknown key"),
        ({"scopes": [1]}, "oauth.scopes"),
        ("yes", "key 'oauth'"),
    ],
)
def test_bad_oauth_values_name_the_server_and_the_key(oauth: Any, says: str) -> None:
    text = problems(server(oauth))
    assert "server 'gh'" in text
    assert says in text


def test_a_missing_variable_in_oauth_is_named() -> None:
    text = problems(server({"clientId": "c", "clientSecret": "${GH_SECRET}"}))
    assert "${GH_SECRET} is not set" in text


def test_the_client_secret_is_masked_in_reprs_and_errors() -> None:
    config = load_config(server({"clientId": "c", "clientSecret": SECRET}), environ={}).servers["gh"]
    assert SECRET not in repr(config)
    assert SECRET not in str(config)
    assert "client_secret='***'" in repr(config)
    text = problems(server({"clientId": 5, "clientSecret": SECRET}))
    assert SECRET not in text
    text = problems(server({"clientId": "c", "clientSecret": [SECRET]}))
    assert SECRET not in text


def test_the_redactor_of_a_config_masks_the_client_secret() -> None:
    config = load_config(server({"clientId": "c", "clientSecret": SECRET}), environ={}).servers["gh"]
    redact = Redactor.for_config(config)
    assert (
        redact(f"token exchange failed: client_secret={SECRET}") == "token exchange failed: client_secret=***"
    )
