"""`load_config`: the mcpServers form of Claude Desktop, Cursor and VS Code, plus lifecycle keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.config import DEFAULT_KEYS, RuntimeConfig, load_config
from actors.mcp.config import ConfigError, ServerConfig, ToolFilter

STDIO = {"command": "mcp-server-time"}


def servers(**entries: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": entries}


def problems_of(source: Any, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(source, environ=environ or {})
    return caught.value


def assert_names(error: ConfigError, *fragments: str) -> None:
    text = str(error)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"


# ---- the forms other hosts write ---------------------------------------------------------


def test_claude_desktop_mcp_servers_form() -> None:
    config = load_config(
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
                "files": {"command": "npx", "args": ["-y", "server-fs", "/tmp"], "env": {"DEBUG": "1"}},
            }
        },
        environ={},
    )
    assert isinstance(config, RuntimeConfig)
    assert set(config.servers) == {"time", "files"}
    time = config.servers["time"]
    assert time.name == "time"
    assert time.transport == "stdio"
    assert time.command == "uvx"
    assert time.args == ("mcp-server-time", "--local-timezone", "UTC")
    assert config.servers["files"].env == {"DEBUG": "1"}
    assert config.warnings == ()


def test_vscode_servers_form_with_http_type() -> None:
    config = load_config(
        {
            "inputs": [{"type": "promptString", "id": "token"}],
            "servers": {
                "gh": {
                    "type": "http",
                    "url": "https://api.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${input:token}"},
                },
                "local": {"type": "stdio", "command": "server"},
            },
        },
        environ={},
    )
    gh = config.servers["gh"]
    assert gh.transport == "streamable-http"
    assert gh.url == "https://api.example.com/mcp"
    # VS Code's own ${input:...} is not an environment variable: it is left alone, and said so.
    assert gh.headers == {"Authorization": "Bearer ${input:token}"}
    assert config.servers["local"].transport == "stdio"
    assert config.warnings == (
        "top-level key 'inputs' (VS Code) is not used by mcp-actors and was ignored: "
        "only VS Code can prompt for inputs",
        "server 'gh': key 'headers.Authorization' holds ${input:token}, passed through as-is "
        "(only VS Code can prompt for inputs)",
    )


def test_every_vscode_input_is_named_by_server_and_key() -> None:
    entry = {
        "command": "srv",
        "args": ["--token", "${input:token}", "--org=${input:org}"],
        "env": {"KEY": "${input:key}"},
        "cwd": "/srv",
    }
    config = load_config({"servers": {"local": entry}}, environ={})
    assert config.servers["local"].args == ("--token", "${input:token}", "--org=${input:org}")
    named = [w.split(" holds ")[0] for w in config.warnings]
    assert named == [
        "server 'local': key 'args[1]'",
        "server 'local': key 'args[2]'",
        "server 'local': key 'env.KEY'",
    ]
    assert all("passed through as-is (only VS Code can prompt for inputs)" in w for w in config.warnings)


# A claude_desktop_config.json as Claude Desktop writes it once its settings were touched.
CLAUDE_DESKTOP = {
    "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}},
    "globalShortcut": "Ctrl+Space",
    "preferences": {"quickEntryShortcut": "off", "menuBarEnabled": False},
    "isUsingBuiltInNodeForMcp": True,
}


def test_claude_desktop_settings_keys_are_ignored_with_a_warning() -> None:
    config = load_config(CLAUDE_DESKTOP, environ={})
    assert set(config.servers) == {"time"}
    assert config.warnings == tuple(
        f"top-level key {key!r} (Claude Desktop) is not used by mcp-actors and was ignored"
        for key in ("globalShortcut", "preferences", "isUsingBuiltInNodeForMcp")
    )


def test_claude_code_state_file_loads_with_its_servers() -> None:
    # ~/.claude.json: user-scope servers beside Claude Code's own state, most keys unknown to us.
    state = {
        "numStartups": 42,
        "installMethod": "npm",
        "tipsHistory": {"new-user-warmup": 1},
        "hasSeenTasksHint": True,
        "projects": {"/home/u/repo": {"mcpServers": {"local": {"command": "x"}}}},
        "mcpServers": {"workos": {"type": "http", "url": "https://mcp.workos.com/mcp"}},
    }
    config = load_config(state, environ={})
    assert set(config.servers) == {"workos"}
    text = "\n".join(config.warnings)
    assert "'projects' (Claude Code) is not used by mcp-actors and was ignored: its per-project" in text
    assert "'numStartups' (Claude Code)" in text
    assert (
        "3 more top-level keys of Claude Code's state ('installMethod', 'tipsHistory', 'hasSeenTasksHint')"
        in text
    )


def test_a_misspelt_key_in_a_claude_code_state_file_is_still_an_error() -> None:
    error = problems_of({"numStartups": 1, "mcpServer": {"a": STDIO}})
    assert_names(error, "'mcpServer'", "unknown top-level key (did you mean 'mcpServers'?)")


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"command": "x"}, "stdio"),
        ({"url": "http://127.0.0.1:8000/mcp"}, "streamable-http"),
        ({"type": "sse", "url": "http://127.0.0.1:9000/sse"}, "sse"),
        ({"type": "http", "url": "https://h/mcp"}, "streamable-http"),
        ({"type": "streamable-http", "url": "https://h/mcp"}, "streamable-http"),
        ({"type": "streamableHttp", "url": "https://h/mcp"}, "streamable-http"),
        ({"transport": "sse", "url": "https://h/sse"}, "sse"),
        ({"command": "x", "url": "https://h/mcp"}, "stdio"),
    ],
)
def test_transport_is_inferred(entry: dict[str, Any], transport: str) -> None:
    assert load_config(servers(s=entry), environ={}).servers["s"].transport == transport


def test_unknown_transport_type_is_rejected() -> None:
    error = problems_of(servers(s={"type": "websocket", "url": "ws://h"}))
    assert_names(error, "'s'", "'type'", "websocket")


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(servers(time=STDIO)), encoding="utf-8")
    config = load_config(path, environ={})
    assert config.servers["time"].command == "mcp-server-time"
    assert config.source == str(path)
    assert load_config(str(path), environ={}).servers["time"].command == "mcp-server-time"


def test_runtime_config_passes_through() -> None:
    config = load_config(servers(time=STDIO), environ={})
    assert load_config(config) is config


def test_empty_config_has_no_servers_and_builtins_off() -> None:
    config = load_config({}, environ={})
    assert config.servers == {}
    assert config.builtin.enabled is False
    assert config.builtin.workspace == "."


def test_builtin_tools_are_off_unless_the_config_turns_them_on() -> None:
    # They can write files and commit: a user's file without a "builtin" key gets none.
    assert load_config(servers(time=STDIO), environ={}).builtin.enabled is False
    assert load_config({"builtin": {"workspace": "/srv"}}, environ={}).builtin.enabled is False
    assert load_config({"builtin": {"enabled": True}}, environ={}).builtin.enabled is True
    assert RuntimeConfig().builtin.enabled is False


# ---- environment variables ---------------------------------------------------------------


def test_variables_are_expanded_everywhere() -> None:
    entry = {
        "command": "${BIN}",
        "args": ["--token", "${TOKEN}", "${env:HOME}/x"],
        "env": {"TZ": "${TZ:-UTC}", "LANG": "${LANG:-C}"},
        "cwd": "${env:HOME}",
    }
    remote = {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    config = load_config(
        servers(local=entry, remote=remote),
        environ={"BIN": "/usr/bin/srv", "TOKEN": "s3cret", "HOME": "/home/u", "LANG": "de_DE", "HOST": "h"},
    )
    local = config.servers["local"]
    assert local.command == "/usr/bin/srv"
    assert local.args == ("--token", "s3cret", "/home/u/x")
    assert local.env == {"TZ": "UTC", "LANG": "de_DE"}
    assert local.cwd == "/home/u"
    assert config.servers["remote"].url == "https://h/mcp"
    assert config.servers["remote"].headers == {"Authorization": "Bearer s3cret"}


def test_default_used_when_variable_is_empty_and_empty_kept_without_default() -> None:
    config = load_config(
        servers(s={"command": "x", "env": {"A": "${EMPTY:-fallback}", "B": "${EMPTY}"}}),
        environ={"EMPTY": ""},
    )
    assert config.servers["s"].env == {"A": "fallback", "B": ""}


def test_empty_default_is_allowed() -> None:
    config = load_config(servers(s={"command": "x", "env": {"A": "${NOPE:-}"}}), environ={})
    assert config.servers["s"].env == {"A": ""}


def test_unset_variable_without_default_names_server_and_variable() -> None:
    error = problems_of(servers(gh={"command": "x", "env": {"TOKEN": "${GITHUB_TOKEN}"}}))
    assert_names(error, "'gh'", "GITHUB_TOKEN")
    assert error.problems[0].server == "gh"


def test_unset_vscode_variable_is_an_error_too() -> None:
    error = problems_of(servers(gh={"command": "${env:SERVER_BIN}"}))
    assert_names(error, "'gh'", "SERVER_BIN")


def test_os_environ_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ACTORS_TEST_BIN", "/opt/bin/srv")
    config = load_config(servers(s={"command": "${MCP_ACTORS_TEST_BIN}"}))
    assert config.servers["s"].command == "/opt/bin/srv"


# ---- defaults and builtin ----------------------------------------------------------------


def test_defaults_apply_unless_a_server_sets_its_own() -> None:
    config = load_config(
        {
            "defaults": {"idleTimeout": 10, "restart": "permanent", "callTimeout": 5},
            "mcpServers": {"a": STDIO, "b": {**STDIO, "idleTimeout": 0, "restart": "temporary"}},
        },
        environ={},
    )
    a, b = config.servers["a"], config.servers["b"]
    assert (a.idle_timeout, a.restart, a.call_timeout) == (10, "permanent", 5)
    assert (b.idle_timeout, b.restart, b.call_timeout) == (0, "temporary", 5)


def test_max_argument_bytes_defaults_to_16_mib_and_may_be_a_default() -> None:
    config = load_config(
        {
            "defaults": {"maxArgumentBytes": 4096},
            "mcpServers": {"a": STDIO, "b": {**STDIO, "maxArgumentBytes": 1}},
        },
        environ={},
    )
    assert (config.servers["a"].max_argument_bytes, config.servers["b"].max_argument_bytes) == (4096, 1)
    assert ServerConfig(name="t", command="x").max_argument_bytes == 16 * 1024 * 1024


def test_max_message_bytes_defaults_to_64_mib_and_may_be_a_default() -> None:
    config = load_config(
        {
            "defaults": {"maxMessageBytes": 4096},
            "mcpServers": {"a": STDIO, "b": {**STDIO, "maxMessageBytes": 1}},
        },
        environ={},
    )
    assert (config.servers["a"].max_message_bytes, config.servers["b"].max_message_bytes) == (4096, 1)
    assert ServerConfig(name="t", command="x").max_message_bytes == 64 * 1024 * 1024


def test_defaults_take_only_lifecycle_keys() -> None:
    error = problems_of({"defaults": {"command": "x"}, "mcpServers": {"a": STDIO}})
    assert_names(error, "defaults.command")


def test_bad_default_is_reported_for_each_server() -> None:
    error = problems_of({"defaults": {"idleTimeout": -1}, "mcpServers": {"a": STDIO, "b": STDIO}})
    assert {(p.server, p.key) for p in error.problems} == {("a", "idleTimeout"), ("b", "idleTimeout")}


def test_defaults_must_be_an_object() -> None:
    assert_names(problems_of({"defaults": [], "mcpServers": {}}), "'defaults'", "must be an object")


def test_builtin_key() -> None:
    config = load_config({"builtin": {"enabled": False, "workspace": "/srv/ws"}}, environ={})
    assert config.builtin.enabled is False
    assert config.builtin.workspace == "/srv/ws"


def test_builtin_bad_values_are_named() -> None:
    error = problems_of({"builtin": {"enabled": "perhaps", "workspce": "."}})
    keys = {p.key for p in error.problems}
    assert keys == {"builtin.enabled", "builtin.workspce"}


def test_builtin_namespace_is_reserved_while_builtins_are_on() -> None:
    assert_names(problems_of({"builtin": {"enabled": True}, **servers(builtin=STDIO)}), "'builtin'", "taken")
    config = load_config({"builtin": {"enabled": False}, **servers(builtin=STDIO)}, environ={})
    assert "builtin" in config.servers
    assert "builtin" in load_config(servers(builtin=STDIO), environ={}).servers


def test_disabled_server_is_left_out() -> None:
    config = load_config(servers(a=STDIO, b={**STDIO, "disabled": True}), environ={})
    assert set(config.servers) == {"a"}


def test_lifecycle_keys_in_camel_case_reach_snake_case_fields() -> None:
    entry = {
        **STDIO,
        "lazyStart": False,
        "idleTimeout": 1.5,
        "healthCheckInterval": 0,
        "connectTimeout": 2,
        "callTimeout": 3,
        "maxArgumentBytes": 1024,
        "maxMessageBytes": 2048,
        "restart": "permanent",
        "maxRestarts": 7,
        "restartWindow": 9,
        "restartBackoff": 0.5,
        "restartBackoffMax": 4,
        "tools": {"include": ["get_*"], "exclude": ["get_secret"]},
        "protocol": "legacy",
        "trustAnnotations": True,
        "pin": "warn",
        "elicitation": "accept-defaults",
        "sampling": "allow",
        "logLevel": "warning",
        "disabled": False,
        "sandbox": {"network": ["example.com:443"], "limits": {"memory": "512M"}},
        "prefix": False,
        "affinity": "any",
    }
    assert set(entry) - set(STDIO) == DEFAULT_KEYS
    config = load_config(servers(s=entry), environ={})
    s = config.servers["s"]
    assert s.lazy_start is False
    assert s.idle_timeout == 1.5
    assert s.health_check_interval == 0
    assert (s.connect_timeout, s.call_timeout) == (2, 3)
    assert s.max_argument_bytes == 1024
    assert s.max_message_bytes == 2048
    assert (s.restart, s.max_restarts, s.restart_window) == ("permanent", 7, 9)
    assert (s.restart_backoff, s.restart_backoff_max) == (0.5, 4)
    assert s.tools == ToolFilter(include=("get_*",), exclude=("get_secret",))
    assert s.protocol == "legacy"
    # Each key has one owner: the gateway's and the cluster's keys are theirs alone.
    assert config.gateway.prefixed("s") is False
    assert (config.cluster.single("s"), config.cluster.per_user("s")) == (False, False)
    assert not {"prefix", "affinity"} & set(type(s).model_fields)
    assert s.trust_annotations is True
    assert s.pin == "warn"
    assert s.elicitation == "accept-defaults"
    assert (s.sampling, s.log_level) == ("allow", "warning")
    assert s.sandbox is not None
    assert (s.sandbox.network, s.sandbox.limits.memory) == (("example.com:443",), 512 * 1024**2)


def test_affinity_single_is_read_and_needs_a_lazy_start() -> None:
    assert load_config(servers(m={**STDIO, "affinity": "single"}), environ={}).cluster.single("m")
    assert not load_config(servers(m=STDIO), environ={}).cluster.single("m")
    # A default, as any per-server key, that the server's own entry overrides.
    both = load_config(
        {"defaults": {"affinity": "user"}, "mcpServers": {"a": STDIO, "b": {**STDIO, "affinity": "any"}}}
    )
    assert (both.cluster.per_user("a"), both.cluster.per_user("b")) == (True, False)
    error = problems_of(servers(memory={**STDIO, "affinity": "single", "lazyStart": False}))
    assert_names(error, "'memory'", "affinity")
    assert "lazyStart" in str(error)


# ---- every lifecycle key rejects bad values, naming the server and the key ---------------

# Per key: values of a wrong type and values out of range, all of which must be rejected.
BAD_VALUES: dict[str, list[Any]] = {
    "lazyStart": ["maybe", [True], {"on": True}, None],
    "idleTimeout": [-1, -0.001, "soon", [1], {"s": 1}, None],
    "healthCheckInterval": [-5, "often", [30], None],
    "connectTimeout": [0, -1, "fast", [1], None],
    "callTimeout": [0, -2.5, "slow", {}, None],
    "maxArgumentBytes": [0, -1, 1.5, "huge", [1024], None],
    "maxMessageBytes": [0, -1, 1.5, "huge", [1024], None],
    "restart": ["sometimes", "Permanent", 1, [], None],
    "maxRestarts": [-1, 2.5, "five", [5], None],
    "restartWindow": [0, -60, "a minute", [], None],
    "restartBackoff": [-0.1, "short", [0.2], None],
    "restartBackoffMax": [-1, "long", {}, None],
    "tools": [5, "get_*", ["get_*"], {"include": "get_*"}, {"include": [1]}, {"only": ["x"]}],
    "protocol": ["2024-01-01", "latest", 2026, None],
    "trustAnnotations": ["perhaps", [True], {}, None],
    "pin": ["on", "Block", True, 1, None, ["warn"]],
    "elicitation": ["always", True, 1, ["decline"]],
    "sampling": ["yes", True, 1, ["allow"], None],
    "logLevel": ["verbose", "DEBUG", 3, True, ["debug"]],
    "prefix": ["no", 0, None, ["false"]],
    "affinity": ["one", "Single", True, 1, None, ["single"]],
    "disabled": ["perhaps", [], {}, None],
    "sandbox": [
        "yes",
        1,
        ["none"],
        {"network": "some"},
        {"network": ["https://example.com"]},
        {"network": ["example.com:99999"]},
        {"limits": {"memory": "lots"}},
        {"limits": {"processes": 0}},
        {"limits": {"openFiles": True}},
        {"writes": ["/data"]},
    ],
}
BAD_CASES = [(key, value) for key, values in BAD_VALUES.items() for value in values]


def test_the_table_covers_every_lifecycle_key() -> None:
    assert set(BAD_VALUES) == set(DEFAULT_KEYS)


@pytest.mark.parametrize(("key", "value"), BAD_CASES, ids=[f"{k}={v!r}" for k, v in BAD_CASES])
def test_bad_lifecycle_value_names_server_and_key(key: str, value: Any) -> None:
    error = problems_of(servers(my_server={**STDIO, key: value}))
    assert_names(error, "'my_server'", key)
    assert any(p.server == "my_server" and (p.key or "").split(".")[0] == key for p in error.problems)


@pytest.mark.parametrize(("key", "value"), BAD_CASES, ids=[f"{k}={v!r}" for k, v in BAD_CASES])
def test_bad_lifecycle_default_names_the_key(key: str, value: Any) -> None:
    error = problems_of({"defaults": {key: value}, "mcpServers": {"srv": STDIO}})
    assert_names(error, key)


# Booleans where numbers belong and numbers where booleans belong: pydantic's lax mode coerces
# them (``"idleTimeout": true`` becomes 1.0, ``"disabled": 1`` becomes True) instead of rejecting.
# (Numeric strings are left out on purpose: ``"${IDLE:-300}"`` expands to one.)
COERCED_CASES = [
    ("lazyStart", 0),
    ("lazyStart", 1.0),
    ("idleTimeout", True),
    ("healthCheckInterval", False),
    ("maxRestarts", True),
    ("callTimeout", True),
    ("maxArgumentBytes", True),
    ("maxMessageBytes", True),
    ("trustAnnotations", 1),
    ("disabled", 1),
]


@pytest.mark.parametrize(("key", "value"), COERCED_CASES, ids=[f"{k}={v!r}" for k, v in COERCED_CASES])
def test_wrong_json_type_is_rejected_not_coerced(key: str, value: Any) -> None:
    error = problems_of(servers(my_server={**STDIO, key: value}))
    assert_names(error, "'my_server'", key)


NON_NEGATIVE = ["idleTimeout", "healthCheckInterval", "restartBackoff", "restartBackoffMax", "maxRestarts"]
POSITIVE = ["connectTimeout", "callTimeout", "restartWindow", "maxArgumentBytes", "maxMessageBytes"]


@given(
    key=st.sampled_from(NON_NEGATIVE + POSITIVE),
    value=st.one_of(
        st.integers(max_value=-1),
        st.floats(max_value=-1e-9, allow_nan=False),
    ),
)
def test_negative_numbers_are_rejected(key: str, value: float) -> None:
    error = problems_of(servers(srv={**STDIO, key: value}))
    assert any(p.server == "srv" and p.key == key for p in error.problems), str(error)


@given(key=st.sampled_from(POSITIVE))
def test_zero_is_rejected_where_a_positive_value_is_needed(key: str) -> None:
    error = problems_of(servers(srv={**STDIO, key: 0}))
    assert any(p.server == "srv" and p.key == key for p in error.problems), str(error)


@given(
    backoff=st.floats(min_value=0.001, max_value=100, allow_nan=False),
    factor=st.floats(min_value=0.0, max_value=0.999),
)
def test_backoff_max_below_backoff_is_rejected(backoff: float, factor: float) -> None:
    low = backoff * factor
    if low >= backoff:
        return
    error = problems_of(servers(srv={**STDIO, "restartBackoff": backoff, "restartBackoffMax": low}))
    assert any(p.server == "srv" and p.key == "restartBackoffMax" for p in error.problems), str(error)


def test_every_problem_is_reported_at_once() -> None:
    error = problems_of(
        servers(
            a={**STDIO, "idleTimeout": -1, "restart": "never"},
            b={"type": "sse"},
        )
    )
    found = {(p.server, p.key) for p in error.problems}
    assert {("a", "idleTimeout"), ("a", "restart"), ("b", "url")} <= found


# ---- unknown and foreign keys ------------------------------------------------------------


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("idleTimout", "idleTimeout"),
        ("lazystart", "lazyStart"),
        ("healthCheckIntervall", "healthCheckInterval"),
        ("comand", "command"),
        ("maxRestart", "maxRestarts"),
        ("header", "headers"),
        ("afinity", "affinity"),  # a section's key (the cluster's)
        ("tokenExchang", "tokenExchange"),  # the gateway's
    ],
)
def test_typo_gets_did_you_mean(typo: str, meant: str) -> None:
    error = problems_of(servers(srv={**STDIO, typo: 1}))
    assert_names(error, "'srv'", typo, f"did you mean {meant!r}")


def test_unknown_key_without_a_close_match_has_no_suggestion() -> None:
    error = problems_of(servers(srv={**STDIO, "zzzqqq": 1}))
    assert_names(error, "'srv'", "'zzzqqq'", "unknown key")
    assert "did you mean" not in str(error)


@pytest.mark.parametrize("key", ["autoApprove", "alwaysAllow", "description", "envFile", "timeout"])
def test_foreign_keys_are_ignored_with_a_warning(key: str) -> None:
    config = load_config(servers(srv={**STDIO, key: ["x"]}), environ={})
    assert "srv" in config.servers
    assert len(config.warnings) == 1
    assert "'srv'" in config.warnings[0]
    assert key in config.warnings[0]


def test_foreign_keys_are_not_expanded() -> None:
    config = load_config(servers(srv={**STDIO, "description": "${UNSET_VARIABLE}"}), environ={})
    assert "srv" in config.servers


def test_unknown_top_level_key_is_rejected() -> None:
    assert_names(
        problems_of({"mcpServer": {}}), "'mcpServer'", "unknown top-level key (did you mean 'mcpServers'?)"
    )
    error = problems_of({"mcpServers": {}, "zzzqqq": 1})
    assert_names(error, "'zzzqqq'", "unknown top-level key")
    assert "did you mean" not in str(error)


# ---- files and shapes --------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    error = problems_of(path)
    assert_names(error, str(path), "cannot read")
    assert error.source == str(path)


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}', encoding="utf-8")
    error = problems_of(path)
    assert_names(error, str(path), "not JSON", "line 2")


@pytest.mark.parametrize("text", ["[]", '"mcpServers"', "42", "null"])
def test_file_that_is_not_an_object(tmp_path: Path, text: str) -> None:
    path = tmp_path / "list.json"
    path.write_text(text, encoding="utf-8")
    assert_names(problems_of(path), "must be a JSON object")


def test_servers_must_be_an_object() -> None:
    assert_names(problems_of({"mcpServers": ["a"]}), "'mcpServers'", "must be an object")


def test_server_entry_must_be_an_object() -> None:
    assert_names(problems_of(servers(srv="mcp-server-time")), "'srv'", "must be an object")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["gh/issues", "a b", "", "x" * 65, "ünï"])
def test_illegal_server_name_is_rejected(name: str) -> None:
    error = problems_of({"mcpServers": {name: STDIO}})
    assert any(p.server == name for p in error.problems), str(error)
    if "/" in name:
        assert_names(error, repr(name), "name")


def test_stdio_without_command_names_the_key() -> None:
    error = problems_of(servers(local={"type": "stdio", "args": ["x"]}))
    assert_names(error, "'local'", "'command'")
    assert error.problems[0].key == "command"


def test_entry_with_neither_command_nor_url_is_stdio_without_command() -> None:
    error = problems_of(servers(local={"env": {"A": "1"}}))
    assert error.problems[0].key == "command"


@pytest.mark.parametrize("kind", ["sse", "http", "streamable-http"])
def test_remote_without_url_names_the_key(kind: str) -> None:
    error = problems_of(servers(remote={"type": kind}))
    assert_names(error, "'remote'", "'url'")
    assert error.problems[0].key == "url"


def test_url_must_be_http() -> None:
    error = problems_of(servers(remote={"url": "ftp://h/mcp"}))
    assert_names(error, "'remote'", "'url'", "ftp://h/mcp")


def test_server_config_directly() -> None:
    config = ServerConfig(name="t", command="x", idle_timeout=5)
    assert config.lazy_start is True
    assert config.model_dump(by_alias=True)["idleTimeout"] == 5
    with pytest.raises(ValueError, match="command"):
        ServerConfig(name="t")


# ---- tool filters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("include", "exclude", "name", "allowed"),
    [
        ((), (), "anything", True),
        (("search_*",), (), "search_issues", True),
        (("search_*",), (), "list_issues", False),
        (("search_*", "get_?"), (), "get_x", True),
        (("search_*", "get_?"), (), "get_xy", False),
        ((), ("delete_*",), "delete_repo", False),
        ((), ("delete_*",), "create_repo", True),
        (("*_repo",), ("delete_*",), "delete_repo", False),
        (("*_repo",), ("delete_*",), "create_repo", True),
        (("[lg]et_*",), (), "let_it", True),
        (("[lg]et_*",), (), "set_it", False),
        (("Search*",), (), "search", False),
    ],
)
def test_tool_filter(include: tuple[str, ...], exclude: tuple[str, ...], name: str, allowed: bool) -> None:
    assert ToolFilter(include=include, exclude=exclude).allows(name) is allowed


@given(st.text(min_size=1, max_size=20))
def test_exclude_wins_over_include(name: str) -> None:
    assert not ToolFilter(include=("*",), exclude=("*",)).allows(name)
    assert ToolFilter().allows(name)


def test_tool_filter_from_config() -> None:
    config = load_config(
        servers(s={**STDIO, "tools": {"include": ["search_*"], "exclude": ["search_secrets"]}}), environ={}
    )
    rules = config.servers["s"].tools
    assert rules.allows("search_code")
    assert not rules.allows("search_secrets")
    assert not rules.allows("list_code")
