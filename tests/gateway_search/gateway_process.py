"""The gateway as a host runs it, for tests: ``mcp-actors serve`` in a child process, reached
with the SDK's `Client` over stdio (the client starts it) or Streamable HTTP (`GatewayProcess`).

Each gateway keeps its schema cache in a folder of the test's own, so no test sees what
another (or the user's own gateway) cached.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.harness import forkserver
from tests.servers.http_server import REPO_ROOT, gateway_port

__all__ = [
    "KINDS",
    "WAIT",
    "GatewayProcess",
    "connect",
    "fixture_entry",
    "stdio_parameters",
    "wait_for",
    "write_config",
]

WAIT = 60.0
"""Seconds any one step may take on a slow, busy machine before a test gives up."""

KINDS = ("stdio", "http")

_STOP_TIMEOUT = 20.0


def fixture_entry(*args: str, **keys: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running tests/servers/fixture_server.py over stdio (forked from a
    fork server that imported it, tests/harness/forkserver.py)."""
    command, *argv = forkserver.python_module("tests.servers.fixture_server", *args)
    return {
        "command": command,
        "args": argv,
        "cwd": str(REPO_ROOT),
        **keys,
    }


def write_config(path: Path, servers: dict[str, Any], **top: Any) -> Path:
    """Write an ``mcpServers`` file (built-in tools off), replacing it whole (as an editor saves)."""
    staged = path.with_name(path.name + ".new")
    staged.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}, **top}), "utf-8")
    os.replace(staged, path)
    return path


def _environment(cache: Path) -> dict[str, str]:
    return {"MCP_ACTORS_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO_ROOT)}


def stdio_parameters(config: Path, *args: str, cache: Path) -> StdioServerParameters:
    """How a host's config entry starts the gateway: ``mcp-actors serve --config FILE ...``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "actors", "serve", "--config", str(config), *args],
        cwd=str(REPO_ROOT),
        env=_environment(cache),
    )


class GatewayProcess:
    """``mcp-actors serve --http 127.0.0.1:PORT`` in a child process; its stderr kept in a file."""

    def __init__(self, config: Path, *args: str, cache: Path, log: Path) -> None:
        self.config = config
        self.args = args
        self.cache = cache
        self.log = log
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> GatewayProcess:
        """Start it and wait until ``/healthz`` answers."""
        self.port = 0
        # The log may hold an earlier gateway's lines: only what this one writes names its port.
        start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "actors",
                    "serve",
                    "--config",
                    str(self.config),
                    "--http",
                    "127.0.0.1:0",
                    *self.args,
                ],
                cwd=REPO_ROOT,
                env={**os.environ, **_environment(self.cache)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited with {self.process.returncode}:\n{self.stderr()}")
            bound = gateway_port(self.log.read_bytes()[start:].decode(errors="replace"))
            if bound is not None:
                self.port = bound
                with contextlib.suppress(OSError):
                    self.healthz()
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the gateway did not serve within {WAIT}s:\n{self.stderr()}")

    def healthz(self) -> dict[str, Any]:
        """What ``/healthz`` says: each server's state, pid, restarts and last error."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def stderr(self) -> str:
        return self.log.read_text("utf-8", errors="replace")

    def hang_up(self) -> None:
        """SIGHUP: reload the config file."""
        assert self.process is not None
        self.process.send_signal(signal.SIGHUP)

    def stop(self) -> int | None:
        """SIGTERM, and reap it; its exit status."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(_STOP_TIMEOUT)
        return process.returncode

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            exc.add_note(f"--- gateway stderr ---\n{self.stderr()[-4000:]}")
        self.stop()


@contextlib.asynccontextmanager
async def connect(
    kind: str,
    config: Path,
    *args: str,
    tmp_path: Path,
    era: str = "legacy",
    **client: Any,
) -> AsyncIterator[tuple[Client, GatewayProcess | None]]:
    """A client of a gateway serving ``config`` over ``kind`` (``stdio`` or ``http``), with
    the gateway process when the test started it (HTTP)."""
    cache = tmp_path / "schema-cache"
    if kind == "stdio":
        async with Client(stdio_parameters(config, *args, cache=cache), mode=era, **client) as session:
            yield session, None
        return
    with GatewayProcess(config, *args, cache=cache, log=tmp_path / "gateway.log") as gateway:
        async with Client(gateway.url, mode=era, **client) as session:
            yield session, gateway


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``predicate`` on the test's loop until it holds; fail saying ``what`` did not happen."""
    try:
        with anyio.fail_after(timeout):
            while not predicate():
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what} did not happen within {timeout}s") from None
