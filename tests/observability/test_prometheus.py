"""The HTTP gateway's /metrics: the runtime's OpenTelemetry metrics as Prometheus text."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.runtime.conftest import ROOT, stdio_server
from tests.servers.http_server import free_port

WAIT = 30.0


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": stdio_server()}}))
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "actors",
            "serve",
            "--config",
            str(config),
            "--no-cache",
            "--http",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "the gateway did not come up"
            assert process.poll() is None, "the gateway exited"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_metrics_count_the_calls_made_through_the_gateway(gateway: str) -> None:
    async def calls() -> None:
        async with Client(streamable_http_client(f"{gateway}/mcp"), mode="legacy") as client:
            for text in ("a", "b", "c"):
                assert not (await client.call_tool("fx__echo", {"text": text})).is_error

    anyio.run(calls)
    body = httpx2.get(f"{gateway}/metrics", timeout=10).text
    lines = [line for line in body.splitlines() if line.startswith("mcp_actors_calls_total{")]
    echo = [
        line
        for line in lines
        if 'namespace="fx"' in line and 'target="echo"' in line and 'outcome="ok"' in line
    ]
    assert echo, body[:2000]
    assert float(echo[0].rsplit(" ", 1)[1]) == 3.0
    assert "mcp_actors_call_duration_milliseconds_bucket" in body or "mcp_actors_call_duration" in body
