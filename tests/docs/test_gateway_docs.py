"""docs/gateway.md: each host's config snippet loads with `load_config`, holds one entry that
runs ``mcp-actors serve``, and that entry, started as the host would start it (a child process
over stdio, or the page's HTTP command), serves the tools of a fixture server to the SDK's client."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from actors.config import load_config
from tests.docs.runnable import FENCE
from tests.gateway_search.gateway_process import GatewayProcess, fixture_entry, write_config
from tests.servers.http_server import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "gateway.md"
DOC_CONFIG = "/home/you/.config/mcp-actors/mcp.json"
"""The gateway config path the snippets use; the tests put a real file in its place."""
MCP_ACTORS = Path(sys.executable).parent / "mcp-actors"
STDIO_HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode")

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def _blocks() -> list[tuple[list[str], str]]:
    text = PAGE.read_text(encoding="utf-8")
    return [(m.group("info").split(), m.group("body")) for m in FENCE.finditer(text)]


def _snippets() -> dict[str, str]:
    """Each host's snippet, by its ``host=NAME`` tag."""
    found: dict[str, str] = {}
    for info, body in _blocks():
        for word in info:
            if word.startswith("host="):
                assert word[5:] not in found, f"two snippets for {word}"
                found[word[5:]] = body
    return found


def _console(prefix: str) -> list[str]:
    """The words of the page's one console line that starts with ``$ prefix``."""
    lines = [
        line[2:]
        for info, body in _blocks()
        if info[:1] == ["console"]
        for line in body.splitlines()
        if line.startswith(f"$ {prefix}")
    ]
    assert len(lines) == 1, (prefix, lines)
    return shlex.split(lines[0])


def _gateway_entry(host: str, tmp_path: Path) -> Any:
    """The snippet's one server, loaded from a file as the host's config would be."""
    path = tmp_path / f"{host}.json"
    path.write_text(_snippets()[host], encoding="utf-8")
    config = load_config(path)
    assert list(config.servers) == ["mcp-actors"], config.servers
    return config.servers["mcp-actors"]


def test_there_is_a_snippet_for_each_host_and_the_gateway_config_loads(tmp_path: Path) -> None:
    assert set(_snippets()) == {*STDIO_HOSTS, "vscode-http"}
    [gateway_config] = [body for info, body in _blocks() if "gateway-config" in info]
    config = load_config(json.loads(gateway_config))
    assert sorted(config.servers) == ["git", "time"]
    assert config.servers["git"].idle_timeout == 600


@pytest.mark.parametrize("host", STDIO_HOSTS)
def test_a_host_snippet_starts_the_gateway_over_stdio(host: str, tmp_path: Path) -> None:
    entry = _gateway_entry(host, tmp_path)
    assert (entry.transport, entry.command, entry.args[:3]) == (
        "stdio",
        "mcp-actors",
        ("serve", "--config", DOC_CONFIG),
    )
    args = list(entry.args)
    args[2] = str(write_config(tmp_path / "mcp.json", {"fx": fixture_entry()}))
    params = StdioServerParameters(
        command=str(MCP_ACTORS),
        args=args,
        cwd=str(tmp_path),
        env={**entry.env, "MCP_ACTORS_CACHE_DIR": str(tmp_path / "cache")},
    )

    async def exercise() -> None:
        async with Client(params, mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"fx__echo", "fx__add"} <= names
            echoed = await client.call_tool("fx__echo", {"text": host})
            assert not echoed.is_error and echoed.structured_content == {"result": host}

    anyio.run(exercise)


def test_the_claude_code_command_adds_the_same_entry(tmp_path: Path) -> None:
    words = _console("claude mcp add --scope user")
    entry = _gateway_entry("claude-code", tmp_path)
    name, command = words[words.index("--") - 1], words[words.index("--") + 1 :]
    assert name == "mcp-actors"
    assert command == [entry.command, *entry.args]


def test_the_http_snippet_reaches_the_gateway_the_page_runs(tmp_path: Path) -> None:
    entry = _gateway_entry("vscode-http", tmp_path)
    assert entry.transport == "streamable-http"
    served = _console("mcp-actors serve")
    assert served == ["mcp-actors", "serve", "--config", DOC_CONFIG, "--http", "127.0.0.1:8765", "--watch"]
    url = urlsplit(entry.url)
    assert (url.hostname, url.port, url.path) == ("127.0.0.1", 8765, "/mcp")
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_entry()})
    # The page's command, on a free port instead of 8765.
    with GatewayProcess(config, "--watch", cache=tmp_path / "cache", log=tmp_path / "gateway.log") as gateway:

        async def exercise() -> None:
            async with Client(
                url._replace(netloc=f"127.0.0.1:{gateway.port}").geturl(), mode="legacy"
            ) as client:
                assert "fx__echo" in {tool.name for tool in (await client.list_tools()).tools}

        anyio.run(exercise)
        assert gateway.healthz()["servers"]["fx"]["state"] == "running"
