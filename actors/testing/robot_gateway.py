"""Robot keywords for the gateway: ``mcp-actors serve`` over Streamable HTTP, driven as a
subprocess and called as an MCP client (the SDK's). Part of `actors.testing.robotlib`."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from robot.utils import timestr_to_secs  # type: ignore[import-untyped]

__all__ = ["GatewayKeywords"]


class GatewayKeywords:
    """Start, check, call and stop one gateway process per suite."""

    _gateway: subprocess.Popen[bytes] | None = None
    _gateway_port = 0
    _gateway_result: types.CallToolResult | None = None

    def start_gateway(self, config: str, *options: str, timeout: str | float = "60 s") -> str:
        """Start ``mcp-actors serve --config CONFIG --http 127.0.0.1:PORT [OPTIONS]`` on a free
        port; wait until ``/healthz`` answers. Returns the MCP endpoint's URL."""
        self.stop_gateway()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self._gateway_port = int(probe.getsockname()[1])
        address = f"127.0.0.1:{self._gateway_port}"
        command = [sys.executable, "-m", "actors", "serve", "--config", config, "--http", address, *options]
        self._gateway = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + timestr_to_secs(timeout)
        while True:
            if self._gateway.poll() is not None:
                raise AssertionError(f"the gateway exited with status {self._gateway.returncode}")
            try:
                self.gateway_health()
                return f"http://{address}/mcp"
            except OSError:
                if time.monotonic() > deadline:
                    self.stop_gateway()
                    raise AssertionError(f"the gateway did not serve within {timeout}") from None
                time.sleep(0.05)

    def stop_gateway(self) -> None:
        """Stop the gateway (SIGTERM) and fail unless it stopped cleanly (exit status 0)."""
        process, self._gateway = self._gateway, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)
                raise AssertionError("the gateway did not stop within 30 s of SIGTERM") from None
        if process.returncode != 0:
            raise AssertionError(f"the gateway exited with status {process.returncode}")

    def gateway_health(self) -> dict[str, Any]:
        """What the gateway's ``/healthz`` says: ``{"status": "ok", "servers": {ns: {"state": ...}}}``."""
        url = f"http://127.0.0.1:{self._require_gateway()}/healthz"
        with urllib.request.urlopen(url, timeout=10) as response:
            health: dict[str, Any] = json.loads(response.read())
        return health

    def gateway_server_state_should_be(self, namespace: str, state: str) -> None:
        """Fail unless ``/healthz`` reports ``namespace`` in ``state`` (idle, running, ...)."""
        servers = self.gateway_health()["servers"]
        actual = servers.get(namespace, {}).get("state")
        if actual != state:
            raise AssertionError(f"{namespace} is {actual}, expected {state} (healthz: {servers})")

    def list_gateway_tools(self, era: str = "legacy") -> list[str]:
        """The tool names the gateway lists to an MCP client (the SDK's) in ``era``."""

        async def listed() -> list[str]:
            async with Client(self._gateway_url(), mode=era) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        return anyio.run(listed)

    def gateway_tools_should_include(self, *names: str) -> None:
        """Fail unless the gateway lists every one of ``names``."""
        listed = self.list_gateway_tools()
        missing = [name for name in names if name not in listed]
        if missing:
            raise AssertionError(f"the gateway does not list {missing}; it lists {listed}")

    def call_gateway_tool(self, name: str, arguments: str = "{}", era: str = "legacy") -> str:
        """Call a tool through the gateway as an MCP client; returns its text (also when it
        is an error result: check with `Gateway Result Should Succeed`)."""

        async def called() -> types.CallToolResult:
            async with Client(self._gateway_url(), mode=era) as client:
                return await client.call_tool(name, json.loads(arguments))

        self._gateway_result = anyio.run(called)
        return "\n".join(
            block.text for block in self._gateway_result.content if isinstance(block, types.TextContent)
        )

    def gateway_result_should_succeed(self) -> None:
        """Fail if the last `Call Gateway Tool` gave an error result."""
        if self._gateway_result is None:
            raise AssertionError("no tool has been called through the gateway yet")
        if self._gateway_result.is_error:
            raise AssertionError(f"the call failed: {self._gateway_result.content}")

    def _gateway_url(self) -> str:
        return f"http://127.0.0.1:{self._require_gateway()}/mcp"

    def _require_gateway(self) -> int:
        if self._gateway is None:
            raise AssertionError("no gateway is running: use Start Gateway first")
        return self._gateway_port
