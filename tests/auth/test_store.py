"""The token store: where it lives, its permissions, round trips, corrupt files, and concurrent writers."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from pathlib import Path

import anyio
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

from actors.mcp.auth import STATE_DIR_ENV, StoredLogin, TokenStore, state_dir

URL = "https://mcp.example.com/mcp"
OTHER = "https://other.example.com/mcp"


def token(access: str = "at-1", refresh: str | None = "rt-1", expires_in: int | None = 3600) -> OAuthToken:
    return OAuthToken(access_token=access, refresh_token=refresh, expires_in=expires_in, scope="mcp")


def client() -> OAuthClientInformationFull:
    return OAuthClientInformationFull.model_validate(
        {
            "client_id": "client-1",
            "client_secret": "client-secret-1",
            "redirect_uris": ["http://127.0.0.1:4567/callback"],
            "token_endpoint_auth_method": "client_secret_post",
            "issuer": "https://auth.example.com",
        }
    )


def metadata() -> OAuthMetadata:
    return OAuthMetadata.model_validate(
        {
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
        }
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- where the store lives ----------------------------------------------------------------


def test_state_dir_follows_the_override_then_xdg_then_the_home_default() -> None:
    assert state_dir({STATE_DIR_ENV: "/x/state", "XDG_STATE_HOME": "/xdg"}) == Path("/x/state")
    assert state_dir({"XDG_STATE_HOME": "/xdg"}) == Path("/xdg/mcp-actors")
    assert state_dir({}) == Path("~/.local/state/mcp-actors").expanduser()


def test_the_default_store_is_tokens_json_in_the_state_dir(store: TokenStore) -> None:
    assert store.path == Path(os.environ[STATE_DIR_ENV]) / "tokens.json"


def test_nothing_is_created_until_something_is_stored(store: TokenStore) -> None:
    assert store.load(URL) == StoredLogin()
    assert not store.path.parent.exists()


# ---- permissions ----------------------------------------------------------------------------


def test_the_file_is_0600_and_its_folder_0700_whatever_the_umask(store: TokenStore) -> None:
    old = os.umask(0o022)
    try:
        store.save(URL, tokens=token())
    finally:
        os.umask(old)
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    assert mode(store.path.with_name("tokens.json.lock")) == 0o600


def test_a_rewrite_keeps_0600_and_leaves_no_temporary_file(store: TokenStore) -> None:
    store.save(URL, tokens=token())
    store.path.chmod(0o644)  # loosened by hand: the next write is a new file, 0600 again
    store.save(URL, tokens=token("at-2"))
    assert mode(store.path) == 0o600
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


# ---- round trips --------------------------------------------------------------------------------


def test_tokens_client_and_metadata_round_trip(store: TokenStore) -> None:
    resource = ProtectedResourceMetadata.model_validate(
        {"resource": URL, "authorization_servers": ["https://auth.example.com"]}
    )
    store.save(
        URL,
        tokens=token(),
        client_info=client(),
        oauth_metadata=metadata(),
        resource_metadata=resource,
        now=1000.0,
    )
    login = TokenStore(store.path).load(URL)  # a fresh reader: from the file, not memory
    assert login.tokens == token()
    assert login.expires_at == 4600.0
    assert login.client_info == client()
    assert login.oauth_metadata == metadata()
    assert login.resource_metadata == resource
    assert TokenStore(store.path).load(OTHER) == StoredLogin()


def test_servers_are_kept_apart_by_url(store: TokenStore) -> None:
    store.save(URL, tokens=token("at-a"))
    store.save(OTHER, tokens=token("at-b"))
    assert store.load(URL).tokens == token("at-a")
    assert store.load(OTHER).tokens == token("at-b")
    assert store.urls() == sorted([URL, OTHER])
    assert store.forget(URL) is True
    assert store.forget(URL) is False
    assert store.urls() == [OTHER]


def test_a_save_keeps_what_it_is_not_given(store: TokenStore) -> None:
    store.save(URL, client_info=client())
    store.save(URL, tokens=token())
    login = store.load(URL)
    assert (login.client_info, login.tokens) == (client(), token())


def test_forgetting_tokens_keeps_the_registration(store: TokenStore) -> None:
    store.save(URL, tokens=token(), client_info=client())
    assert store.forget_tokens(URL) is True
    login = store.load(URL)
    assert login.tokens is None and login.expires_at is None
    assert login.client_info == client()


def test_a_refused_refresh_token_is_not_forgotten_once_another_process_renewed_it(store: TokenStore) -> None:
    store.save(URL, tokens=token("at-2", "rt-2"))  # another process refreshed meanwhile
    assert store.forget_tokens(URL, refresh_token="rt-1") is False
    assert store.load(URL).tokens == token("at-2", "rt-2")
    assert store.forget_tokens(URL, refresh_token="rt-2") is True


def test_status_says_ok_expired_or_needs_login() -> None:
    assert StoredLogin().status() == "needs login"
    assert StoredLogin(tokens=token(), expires_at=2000.0).status(now=1000.0) == "ok"
    # Expired, but a refresh token renews it without asking anyone.
    assert StoredLogin(tokens=token(), expires_at=500.0).status(now=1000.0) == "ok"
    assert StoredLogin(tokens=token(refresh=None), expires_at=500.0).status(now=1000.0) == "expired"
    assert StoredLogin(tokens=token(expires_in=None)).status() == "ok"


def test_the_sdk_sees_the_time_left_not_the_lifetime_it_was_issued_with() -> None:
    login = StoredLogin(tokens=token(expires_in=3600), expires_at=1600.0)
    remaining = login.remaining_tokens(now=1000.0)
    assert remaining is not None and remaining.expires_in == 600
    expired = login.remaining_tokens(now=2000.0)
    assert expired is not None and expired.expires_in == 0


def test_granted_scopes_clear_a_wanted_step_up(store: TokenStore) -> None:
    store.save(URL, tokens=token(), wanted_scope="mcp extra")
    assert store.load(URL).wanted_scope == "mcp extra"
    store.save(URL, tokens=OAuthToken(access_token="at-2", scope="mcp"))
    assert store.load(URL).wanted_scope == "mcp extra"
    store.save(URL, tokens=OAuthToken(access_token="at-3", scope="mcp extra"))
    assert store.load(URL).wanted_scope is None


# ---- the SDK's TokenStorage -------------------------------------------------------------------


def test_the_sdk_storage_reads_once_and_writes_through(store: TokenStore) -> None:
    store.save(URL, tokens=token(), client_info=client())
    storage = store.for_server(URL)

    async def use() -> None:
        assert await storage.get_tokens() is not None
        assert await storage.get_client_info() == client()
        await storage.set_tokens(token("at-new", "rt-new"))

    anyio.run(use)
    assert store.load(URL).tokens == token("at-new", "rt-new")


def test_the_sdk_storage_reads_and_writes_off_the_calling_thread(store: TokenStore) -> None:
    store.save(URL, tokens=token())
    threads: list[str] = []
    original_load, original_save = TokenStore.load, TokenStore.save

    def load(self: TokenStore, url: str) -> StoredLogin:
        threads.append(threading.current_thread().name)
        return original_load(self, url)

    def save(self: TokenStore, url: str, **parts: object) -> StoredLogin:
        threads.append(threading.current_thread().name)
        return original_save(self, url, **parts)  # type: ignore[arg-type]

    storage = store.for_server(URL)

    async def use() -> str:
        await storage.get_tokens()
        await storage.set_client_info(client())
        return threading.current_thread().name

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TokenStore, "load", load)
        patch.setattr(TokenStore, "save", save)
        caller = anyio.run(use)
    assert len(threads) == 2
    assert caller not in threads


# ---- a corrupt file is reported, not crashed on ---------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"servers": []}', "\x00\x01garbage"],
    ids=["syntax", "list", "shape", "binary"],
)
def test_a_corrupt_file_reads_as_empty_and_says_why(
    store: TokenStore, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="actors.mcp.auth.store"):
        assert store.load(URL) == StoredLogin()
    assert store.problem is not None and str(store.path) in store.problem
    assert any(str(store.path) in r.getMessage() for r in caplog.records)


def test_a_write_sets_a_corrupt_file_aside_and_starts_afresh(store: TokenStore) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json")
    store.save(URL, tokens=token())
    assert store.load(URL).tokens == token()
    assert store.problem is None
    assert store.path.with_name("tokens.json.corrupt").read_text() == "{not json"


def test_an_unusable_entry_part_is_left_out_without_showing_its_values(
    store: TokenStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.save(URL, tokens=token(), client_info=client())
    data = json.loads(store.path.read_text())
    data["servers"][URL]["tokens"] = {"access_token": 5, "refresh_token": "rt-secret-value"}
    data["servers"][OTHER] = "not an object"
    store.path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="actors.mcp.auth.store"):
        login = store.load(URL)
        assert store.load(OTHER) == StoredLogin()
    assert login.tokens is None
    assert login.client_info == client()
    assert "rt-secret-value" not in caplog.text
    assert "tokens" in caplog.text


# ---- concurrent writers -----------------------------------------------------------------------------


def test_writers_in_threads_and_stores_lose_no_update(store: TokenStore) -> None:
    # Two store objects on one file stand for two processes: the flock serialises them.
    stores = [store, TokenStore(store.path)]
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            for round_ in range(10):
                stores[index % 2].save(
                    f"https://s{index}.example.com/mcp", tokens=token(f"at-{index}-{round_}")
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,), name=f"writer-{i}") for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert len(store.urls()) == 6
    for index in range(6):
        assert store.load(f"https://s{index}.example.com/mcp").tokens == token(f"at-{index}-9")
