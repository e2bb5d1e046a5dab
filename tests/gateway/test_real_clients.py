"""Real MCP clients use the gateway, in both protocol eras, over stdio and Streamable HTTP: the
SDK's `mcp.Client`, the fastmcp `Client`, and the MCP Inspector in CLI mode; and a Claude
Desktop style config entry (``{"command": ".../mcp-actors", "args": ["serve", "--config", ...]}``)
started as a subprocess over stdio.

Each client lists the tools (the fixture server's, as ``fx__<tool>``) and calls one; the
negotiated era is checked too (the client's own word, or for the Inspector the call result:
a 2026-07-28 one carries the server's info in ``_meta``).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import fastmcp
import pytest
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import Client, StdioServerParameters
from mcp_types import TextContent
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from tests.conftest import wait_until
from tests.gateway.conftest import (
    INSPECTOR,
    MCP_ACTORS,
    ROOT,
    WAIT,
    fixture,
    gateway_env,
    http_gateway,
    node22,
    processes_mentioning,
    serve_args,
    write_config,
)

MODERN = "2026-07-28"
ERAS = ("legacy", MODERN)
NEGOTIATED = {"legacy": LATEST_HANDSHAKE_VERSION, MODERN: MODERN}

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A gateway config with the fixture server under the namespace ``fx``; the server's name
    (on its command line) is the config's folder, so that a leftover server can be found."""
    return write_config(tmp_path, {"fx": fixture("--name", str(tmp_path))})


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def text_of(result: Any) -> str:
    assert not result.is_error, result
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


def no_gateway_left(config: Path) -> None:
    """No process (a gateway, or a server it started) is left running for ``config``."""
    assert wait_until(lambda: not processes_mentioning(str(config.parent)), WAIT), processes_mentioning(
        str(config.parent)
    )


def sdk_client(config: Path, folder: Path, transport: str, url: str | None, era: str) -> Client:
    if transport == "stdio":
        parameters = StdioServerParameters(
            command=str(MCP_ACTORS), args=serve_args(config)[1:], env=gateway_env(folder), cwd=str(ROOT)
        )
        return Client(parameters, mode=era)
    assert url is not None
    return Client(url, mode=era)


def with_gateway(config: Path, folder: Path, transport: str, use: Callable[[str | None], None]) -> None:
    """Run ``use(url)`` with an HTTP gateway (url given) or for a stdio one (the client starts it)."""
    if transport == "http":
        with http_gateway(config, folder) as gateway:
            use(gateway.url)
    else:
        use(None)
    no_gateway_left(config)


@pytest.mark.parametrize("era", ERAS)
def test_the_sdk_client_calls_and_lists(config: Path, tmp_path: Path, transport: str, era: str) -> None:
    """It calls before it lists, as a client that learned the names earlier does: the gateway
    used to answer "Unknown tool" until something had listed in its process."""

    def use(url: str | None) -> None:
        async def session() -> None:
            async with sdk_client(config, tmp_path, transport, url, era) as client:
                assert client.protocol_version == NEGOTIATED[era]
                if era == "legacy":
                    # Said in the handshake over HTTP too (the SDK's HTTP session manager used to
                    # leave it unsaid). A pinned 2026-07-28 client asks no server/discover.
                    tools = client.server_capabilities.tools
                    assert tools is not None and tools.list_changed, client.server_capabilities
                said = await client.call_tool("fx__echo", {"text": "hello through the gateway"})
                assert text_of(said) == "hello through the gateway"
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"fx__echo", "fx__add", "fx__sleep"} <= names, names

        anyio.run(session)

    with_gateway(config, tmp_path, transport, use)


