"""`plan_reload` and `ConfigReloader` on a gateway in this process (no client): what a reload
changes in the runtime, what it leaves alone, what it keeps when the file is bad, and the
watching thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from actors.config import load_config
from actors.gateway import Gateway
from actors.gateway.reload import ConfigReloader, ReloadOutcome, ReloadPlan, plan_reload
from tests.conftest import wait_until
from tests.gateway_search.gateway_process import WAIT, fixture_entry, write_config


def _namespaces(gateway: Gateway) -> list[str]:
    return [status.namespace for status in gateway.runtime.status()]


def test_a_plan_names_what_was_added_removed_and_changed() -> None:
    running = load_config(
        {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}
    )
    wanted = load_config(
        {
            "mcpServers": {
                "a": {"command": "x"},
                "b": {"command": "y", "idleTimeout": 5},
                "d": {"command": "w"},
            }
        }
    )
    plan = plan_reload(running, wanted)
    assert plan == ReloadPlan(added=("d",), removed=("c",), changed=("b",))
    assert plan and str(plan) == "added d; removed c; restarted b"
    assert not plan_reload(running, running)
    assert str(plan_reload(running, running)) == "no server changed"


def test_a_changed_gateway_or_cluster_key_is_a_change() -> None:
    # They live in their owners' sections, not in `ServerConfig`: the plan reads those too.
    plain = {"command": "x"}
    running = load_config({"mcpServers": {"a": plain, "b": plain, "c": plain}})
    wanted = load_config(
        {"mcpServers": {"a": {**plain, "prefix": False}, "b": {**plain, "affinity": "single"}, "c": plain}}
    )
    assert plan_reload(running, wanted) == ReloadPlan(changed=("a", "b"))
    assert plan_reload(wanted, running) == ReloadPlan(changed=("a", "b"))


def test_a_changed_environment_value_is_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"mcpServers": {"a": {"command": "x", "env": {"TOKEN": "${TOKEN}"}}}}
    monkeypatch.setenv("TOKEN", "one")
    running = load_config(entry)
    monkeypatch.setenv("TOKEN", "two")
    assert plan_reload(running, load_config(entry)).changed == ("a",)


def test_a_reload_applies_the_plan_and_leaves_the_rest(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {"keep": fixture_entry(), "gone": fixture_entry()})
    with Gateway.start(path) as gateway:
        kept = gateway.runtime.start_server("keep")
        write_config(path, {"keep": fixture_entry(), "new": fixture_entry("--extra-tools", "1")})
        outcome = ConfigReloader(gateway, path).reload()
        assert outcome == ReloadOutcome(ReloadPlan(added=("new",), removed=("gone",)))
        assert outcome.ok
        assert _namespaces(gateway) == ["keep", "new"]
        assert list(gateway.config.servers) == ["keep", "new"]
        after = gateway.runtime.status("keep")[0]
        assert (after.state, after.pid, after.restarts) == ("running", kept.pid, 0)
        assert gateway.runtime.call_tool("new/tool_000", {"x": 2}).text == "2"


def test_a_file_that_does_not_load_changes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    with Gateway.start(path) as gateway:
        before = gateway.config
        path.write_text("{", "utf-8")
        outcome = ConfigReloader(gateway, path).reload()
        assert outcome.problem is not None and "not JSON" in outcome.problem
        assert not outcome.ok and not outcome.plan
        path.unlink()
        assert "cannot read" in (ConfigReloader(gateway, path).reload().problem or "")
        assert gateway.config is before
        assert _namespaces(gateway) == ["a"]
        assert "the running config is kept" in caplog.text


def test_tool_search_follows_the_file_unless_the_command_line_set_it(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {})
    with Gateway.start(path) as followed, Gateway.start(path, tool_search=True) as forced:
        assert (followed.tool_search, forced.tool_search) == (False, True)
        write_config(path, {}, toolSearch=True)
        ConfigReloader(followed, path).reload()
        assert followed.tool_search is True
        write_config(path, {}, toolSearch=False)
        ConfigReloader(followed, path).reload()
        ConfigReloader(forced, path).reload()
        assert (followed.tool_search, forced.tool_search) == (False, True)


def test_the_built_in_tools_change_only_with_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_config(tmp_path / "mcp.json", {})
    with Gateway.start(path) as gateway:
        path.write_text('{"mcpServers": {}, "builtin": {"enabled": true}}', "utf-8")
        assert ConfigReloader(gateway, path).reload().ok
        assert gateway.config.builtin.enabled is False
        assert "only when the gateway restarts" in caplog.text


def test_the_watcher_reloads_a_changed_file_and_stops(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    outcomes: list[ReloadOutcome] = []
    reloaded = threading.Event()

    def record(outcome: ReloadOutcome) -> None:
        outcomes.append(outcome)
        reloaded.set()

    with Gateway.start(path) as gateway:
        with ConfigReloader(gateway, path, watch=True, interval=0.05, on_reload=record):
            write_config(path, {"a": fixture_entry(), "b": fixture_entry()})
            assert reloaded.wait(WAIT), "the change was not seen"
            assert outcomes[0].plan == ReloadPlan(added=("b",))
            reloaded.clear()
            path.write_text("not json", "utf-8")
            assert reloaded.wait(WAIT), "the broken file was not seen"
            assert outcomes[1].problem is not None
        # Stopped: its thread is gone (the autouse guard checks).
        assert _namespaces(gateway) == ["a", "b"]


def test_a_request_reloads_without_watching(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {})
    reloaded = threading.Event()
    with Gateway.start(path) as gateway:
        with ConfigReloader(
            gateway, path, interval=0.05, on_reload=lambda outcome: reloaded.set()
        ) as reloader:
            write_config(path, {"a": fixture_entry()})
            reloader.request()
            assert reloaded.wait(WAIT)
        assert _namespaces(gateway) == ["a"]


def test_servers_that_may_not_start_lazily_start_with_the_gateway_and_on_reload(tmp_path: Path) -> None:
    # lazyStart false: no call would start them (calls fail not_started), so the gateway does.
    path = write_config(
        tmp_path / "mcp.json", {"eager": fixture_entry(lazyStart=False), "lazy": fixture_entry()}
    )
    with Gateway.start(path) as gateway:

        def states() -> dict[str, str]:
            return {s.namespace: s.state for s in gateway.runtime.status()}

        assert wait_until(lambda: states()["eager"] == "running", WAIT), states()
        assert states()["lazy"] == "idle"
        assert gateway.runtime.call_tool("eager/echo", {"text": "up"}).text == "up"

        write_config(
            path,
            {
                "eager": fixture_entry(lazyStart=False),
                "lazy": fixture_entry(),
                "late": fixture_entry(lazyStart=False),
            },
        )
        assert ConfigReloader(gateway, path).reload().ok
        assert wait_until(lambda: states().get("late") == "running", WAIT), states()
        assert states()["lazy"] == "idle"
