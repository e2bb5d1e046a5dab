"""Malformed configurations: random JSON values in random places of a valid configuration, random
files. `load_config` must raise `ConfigError` or return a valid `RuntimeConfig`, nothing else.

The per-key wrong-type table lives in tests/core/test_config.py; this adds whole generated configs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.config import ConfigError, RuntimeConfig, load_config
from actors.mcp.config import ServerConfig
from tests.badinput.schema_strategies import json_values


def fuzz(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


_TEXT = st.characters(exclude_categories=("Cs",))
# No "$": a "${VAR}" in a generated string would be an unset variable, a different test.
_PLAIN = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="$"), max_size=20)
_WORD = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="$"), min_size=1, max_size=20)
_NAMES = st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True).filter(lambda n: n != "builtin")
_SECONDS = st.floats(0, 1e6, allow_nan=False)
_POSITIVE = st.floats(0.001, 1e6, allow_nan=False)

LIFECYCLE: dict[str, st.SearchStrategy[Any]] = {
    "lazyStart": st.booleans(),
    "idleTimeout": _SECONDS,
    "healthCheckInterval": _SECONDS,
    "connectTimeout": _POSITIVE,
    "callTimeout": _POSITIVE,
    "maxArgumentBytes": st.integers(1, 2**40),
    "restart": st.sampled_from(["permanent", "transient", "temporary"]),
    "maxRestarts": st.integers(0, 1000),
    "restartWindow": _POSITIVE,
    "restartBackoff": st.floats(0, 1, allow_nan=False),
    "restartBackoffMax": st.floats(1, 100, allow_nan=False),
    "tools": st.fixed_dictionaries({}, optional={"include": st.lists(_WORD), "exclude": st.lists(_WORD)}),
    "protocol": st.sampled_from(["legacy", "auto", "2026-07-28"]),
    "trustAnnotations": st.booleans(),
    "disabled": st.booleans(),
}

_STDIO = st.fixed_dictionaries(
    {"command": _WORD},
    optional={
        "type": st.just("stdio"),
        "args": st.lists(_PLAIN, max_size=4),
        "env": st.dictionaries(_WORD, _PLAIN, max_size=3),
        "cwd": _WORD,
    },
)
_URL = st.builds(lambda scheme, host: f"{scheme}://{host}/mcp", st.sampled_from(["http", "https"]), _NAMES)
_REMOTE = st.fixed_dictionaries(
    {"url": _URL},
    optional={
        "type": st.sampled_from(["http", "streamable-http", "sse"]),
        "headers": st.dictionaries(_WORD, _PLAIN, max_size=3),
    },
)
_LIFECYCLE_SUBSET = st.fixed_dictionaries({}, optional=LIFECYCLE)


@st.composite
def valid_configs(draw: st.DrawFn) -> dict[str, Any]:
    servers = {}
    for name in draw(st.lists(_NAMES, max_size=3, unique=True)):
        entry = draw(_STDIO | _REMOTE)
        entry.update(draw(_LIFECYCLE_SUBSET))
        if entry.get("restartBackoffMax", 10) < entry.get("restartBackoff", 0.2):
            entry.pop("restartBackoffMax")
        servers[name] = entry
    data: dict[str, Any] = {draw(st.sampled_from(["mcpServers", "servers"])): servers}
    if draw(st.booleans()):
        defaults = draw(_LIFECYCLE_SUBSET)
        defaults.pop("restartBackoff", None)
        defaults.pop("restartBackoffMax", None)
        data["defaults"] = defaults
    if draw(st.booleans()):
        data["builtin"] = draw(
            st.fixed_dictionaries({}, optional={"enabled": st.booleans(), "workspace": _WORD})
        )
    return data


def _paths(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield here
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*here, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*here, index))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def spoiled_configs(draw: st.DrawFn) -> Any:
    """A valid configuration with up to four random changes: a value replaced by random JSON, a
    random key added (often with a known key's name), or a key removed. The root stays an object
    (see `test_a_config_that_is_not_an_object_is_a_config_error`)."""
    data: Any = draw(valid_configs())
    known_keys = st.sampled_from(
        [
            *("mcpServers", "servers", "defaults", "builtin", "type", "command", "args", "env", "url"),
            *("globalShortcut", "preferences", "inputs", "numStartups", "projects"),  # other hosts'
            *LIFECYCLE,
        ]
    )
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(list(_paths(data))))
        target = _at(data, path)
        action = draw(st.sampled_from(["replace", "add", "remove"]))
        if path and (action == "replace" or not isinstance(target, dict)):
            _at(data, path[:-1])[path[-1]] = draw(json_values())
        elif action in ("add", "replace"):
            target[draw(known_keys | _PLAIN)] = draw(json_values())
        elif target:
            del target[draw(st.sampled_from(sorted(target)))]
    return data


def assert_config_error_or_valid(source: Any) -> None:
    try:
        loaded = load_config(source, environ={})
    except ConfigError as exc:
        error = exc
    else:
        _assert_valid(loaded)
        return
    assert error.problems, error
    assert str(error).startswith("invalid configuration")


def _assert_valid(loaded: RuntimeConfig) -> None:
    assert isinstance(loaded, RuntimeConfig)
    for name, server in loaded.servers.items():
        assert isinstance(server, ServerConfig)
        assert server.name == name
        assert not server.disabled
        assert server.restart_backoff_max >= server.restart_backoff
        assert server.command if server.transport == "stdio" else server.url


@fuzz(100)
@given(valid_configs())
def test_generated_valid_configs_load(data: dict[str, Any]) -> None:
    loaded = load_config(data, environ={})
    servers = data.get("mcpServers", data.get("servers"))
    default = data.get("defaults", {}).get("disabled", False)
    assert set(loaded.servers) == {n for n, e in servers.items() if not e.get("disabled", default)}


@fuzz(250)
@given(spoiled_configs())
def test_random_json_in_random_places_is_a_config_error_or_valid(data: Any) -> None:
    assert_config_error_or_valid(data)


@fuzz(100)
@given(st.dictionaries(_PLAIN, json_values(), max_size=4))
def test_random_json_objects_are_a_config_error_or_valid(data: dict[str, Any]) -> None:
    assert_config_error_or_valid(data)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("configs")


def _text_sources() -> st.SearchStrategy[str]:
    as_json = spoiled_configs().map(json.dumps)

    @st.composite
    def garbled(draw: st.DrawFn) -> str:
        text = draw(as_json)
        cut = draw(st.integers(0, len(text)))
        return text[:cut] + draw(st.text(_TEXT, max_size=3)) + text[cut + 1 :]

    return st.text(_TEXT) | as_json | garbled()


@fuzz(100)
@given(text=_text_sources())
def test_random_config_files_are_a_config_error_or_valid(folder: Path, text: str) -> None:
    path = folder / "mcp.json"
    path.write_text(text, encoding="utf-8")
    assert_config_error_or_valid(path)


@pytest.mark.parametrize("text", ["[]", "null", "7", '"mcp.json"', "true"])
def test_a_config_file_that_is_not_an_object_is_a_config_error(folder: Path, text: str) -> None:
    path = folder / "not-an-object.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="must be a JSON object"):
        load_config(path, environ={})


@pytest.mark.parametrize("data", [[], None, 7, 2.5, True, [{"mcpServers": {}}]], ids=repr)
def test_a_config_that_is_not_an_object_is_a_config_error(data: Any) -> None:
    with pytest.raises(ConfigError):
        load_config(data, environ={})


@pytest.mark.parametrize(
    "content",
    [
        b'{"mcpServers": {"a\xff": {"command": "x"}}}',
        '{"mcpServers": {}}'.encode("utf-16"),
        b"[" * 100_000,
        b'{"mcpServers": {"a": {"command": "x", "maxRestarts": 1' + b"0" * 5000 + b"}}}",
    ],
    ids=["latin-1-byte", "utf-16", "deep-nesting", "5000-digit-number"],
)
def test_unreadable_config_files_are_a_config_error(folder: Path, content: bytes) -> None:
    path = folder / "unreadable.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError):
        load_config(path, environ={})


@pytest.mark.parametrize(
    "data",
    [{"mcpServers": {"a": {"command": "x", 1: "y"}}}, {1: {}}],
    ids=["in-a-server-entry", "at-the-top-level"],
)
def test_non_string_keys_are_a_config_error(data: dict[Any, Any]) -> None:
    with pytest.raises(ConfigError):
        load_config(data, environ={})


@pytest.mark.parametrize("key", ["callTimeout", "connectTimeout", "idleTimeout", "healthCheckInterval"])
def test_infinite_numbers_are_rejected_at_load_time(folder: Path, key: str) -> None:
    path = folder / "infinite.json"
    path.write_text('{"mcpServers": {"a": {"command": "x", "KEY": Infinity}}}'.replace("KEY", key))
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert key in str(caught.value)
