"""Config reload of ``mcp-actors serve``, as a host runs it (a child process), with the SDK's
client over stdio and Streamable HTTP: ``--watch`` and SIGHUP; servers added, removed and
changed while a call on another server is in flight; a file that no longer loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from actors.testing import procfs
from tests.gateway_reload.conftest import ERAS, ToolNews
from tests.gateway_search.gateway_process import (
    KINDS,
    GatewayProcess,
    connect,
    fixture_entry,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_server_added_to_a_watched_file_reaches_clients(kind: str, era: str, tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    news = ToolNews()

    async def exercise() -> None:
        async with connect(
            kind, config, "--watch", tmp_path=tmp_path, era=era, message_handler=news.handler
        ) as (client, _):
            assert "a__echo" in await _names(client)
            assert _text(await client.call_tool("a__echo", {"text": "one"})) == "one"
            async with news.listening(client, era):
                seen = news.count
                # b runs what a runs: the schema cache knows its tools, so registering it
                # changes no list in the runtime; the gateway tells clients itself.
                write_config(config, {"a": fixture_entry(), "b": fixture_entry()})
                await news.wait_beyond(seen, "a tools/list_changed after the file changed")
            names = await _names(client)
            assert {"a__echo", "b__echo", "b__add"} <= names
            assert _text(await client.call_tool("b__add", {"a": 2, "b": 3})) == "5"

    anyio.run(exercise)


@pytest.mark.parametrize("kind", KINDS)
def test_a_backends_own_list_change_reaches_clients(kind: str, tmp_path: Path) -> None:
    # What a reload's list_changed rides on: the gateway once kept each request's session
    # (the SDK makes one per request, gone when answered), so no client was ever told.
    config = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    news = ToolNews()

    async def exercise() -> None:
        async with connect(kind, config, tmp_path=tmp_path, message_handler=news.handler) as (client, _):
            assert "a__late" not in await _names(client)
            seen = news.count
            assert _text(await client.call_tool("a__add_tool", {"name": "late"})) == "added late"
            await news.wait_beyond(seen, "a tools/list_changed after the server added a tool")
            assert "a__late" in await _names(client)

    anyio.run(exercise)


def test_removed_and_changed_servers_leave_a_call_in_flight_on_another_alone(tmp_path: Path) -> None:
    # keep asks the client for input (elicitation) mid-call: in the handshake era, where a
    # server may send requests of its own.
    keep = fixture_entry(protocol="legacy")
    servers = {"keep": keep, "gone": fixture_entry(), "changed": fixture_entry()}
    config = write_config(tmp_path / "mcp.json", servers)
    news = ToolNews()
    asked = anyio.Event()
    answer = anyio.Event()

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.set()
        await answer.wait()
        return types.ElicitResult(action="accept", content={"ok": True})

    async def exercise() -> None:
        async with connect(
            "http",
            config,
            "--watch",
            tmp_path=tmp_path,
            message_handler=news.handler,
            elicitation_callback=on_elicit,
        ) as (client, gateway):
            assert isinstance(gateway, GatewayProcess)
            for ns in servers:
                assert _text(await client.call_tool(f"{ns}__echo", {"text": ns})) == ns
            before = gateway.healthz()["servers"]
            pids = {ns: before[ns]["pid"] for ns in servers}
            assert all(isinstance(pid, int) and procfs.is_alive(pid) for pid in pids.values()), before

            in_flight: list[types.CallToolResult] = []

            async def ask() -> None:
                in_flight.append(await client.call_tool("keep__ask_client", {}))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                # keep's call now waits on this client's answer: it is in flight at the server.
                with anyio.fail_after(60):
                    await asked.wait()
                seen = news.count
                write_config(config, {"keep": keep, "changed": fixture_entry("--extra-tools", "1")})
                await news.wait_beyond(seen, "a tools/list_changed after the reload")
                # The reload removes, then adds: the first list_changed may come between the two,
                # and "changed" stays listed (stopping, then stopped) until its new config replaces it.

                def reloaded() -> bool:
                    now = gateway.healthz()["servers"]
                    fresh = now.get("changed", {})
                    return (
                        set(now) == {"keep", "changed"}
                        and fresh.get("pid") != pids["changed"]
                        and (fresh.get("state") not in ("stopping", "stopped"))
                    )

                await wait_for(reloaded, "the changed server's new config in place")
                after = gateway.healthz()["servers"]
                await wait_for(lambda: not procfs.is_alive(pids["gone"]), "the removed server's exit")
                await wait_for(lambda: not procfs.is_alive(pids["changed"]), "the changed server's exit")
                assert after["keep"]["pid"] == pids["keep"] and after["keep"]["restarts"] == 0
                assert not in_flight, "the call in flight ended before it was answered"
                answer.set()
            assert _text(in_flight[0]) == "client answered: accept"

            names = await _names(client)
            assert "changed__tool_000" in names  # its new config's tool
            assert not any(name.startswith("gone__") for name in names)
            assert _text(await client.call_tool("changed__tool_000", {"x": 1})) == "1"
            assert _text(await client.call_tool("keep__echo", {"text": "still"})) == "still"
            assert gateway.healthz()["servers"]["keep"]["pid"] == pids["keep"]

    anyio.run(exercise)


def test_a_file_that_no_longer_loads_is_reported_and_the_config_kept(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    news = ToolNews()

    async def exercise() -> None:
        async with connect("http", config, "--watch", tmp_path=tmp_path, message_handler=news.handler) as (
            client,
            gateway,
        ):
            assert isinstance(gateway, GatewayProcess)
            assert _text(await client.call_tool("a__echo", {"text": "x"})) == "x"
            pid = gateway.healthz()["servers"]["a"]["pid"]

            config.write_text('{"mcpServers": {"a": ', "utf-8")
            await wait_for(lambda: "not JSON" in gateway.stderr(), "the broken file being reported")
            write_config(config, {"a": fixture_entry(), "b": {"command": "x", "idleTimeout": -1}})
            await wait_for(lambda: "idleTimeout" in gateway.stderr(), "the bad value being reported")
            assert gateway.stderr().count("the running config is kept") == 2

            # Nothing changed: the same server, the same process, its calls served.
            assert set(gateway.healthz()["servers"]) == {"a"}
            assert gateway.healthz()["servers"]["a"]["pid"] == pid
            assert _text(await client.call_tool("a__echo", {"text": "y"})) == "y"
            assert not any(name.startswith("b__") for name in await _names(client))

            # A file that loads again is applied.
            seen = news.count
            write_config(config, {"a": fixture_entry(), "b": fixture_entry()})
            await news.wait_beyond(seen, "a tools/list_changed once the file loads")
            assert _text(await client.call_tool("b__echo", {"text": "z"})) == "z"
            assert gateway.healthz()["servers"]["a"]["pid"] == pid

    anyio.run(exercise)


def test_sighup_reloads_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})
    news = ToolNews()

    async def exercise() -> None:
        async with connect(
            "http", config, "--log-level", "INFO", tmp_path=tmp_path, message_handler=news.handler
        ) as (
            client,
            gateway,
        ):
            assert isinstance(gateway, GatewayProcess)
            assert "a__echo" in await _names(client)
            seen = news.count
            write_config(config, {"b": fixture_entry()})
            # Not watched: the file changed, the gateway serves on as it was.
            assert _text(await client.call_tool("a__echo", {"text": "x"})) == "x"
            gateway.hang_up()
            await news.wait_beyond(seen, "a tools/list_changed after SIGHUP")
            await wait_for(lambda: "reload:" in gateway.stderr(), "the reload being logged")
            assert "removed a" in gateway.stderr() and "added b" in gateway.stderr()
            names = await _names(client)
            assert "b__echo" in names and "a__echo" not in names
            assert set(gateway.healthz()["servers"]) == {"b"}
            # A second SIGHUP with nothing changed changes nothing, and the gateway lives on.
            gateway.hang_up()
            await wait_for(lambda: "no server changed" in gateway.stderr(), "the second reload")
            assert _text(await client.call_tool("b__echo", {"text": "y"})) == "y"

    anyio.run(exercise)


def test_sigterm_stops_the_servers_before_the_gateway_exits(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"a": fixture_entry()})

    async def exercise() -> GatewayProcess:
        async with connect("http", config, "--log-level", "INFO", tmp_path=tmp_path) as (client, gateway):
            assert isinstance(gateway, GatewayProcess)
            assert _text(await client.call_tool("a__echo", {"text": "x"})) == "x"
            return gateway

    gateway = anyio.run(exercise)
    # Not killed by the signal (uvicorn re-raises it after its own shutdown): it unwound,
    # stopping its server on the way out.
    assert gateway.stop() == 0, gateway.stderr()
    assert "a: running -> stopping" in gateway.stderr()
