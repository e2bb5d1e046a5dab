"""Tool search through the gateway, with the SDK's client over stdio and Streamable HTTP in both
eras: ``tools/list`` offers ``search_tools`` and ``call_tool`` only; a search ranks the real
servers' tools; ``call_tool`` forwards to the real tool (result, progress, cancellation) as a
direct call does, and every tool stays callable by its own name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from actors.config import ConfigError, load_config
from tests.gateway_search.gateway_process import KINDS, connect, fixture_entry, wait_for, write_config
from tests.harness import forkserver
from tests.servers.http_server import REPO_ROOT

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

ERAS = ("legacy", "2026-07-28")


def _surface_entry(marker_dir: Path) -> dict[str, Any]:
    command, *args = forkserver.python_module("tests.servers.surface_server")
    return {
        "command": command,
        "args": args,
        "cwd": str(REPO_ROOT),
        "env": {"FIXTURE_MARKER_DIR": str(marker_dir)},
    }


def _found(result: types.CallToolResult) -> list[dict[str, Any]]:
    assert not result.is_error, result
    assert result.structured_content is not None
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == result.structured_content
    tools: list[dict[str, Any]] = result.structured_content["tools"]
    return tools


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", KINDS)
def test_only_search_and_call_are_listed_and_a_search_ranks_real_tools(
    kind: str, era: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_entry()}, toolSearch=True)

    async def exercise() -> None:
        async with connect(kind, config, tmp_path=tmp_path, era=era) as (client, _):
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["search_tools", "call_tool"]

            best = _found(await client.call_tool("search_tools", {"query": "add two integers"}))
            assert best[0]["name"] == "fx__add"
            assert best[0]["description"] == "Add two integers."
            assert set(best[0]["inputSchema"]["properties"]) == {"a", "b"}
            # The exact name first, though other tools' descriptions say "text" too.
            assert (
                _found(await client.call_tool("search_tools", {"query": "fx__echo"}))[0]["name"] == "fx__echo"
            )
            # Only sleep's argument is named seconds.
            assert [
                t["name"] for t in _found(await client.call_tool("search_tools", {"query": "seconds"}))
            ] == ["fx__sleep"]
            several = _found(await client.call_tool("search_tools", {"query": "tool text client"}))
            assert len(several) > 1
            one = _found(await client.call_tool("search_tools", {"query": "tool text client", "limit": 1}))
            assert one == several[:1]

    anyio.run(exercise)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", KINDS)
def test_call_tool_forwards_to_the_real_tool_as_a_direct_call_does(
    kind: str, era: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_entry()})

    async def exercise() -> None:
        async with connect(kind, config, "--tool-search", tmp_path=tmp_path, era=era) as (client, _):
            through = await client.call_tool("call_tool", {"name": "fx__add", "arguments": {"a": 2, "b": 3}})
            direct = await client.call_tool("fx__add", {"a": 2, "b": 3})
            assert not through.is_error and _text(through) == "5"
            assert through.content == direct.content
            assert through.structured_content == direct.structured_content

            failed = await client.call_tool(
                "call_tool", {"name": "fx__fail", "arguments": {"message": "boom"}}
            )
            assert failed.is_error and "boom" in _text(failed)
            assert failed.content == (await client.call_tool("fx__fail", {"message": "boom"})).content

    anyio.run(exercise)


@pytest.mark.parametrize("kind", KINDS)
def test_call_tool_forwards_progress_and_cancellation(kind: str, tmp_path: Path, marker_dir: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"s": _surface_entry(marker_dir)}, toolSearch=True)

    async def exercise() -> None:
        async with connect(kind, config, tmp_path=tmp_path) as (client, _):
            steps: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                steps.append((progress, total, message))

            done = await client.call_tool(
                "call_tool", {"name": "s__progress", "arguments": {"steps": 3}}, progress_callback=on_progress
            )
            assert _text(done) == "done 3"
            await wait_for(lambda: len(steps) == 3, "three progress notifications")
            assert steps == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(
                    client.call_tool,
                    "call_tool",
                    {"name": "s__sleep", "arguments": {"seconds": 600, "marker": "m"}},
                )
                await wait_for((marker_dir / "m.started").exists, "the call reaching the server")
                tasks.cancel_scope.cancel()
            await wait_for((marker_dir / "m.cancelled").exists, "the cancel reaching the server")
            # The session goes on.
            again = await client.call_tool("call_tool", {"name": "s__progress", "arguments": {"steps": 1}})
            assert _text(again) == "done 1"

    anyio.run(exercise)


def test_bad_requests_are_tool_errors_a_model_can_read(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_entry()}, toolSearch=True)

    async def exercise() -> None:
        async with connect("stdio", config, tmp_path=tmp_path) as (client, _):
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("call_tool", {"name": "fx__nope"}, "not found: Unknown tool: fx__nope"),
                ("call_tool", {"arguments": {}}, "validation error: call_tool takes 'name'"),
                ("call_tool", {"name": "fx__echo", "arguments": [1]}, "validation error: call_tool takes"),
                ("call_tool", {"name": "search_tools"}, "validation error: call search_tools itself"),
                ("search_tools", {}, "validation error: search_tools needs a 'query'"),
                ("search_tools", {"query": "  "}, "validation error: search_tools needs a 'query'"),
                ("search_tools", {"query": "x", "limit": 0}, "validation error: 'limit' must be"),
                ("search_tools", {"query": "x", "limit": "3"}, "validation error: 'limit' must be"),
            ]
            for name, arguments, expected in cases:
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments, result)
                assert _text(result).startswith(expected), (name, arguments, _text(result))
            # A direct call by an unknown name is still a protocol error, as without tool search.
            with pytest.raises(MCPError, match="Unknown tool: fx__nope"):
                await client.call_tool("fx__nope", {})
            # A tool named without arguments gets none (echo then refuses: text is required).
            missing = await client.call_tool("call_tool", {"name": "fx__echo"})
            assert missing.is_error and "text" in _text(missing)

    anyio.run(exercise)


def test_without_tool_search_every_tool_is_listed_and_the_meta_tools_are_unknown(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_entry()})

    async def exercise() -> None:
        async with connect("stdio", config, tmp_path=tmp_path) as (client, _):
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "fx__echo" in names and "search_tools" not in names
            with pytest.raises(MCPError, match="Unknown tool: search_tools"):
                await client.call_tool("search_tools", {"query": "echo"})

    anyio.run(exercise)


def test_a_bad_tool_search_value_is_a_config_error(tmp_path: Path) -> None:
    write_config(tmp_path / "mcp.json", {"fx": fixture_entry()}, toolSearch="yes")
    with pytest.raises(ConfigError, match="toolSearch"):
        load_config(tmp_path / "mcp.json")
    assert load_config(write_config(tmp_path / "on.json", {}, toolSearch=True)).tool_search is True
    assert load_config(write_config(tmp_path / "off.json", {})).tool_search is False