# The fastmcp client and the Inspector each meet both eras and both transports (pairwise: a
# gateway over stdio costs a process start of seconds on a busy 2-core machine).
@pytest.mark.parametrize(("transport", "era"), [("stdio", "legacy"), ("http", MODERN)])
def test_the_fastmcp_client_lists_and_calls(config: Path, tmp_path: Path, transport: str, era: str) -> None:
    def use(url: str | None) -> None:
        if url is None:
            target: Any = StdioTransport(
                str(MCP_ACTORS),
                serve_args(config)[1:],
                env=gateway_env(tmp_path),
                cwd=str(ROOT),
                keep_alive=False,
            )
        else:
            target = StreamableHttpTransport(url)

        async def session() -> None:
            async with fastmcp.Client(target, mode=era, timeout=WAIT) as client:
                assert client.protocol_version == NEGOTIATED[era]
                names = {tool.name for tool in await client.list_tools()}
                assert {"fx__echo", "fx__add"} <= names, names
                result = await client.call_tool("fx__add", {"a": 20, "b": 22})
                assert [c.text for c in result.content if isinstance(c, TextContent)] == ["42"]

        anyio.run(session)

    with_gateway(config, tmp_path, transport, use)


def inspector(folder: Path, *args: str) -> dict[str, Any]:
    """Run the Inspector's CLI (its HOME in ``folder``); its JSON answer (``{"result": ...}``)."""
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    env.pop("MCP_CATALOG_PATH", None)
    process = subprocess.run(
        [node22(), str(INSPECTOR), "--cli", "--format", "json", "--quiet", *args],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        check=False,
    )
    assert process.returncode == 0, (process.returncode, process.stdout[-2000:], process.stderr[-2000:])
    answer = json.loads(process.stdout)
    assert isinstance(answer, dict) and "result" in answer, answer
    return answer


@pytest.mark.parametrize(("transport", "era"), [("stdio", "modern"), ("http", "legacy")])
def test_the_inspector_cli_lists_and_calls(config: Path, tmp_path: Path, transport: str, era: str) -> None:
    def use(url: str | None) -> None:
        if url is None:
            marker = f"MCP_ACTORS_CACHE_DIR={tmp_path / 'cache'}"
            target = ["-e", marker, "--", *serve_args(config)]
        else:
            target = [url]
        for method, extra in (
            ("tools/list", []),
            ("tools/call", ["--tool-name", "fx__echo", "--tool-arg", "text=from the inspector"]),
        ):
            answer = inspector(tmp_path, "--method", method, *extra, "--protocol-era", era, *target)
            result = answer["result"]
            if method == "tools/list":
                assert {"fx__echo", "fx__add"} <= {tool["name"] for tool in result["tools"]}, result
            else:
                assert result["content"] == [{"type": "text", "text": "from the inspector"}], result
                # A 2026-07-28 call result names the server in its _meta; a handshake-era one not.
                modern = "io.modelcontextprotocol/serverInfo" in (result.get("_meta") or {})
                assert modern == (era == "modern"), result

    with_gateway(config, tmp_path, transport, use)


def test_a_claude_desktop_style_entry_starts_the_gateway_over_stdio(config: Path, tmp_path: Path) -> None:
    """The entry a user puts in claude_desktop_config.json, started as Claude Desktop does."""
    desktop = tmp_path / "claude_desktop_config.json"
    entry = {
        "command": str(MCP_ACTORS),
        "args": ["serve", "--config", str(config)],
        "env": {"MCP_ACTORS_CACHE_DIR": str(tmp_path / "cache")},
    }
    desktop.write_text(json.dumps({"mcpServers": {"mcp-actors": entry}}))
    [(name, loaded)] = json.loads(desktop.read_text())["mcpServers"].items()
    parameters = StdioServerParameters(command=loaded["command"], args=loaded["args"], env=loaded["env"])
    text = f"desktop {uuid.uuid4().hex}"

    async def session() -> None:
        async with Client(parameters) as client:
            assert client.server_info is not None and client.server_info.name == "mcp-actors"
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "fx__echo" in names, names
            assert text_of(await client.call_tool("fx__echo", {"text": text})) == text

    anyio.run(session)
    no_gateway_left(config)
    # The Inspector reads the same file as its session config, as hosts do.
    answer = inspector(tmp_path, "--config", str(desktop), "--server", name, "--method", "tools/list")
    assert "fx__echo" in {tool["name"] for tool in answer["result"]["tools"]}
    no_gateway_left(config)
