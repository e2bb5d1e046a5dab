"""Pinning through the gateway (``mcp-actors serve --http``), with a real client: a tool that
changed between two starts of the gateway is left out of ``tools/list`` and refused, the
operator's page and the audit show it, and ``mcp-actors approve`` in another process brings it
back to the running gateway."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from actors import load_config
from actors.pins import FilePinStore, pin_key
from tests.conftest import wait_until
from tests.gateway.conftest import MCP_ACTORS, WAIT, GatewayProcess, gateway_env
from tests.pins.conftest import NS, config, drifting
from tests.runtime.conftest import ROOT

pytestmark = pytest.mark.timeout(240)

ECHO = f"{NS}__echo"


async def tool_names(url: str) -> set[str]:
    async with Client(url) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def call(url: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """``(is_error, text)`` of one call."""
    async with Client(url) as client:
        result = await client.call_tool(name, arguments)
    return bool(result.is_error), " ".join(getattr(block, "text", "") for block in result.content)


def write(folder: Path, **saying: Any) -> Path:
    path = folder / "gateway.json"
    entry = {**config(drifting(**saying)), "access": {"audit": {"file": str(folder / "audit.jsonl")}}}
    path.write_text(json.dumps(entry))
    return path


def test_a_changed_tool_is_held_through_the_gateway_until_approved(tmp_path: Path) -> None:
    env = {"MCP_ACTORS_PINS_DIR": str(tmp_path / "pins")}
    with GatewayProcess(write(tmp_path), tmp_path, env=env) as gateway:
        assert ECHO in anyio.run(tool_names, gateway.url)  # the first start: pinned
    with GatewayProcess(write(tmp_path, description="Echo, then exfiltrate."), tmp_path, env=env) as gateway:
        # Listed from the schema cache as pinned until the server runs; the first call starts it,
        # which lists the changed tool: the call that waited for the start is refused.
        assert ECHO in anyio.run(tool_names, gateway.url)
        failed, text = anyio.run(call, gateway.url, ECHO, {"text": "hi"})
        assert failed and "not offered until approved" in text
        names = anyio.run(tool_names, gateway.url)
        assert ECHO not in names and f"{NS}__steady" in names
        status, body = gateway.request("GET", "/operator.json")
        assert status == 200, body
        [held] = json.loads(body)["held"]
        assert (held["namespace"], held["kind"], held["name"], held["changed"]) == (
            NS,
            "tools",
            "echo",
            ["description"],
        )

        # Written to the pins folder on a host thread of the gateway, a moment after it held it.
        store, key = FilePinStore(tmp_path / "pins"), pin_key(load_config(gateway.config).servers[NS])
        assert wait_until(lambda: bool((kept := store.load(key)) and kept.held), WAIT)
        approved = subprocess.run(
            [str(MCP_ACTORS), "approve", NS, "echo", "--config", str(gateway.config)],
            cwd=ROOT,
            env=gateway_env(tmp_path, **env),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert approved.returncode == 0, approved.stderr
        assert "tool 'echo' approved" in approved.stdout
        # The running gateway reads the approval from the pins folder.
        assert wait_until(lambda: ECHO in anyio.run(tool_names, gateway.url), WAIT, interval=0.5), (
            gateway.log()
        )
        assert anyio.run(call, gateway.url, ECHO, {"text": "back"}) == (False, "back")
        assert json.loads(gateway.request("GET", "/operator.json")[1])["held"] == []
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    pins = [
        (r["method"], r["outcome"], r["server"], r.get("tool"), r["reason"])
        for r in records
        if r["method"].startswith("pins/")
    ]
    assert pins == [
        ("pins/held", "denied", NS, "echo", "changed: description"),
        ("pins/approved", "ok", NS, "echo", "changed: description"),
    ]
