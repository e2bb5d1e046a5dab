"""A per-user server's entry (issue 23, item 5): what the config accepts and refuses at load
time (`actors.mcp.per_user`), and how an entry is filled in for one caller
(`actors.gateway.access.claims`): pure functions, no process."""

from __future__ import annotations

from typing import Any

import pytest

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.gateway.access.claims import Unfilled, copy_of, needs_token
from actors.gateway.access.per_user import template_of, without_per_user
from actors.gateway.access.principal import LOCAL, STATIC, AuthMode, Principal
from actors.mcp.config import ServerConfig

REMOTE = "https://backend.example.test/mcp"
EXCHANGE = {"audience": "urn:backend", "clientId": "gateway", "clientSecret": "${EXCHANGE_SECRET}"}

ALICE = Principal(
    "alice",
    mode=AuthMode.OAUTH,
    issuer="https://issuer.example.test",
    groups=("dev", "ops"),
    claims={
        "sub": "alice",
        "login": "alice-gh",
        "groups": ["dev", "ops"],
        "level": 3,
        "realm_access": {"roles": ["admin", "user"]},
        "bad": "two\nlines",
    },
    credential="alices-token",
)


def load(servers: dict[str, Any], **top: Any) -> RuntimeConfig:
    return load_config({"mcpServers": servers, **top}, environ={"EXCHANGE_SECRET": "s3cret", "REGION": "eu"})


def problems(servers: dict[str, Any]) -> list[tuple[str | None, str | None, str]]:
    with pytest.raises(ConfigError) as caught:
        load(servers)
    return [(p.server, p.key, p.message) for p in caught.value.problems]


def stdio(**keys: Any) -> dict[str, Any]:
    return {"command": "per-user-server", "affinity": "user", **keys}


# ---- the config ----------------------------------------------------------------------------------


def test_placeholders_are_kept_for_the_gateway_beside_the_environments_own() -> None:
    config = load({"me": stdio(env={"USER_AT": "${claim:login}@${REGION}", "TEAM": "${claim:groups:-none}"})})
    server = config.servers["me"]
    # ${REGION} is the gateway's environment, expanded once; the claims are the caller's, later.
    assert server.env == {"USER_AT": "${claim:login}@eu", "TEAM": "${claim:groups:-none}"}
    assert config.cluster.per_user("me")


def test_token_exchange_keys_keep_their_secret_out_of_sight() -> None:
    config = load(
        {"api": {"url": REMOTE, "affinity": "user", "tokenExchange": {**EXCHANGE, "scope": ["a", "b"]}}}
    )
    keys = config.gateway.servers["api"].token_exchange
    assert keys is not None
    assert keys.client_secret.get_secret_value() == "s3cret"
    assert keys.scope == "a b"
    assert "s3cret" not in repr(config) and "s3cret" not in str(keys)
    assert "tokenExchange" not in config.servers["api"].model_dump(by_alias=True)  # the gateway's key only


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ({"command": "x", "env": {"U": "${claim:login}"}}, "env.U", '"affinity": "user"'),
        ({"url": REMOTE, "tokenExchange": EXCHANGE}, "tokenExchange", '"affinity": "user"'),
        (stdio(env={"T": "${caller:token}"}), "env.T", "headers only"),
        (stdio(args=["--token", "${caller:token}"]), "args[1]", "headers only"),
        (stdio(env={"X": "${caller:name}"}), "env.X", "one of key, token"),
        (
            {"url": "https://h.test/${claim:sub}/mcp", "affinity": "user"},
            "url",
            "only in env, args, headers, cwd",
        ),
        (stdio(tokenExchange=EXCHANGE), "tokenExchange", "remote servers"),
        (stdio(lazyStart=False), "affinity", "needs lazyStart true"),
    ],
)
def test_what_a_per_user_entry_may_not_hold(entry: dict[str, Any], key: str, words: str) -> None:
    found = problems({"s": entry})
    assert any(server == "s" and where == key and words in message for server, where, message in found), found


