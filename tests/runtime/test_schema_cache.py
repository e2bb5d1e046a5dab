"""The schema cache: a server that ran once, in any process, is listed and checked without a start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from actors import Runtime
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.runtime.schema_cache import SchemaCache
from tests.conftest import child_pids, wait_until
from tests.runtime.conftest import config, stdio_server

WAIT = 30.0


def learn(cache: Path, servers: dict[str, dict[str, object]]) -> None:
    """Run each server once with ``cache``, so that it is written."""
    with Runtime.start(config(servers), schema_cache=cache) as rt:
        for ns in servers:
            assert rt.call_tool(f"{ns}/echo", {"text": "x"}, timeout=WAIT).success
        assert wait_until(lambda: len(list(cache.glob("*.json"))) == len(servers), WAIT)


def no_children() -> bool:
    return not child_pids()


def test_a_cached_server_is_listed_and_checked_without_starting(tmp_path: Path) -> None:
    cache = tmp_path / "schemas"
    learn(cache, {"fx": stdio_server()})
    with Runtime.start(config({"fx": stdio_server()}), schema_cache=cache) as rt:
        names = {spec.name for spec in rt.list_tools("fx")}
        assert {"fx/echo", "fx/add", "fx/sleep"} <= names
        refused = rt.call_tool("fx/add", {"a": "one", "b": 2}, timeout=WAIT)
        assert refused.error_type == "validation", refused
        unknown = rt.call_tool("fx/ech", {"text": "x"}, timeout=WAIT)
        assert unknown.error_type == "not_found" and "did you mean 'echo'?" in (unknown.error or "")
        status = rt.status("fx")[0]
        assert (status.state, status.pid, status.tools) == ("idle", None, len(names))
        assert no_children()
        # The first real call starts it, and it lists again.
        assert rt.call_tool("fx/echo", {"text": "now"}, timeout=WAIT).text == "now"
        assert rt.status("fx")[0].state == "running"


def test_the_cache_follows_the_server_not_the_namespace(tmp_path: Path) -> None:
    cache = tmp_path / "schemas"
    learn(cache, {"fx": stdio_server()})
    with Runtime.start(config({"other": stdio_server()}), schema_cache=cache) as rt:
        assert "other/echo" in {spec.name for spec in rt.list_tools("other")}
        assert rt.status("other")[0].state == "idle"


def test_a_different_command_line_is_a_different_server(tmp_path: Path) -> None:
    cache = tmp_path / "schemas"
    learn(cache, {"fx": stdio_server()})
    changed = stdio_server("fixture_server", "--extra-tools", "2")
    with Runtime.start(config({"fx": changed}), schema_cache=cache) as rt:
        names = {spec.name for spec in rt.list_tools("fx")}
        assert {"fx/tool_000", "fx/tool_001"} <= names  # it had to start to learn them
        assert rt.status("fx")[0].state == "running"


def test_a_corrupt_entry_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "schemas"
    learn(cache, {"fx": stdio_server()})
    for entry in cache.glob("*.json"):
        entry.write_text("{not json")
    caplog.set_level(logging.WARNING, logger="actors.runtime.schema_cache")
    with Runtime.start(config({"fx": stdio_server()}), schema_cache=cache) as rt:
        assert "fx/echo" in {spec.name for spec in rt.list_tools("fx")}
        assert rt.status("fx")[0].state == "running"
    assert any("cannot read" in record.getMessage() for record in caplog.records)


def test_the_key_ignores_secret_values_but_not_their_names() -> None:
    a = ServerConfig(name="a", command="srv", env={"TOKEN": "one"})
    b = ServerConfig(name="b", command="srv", env={"TOKEN": "two"})
    c = ServerConfig(name="c", command="srv", env={"OTHER": "one"})
    assert SchemaCache.key(a) == SchemaCache.key(b)
    assert SchemaCache.key(a) != SchemaCache.key(c)


def test_a_server_that_could_not_start_is_remembered_until_its_lists_are_saved(tmp_path: Path) -> None:
    cache = SchemaCache(tmp_path, unstartable=True)
    server = ServerConfig(name="dead", command="srv")
    assert cache.load(server) is None
    cache.note_unstartable(server)
    assert cache.unstartable(server) and cache.load(server) is None  # no lists known
    assert not SchemaCache(tmp_path, read=False, unstartable=True).unstartable(server)  # --no-cache
    assert not SchemaCache(tmp_path).unstartable(server)  # a one-shot command waits for it
    # It started at last: its lists replace the note.
    cache.save(server, (), Catalog())
    known = cache.load(server)
    assert known is not None and not known.unstartable and not cache.unstartable(server)
    assert not list(tmp_path.glob("*.unstartable"))


def test_a_list_does_not_wait_on_a_server_the_cache_says_could_not_start(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = SchemaCache(folder, unstartable=True)  # as the gateway keeps it
    handshake = 10.0
    dead = stdio_server("silent_server", connectTimeout=handshake)
    servers = config({"dead": dead})
    with Runtime.start(servers, schema_cache=cache) as rt:
        assert rt.list_tools(timeout=WAIT) == []  # it is tried, for its handshake timeout
        assert wait_until(lambda: len(list(folder.glob("*.unstartable"))) == 1, WAIT)
        # Not waited on again (its supervisor restarts it meanwhile): a list answers at once.
        for _ in range(3):
            assert rt.list_tools(timeout=handshake / 2) == []
    with Runtime.start(servers, schema_cache=cache) as rt:
        assert rt.list_tools(timeout=handshake / 2) == []
