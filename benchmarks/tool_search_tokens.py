"""What tool search saves: the tokens of the gateway's ``tools/list`` with and without it.

``python -m benchmarks.tool_search_tokens`` serves a real catalog through ``mcp-actors serve``
over stdio (server-everything, the fixture server, mcp-server-time and mcp-server-git), lists
its tools with the SDK's client, plain and with ``--tool-search``, and prints the token count of
the JSON each listing puts in a model's context, plus that of one ``search_tools`` answer.

Tokens are counted with a simple tokenizer: each run of letters and digits is one token, each
other non-space character another (``tiktoken`` is not a dependency). Real tokenizers split
long words further, so both counts are lower bounds; their ratio is what matters.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from benchmarks.common import ROOT

_TOKEN = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")
_EVERYTHING = ROOT / "tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
_BIN = Path(sys.executable).parent


def count_tokens(text: str) -> int:
    """Runs of letters and digits, and every other non-space character, one token each."""
    return len(_TOKEN.findall(text))


def catalog() -> dict[str, Any]:
    """The ``mcpServers`` of the measured catalog (servers that are not installed are left out)."""
    servers: dict[str, Any] = {
        "fixture": {
            "command": sys.executable,
            "args": ["-m", "tests.servers.fixture_server"],
            "cwd": str(ROOT),
        },
    }
    node = shutil.which("node")
    if node and _EVERYTHING.is_file():
        servers["everything"] = {"command": node, "args": [str(_EVERYTHING), "stdio"], "protocol": "legacy"}
    for name in ("mcp-server-time", "mcp-server-git"):
        if (_BIN / name).exists():
            args = ["--repository", str(ROOT)] if name == "mcp-server-git" else []
            servers[name.removeprefix("mcp-server-")] = {"command": str(_BIN / name), "args": args}
    return {"mcpServers": servers, "builtin": {"enabled": False}}


def _json(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))


async def _measure(config_path: Path, cache: Path, query: str) -> dict[str, Any]:
    readings: dict[str, Any] = {}
    for label, extra in (("plain", []), ("tool_search", ["--tool-search"])):
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "actors", "serve", "--config", str(config_path), *extra],
            cwd=str(ROOT),
            env={"MCP_ACTORS_CACHE_DIR": str(cache), "PATH": str(_BIN) + ":/usr/bin:/bin"},
        )
        async with Client(params, mode="legacy") as client:
            listed = await client.list_tools()
            text = _json(listed)
            readings[label] = {"tools": len(listed.tools), "bytes": len(text), "tokens": count_tokens(text)}
            if label == "tool_search":
                answer = await client.call_tool("search_tools", {"query": query, "limit": 5})
                found = _json(types.CallToolResult(content=answer.content))
                tools = (answer.structured_content or {}).get("tools", [])
                readings["search_answer"] = {
                    "query": query,
                    "limit": 5,
                    "tokens": count_tokens(found),
                    "names": [tool["name"] for tool in tools],
                }
    return readings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--query", default="current time in a timezone", help="the search_tools query")
    parser.add_argument("--json", action="store_true", help="print the readings as JSON")
    args = parser.parse_args(argv)
    config = catalog()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        readings = anyio.run(_measure, path, Path(folder) / "cache", args.query)
    readings["servers"] = sorted(config["mcpServers"])
    readings["tokenizer"] = "regex: [A-Za-z0-9]+ | one non-space character"
    if args.json:
        print(json.dumps(readings, indent=2))
        return 0
    plain, search = readings["plain"], readings["tool_search"]
    answer = readings["search_answer"]
    print(f"catalog: {', '.join(readings['servers'])}; tokenizer: {readings['tokenizer']}")
    for label, reading in (("without tool search", plain), ("with tool search   ", search)):
        size = f"{reading['tools']} tools, {reading['bytes']} bytes, {reading['tokens']} tokens"
        print(f"tools/list {label}: {size}")
    saved = plain["tokens"] - search["tokens"]
    print(f"saved per listing: {saved} tokens ({search['tokens'] / plain['tokens']:.1%} left)")
    print(
        f"one search_tools answer ({answer['query']!r}, limit {answer['limit']}): {answer['tokens']} tokens"
    )
    print(f"  found, best first: {', '.join(answer['names'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