def test_a_token_exchange_needs_its_audience_and_client() -> None:
    found = problems({"api": {"url": REMOTE, "affinity": "user", "tokenExchange": {"audience": "urn:b"}}})
    keys = {key for _, key, _ in found}
    assert {"tokenExchange.clientId", "tokenExchange.clientSecret"} <= keys, found


def test_the_runtime_never_registers_a_per_user_server_itself() -> None:
    config = load({"me": stdio(), "fx": {"command": "fixture"}})
    assert set(without_per_user(config).servers) == {"fx"}
    assert template_of("me@alice") == "me" and template_of("me") is None


# ---- an entry filled in for a caller -------------------------------------------------------------


def template(**keys: Any) -> ServerConfig:
    return load({"me": stdio(**keys)}).servers["me"]


def test_claims_fill_the_environment_args_and_working_folder() -> None:
    entry = template(
        env={
            "LOGIN": "${claim:login}",
            "GROUPS": "${claim:groups}",
            "LEVEL": "${claim:level}",
            "ROLES": "${claim:realm_access.roles}",
            "NICK": "${claim:nickname:-anonymous}",
            "KEY": "${caller:key}",
        },
        args=["--user", "${claim:login}"],
        cwd="/srv/${claim:login}",
    )
    copy = copy_of(entry, ALICE, "me@alice")
    assert copy.name == "me@alice"
    assert copy.env == {
        "LOGIN": "alice-gh",
        "GROUPS": "dev,ops",
        "LEVEL": "3",
        "ROLES": "admin,user",
        "NICK": "anonymous",
        "KEY": ALICE.key,
    }
    assert copy.args == ("--user", "alice-gh")
    assert copy.cwd == "/srv/alice-gh"
    assert entry.env["LOGIN"] == "${claim:login}"  # the entry itself is untouched


def test_a_claim_the_token_lacks_refuses_a_signed_in_caller_but_not_the_local_user() -> None:
    entry = template(env={"LOGIN": "${claim:nickname}"})
    with pytest.raises(Unfilled, match="'nickname'"):
        copy_of(entry, ALICE, "me@alice")
    # Without sign-in there are no claims: the one local user (or the static token) gets an empty value.
    assert copy_of(entry, LOCAL, "me@local").env == {"LOGIN": ""}
    assert copy_of(entry, STATIC, "me@static").env == {"LOGIN": ""}


def test_a_value_with_a_line_break_is_refused() -> None:
    with pytest.raises(Unfilled, match="line break"):
        copy_of(template(env={"B": "${claim:bad}"}), ALICE, "me@alice")


def test_the_callers_token_goes_only_where_a_header_names_it() -> None:
    entry = load(
        {
            "api": {
                "url": REMOTE,
                "affinity": "user",
                "headers": {"Authorization": "Bearer ${caller:token}", "X-Team": "t"},
            }
        }
    ).servers["api"]
    assert needs_token(entry, None)
    assert copy_of(entry, ALICE, "api@alice", "alices-token").headers == {
        "Authorization": "Bearer alices-token",
        "X-Team": "t",
    }
    with pytest.raises(Unfilled, match="access token"):
        copy_of(entry, ALICE, "api@alice", None)


def test_an_exchanged_token_goes_as_the_bearer_token_when_no_header_names_it() -> None:
    config = load(
        {
            "api": {
                "url": REMOTE,
                "affinity": "user",
                "headers": {"authorization": "Bearer old"},
                "tokenExchange": EXCHANGE,
            }
        }
    )
    entry = config.servers["api"]
    assert needs_token(entry, config.gateway.servers["api"].token_exchange)
    assert copy_of(entry, ALICE, "api@alice", "exchanged").headers == {"Authorization": "Bearer exchanged"}
    assert not needs_token(load({"fx": {"command": "x"}}).servers["fx"], None)
