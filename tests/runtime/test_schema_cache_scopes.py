"""The schema cache keeps a list's caching hint (SEP-2549) and honours its scope: a ``private``
list is read back only with the same credentials, a ``public`` or hint-less one by any config of
the same server; no secret is ever written. Files only: no threads, no servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import ListFreshness, ListKind, Received
from actors.mcp.state import STATE_DIR_ENV
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec

SECRET, OTHER_SECRET = "s3cr3t-value-1", "s3cr3t-value-2"
TOOLS = (ToolSpec(name="srv/echo", description="echo"),)
PUBLIC: dict[ListKind, Received] = {"tools": Received(1_700_000_000.0, ListFreshness(60_000, "public"))}
PRIVATE: dict[ListKind, Received] = {
    "tools": Received(1_700_000_000.0, ListFreshness(60_000, "public")),
    "prompts": Received(1_700_000_001.0, ListFreshness(5_000, "private")),
}


def server(secret: str = SECRET, name: str = "srv", **more: object) -> ServerConfig:
    return ServerConfig.model_validate({"name": name, "command": "srv", "env": {"TOKEN": secret}, **more})


def files(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in folder.glob("*.json")}


def test_a_public_list_is_shared_by_every_config_of_the_server(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    written = cache.save(server(), TOOLS, Catalog(), PUBLIC)
    assert written == tmp_path / f"{SchemaCache.key(server())}.json"
    loaded = cache.load(server(OTHER_SECRET, name="other"))
    assert loaded is not None
    assert [spec.name for spec in loaded.tools] == ["other/echo"]
    assert loaded.lists == PUBLIC


def test_a_private_list_is_read_back_only_with_the_same_credentials(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    cache.save(server(), TOOLS, Catalog(), PUBLIC)
    written = cache.save(server(), TOOLS, Catalog(), PRIVATE)
    assert written == tmp_path / f"{cache.context_key(server())}.json"
    # The server said private now: the shared entry went with it.
    assert list(files(tmp_path)) == [written.name]
    assert cache.load(server(OTHER_SECRET)) is None
    assert SchemaCache(tmp_path).load(server(OTHER_SECRET)) is None  # another process, too
    same = SchemaCache(tmp_path).load(server(name="again"))
    assert same is not None and same.lists == PRIVATE


def test_a_list_public_again_is_shared_again_and_its_private_entry_goes(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    cache.save(server(), TOOLS, Catalog(), PRIVATE)
    written = cache.save(server(), TOOLS, Catalog(), PUBLIC)
    assert written is not None
    assert list(files(tmp_path)) == [written.name] == [f"{SchemaCache.key(server())}.json"]
    assert cache.load(server(OTHER_SECRET)) is not None


def test_a_hint_less_list_is_shared_as_before(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    cache.save(server(), TOOLS, Catalog(), {"tools": Received(1_700_000_000.0)})
    cache.save(server(name="b"), TOOLS, Catalog())  # no times at all
    assert list(files(tmp_path)) == [f"{SchemaCache.key(server())}.json"]
    loaded = cache.load(server(OTHER_SECRET))
    assert loaded is not None and loaded.lists == {}


def test_no_secret_is_written_into_a_file_or_its_name(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    remote = ServerConfig.model_validate(
        {
            "name": "r",
            "type": "streamable-http",
            "url": "https://example.com/mcp",
            "headers": {"Authorization": f"Bearer {SECRET}"},
            "oauth": {"clientId": "app", "clientSecret": OTHER_SECRET},
        }
    )
    cache.save(server(), TOOLS, Catalog(), PRIVATE)
    cache.save(remote, TOOLS, Catalog(), PRIVATE)
    written = files(tmp_path)
    assert len(written) == 2
    for name, text in written.items():
        for secret in (SECRET, OTHER_SECRET):
            assert secret not in name and secret not in text


def test_each_credential_value_makes_its_own_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = SchemaCache(tmp_path)
    remote = {"name": "r", "type": "streamable-http", "url": "https://example.com/mcp"}
    base = ServerConfig.model_validate(remote)
    keys = {
        cache.context_key(base),
        cache.context_key(ServerConfig.model_validate({**remote, "headers": {"X-Key": "a"}})),
        cache.context_key(ServerConfig.model_validate({**remote, "headers": {"X-Key": "b"}})),
        cache.context_key(ServerConfig.model_validate({**remote, "oauth": {"clientId": "other"}})),
    }
    # Another token store is another user's logins.
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "elsewhere"))
    keys.add(cache.context_key(base))
    assert len(keys) == 5
    assert all(key.startswith(SchemaCache.key(base)) for key in keys)
    assert cache.context_key(server()) == SchemaCache(tmp_path / "x").context_key(server(name="renamed"))


def test_a_context_key_does_not_depend_on_what_else_was_keyed_first(tmp_path: Path) -> None:
    # Same credentials, another server: keyed first in one process, not in the other.
    other = ServerConfig(name="o", command="other", env={"TOKEN": SECRET})
    warm = SchemaCache(tmp_path)
    warm.context_key(other)
    assert warm.context_key(server()) == SchemaCache(tmp_path).context_key(server())
    assert warm.context_key(other) != warm.context_key(server())


def test_the_newer_of_two_entries_wins(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path)
    private = cache.save(server(), TOOLS, Catalog(), PRIVATE)
    # Later, a config with other credentials found the server's lists public.
    newer: dict[ListKind, Received] = {"tools": Received(1_800_000_000.0, ListFreshness(60_000, "public"))}
    cache.save(server(OTHER_SECRET), (ToolSpec(name="srv/newer", description=""),), Catalog(), newer)
    assert private is not None and len(files(tmp_path)) == 2
    loaded = cache.load(server())
    assert loaded is not None and [spec.name for spec in loaded.tools] == ["srv/newer"]
    # A private entry newer than the shared one is the one read.
    entry = json.loads(private.read_text())
    entry["lists"]["tools"]["receivedAt"] = 1_900_000_000.0
    private.write_text(json.dumps(entry))
    loaded = cache.load(server())
    assert loaded is not None and [spec.name for spec in loaded.tools] == ["srv/echo"]


def test_an_entry_written_before_hints_loads_as_hint_less(tmp_path: Path) -> None:
    entry = {"format": 1, "server": "srv", "tools": [{"name": "echo", "description": "e"}], "catalog": {}}
    (tmp_path / f"{SchemaCache.key(server())}.json").write_text(json.dumps(entry))
    loaded = SchemaCache(tmp_path).load(server())
    assert loaded is not None
    assert ([spec.name for spec in loaded.tools], loaded.lists) == (["srv/echo"], {})
