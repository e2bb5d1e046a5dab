"""Gateway replicas on Redis, as a team runs them: a real ``redis-server`` on a free loopback
port and ``mcp-actors serve --http ... --cluster redis://...`` replica processes in front of
real MCP servers (tests/servers), with real clients spread round-robin across the replicas as a
stateless load balancer would spread them.

Fixtures:
- ``redis_server``: a `RedisServer` (``.url``), one per test module, emptied (FLUSHDB) before
  each test; ``own_redis``: one of the test's own, for a test that stops it (``.stop()`` kills
  it, ``.start()`` brings it back on the same port), killed at the end.
- ``replicas``: a factory, ``replicas(3, config, token_file=None, env=None)``, returning
  started `Replica` processes (``.url``, ``.process``, ``.kill()`` = SIGKILL), each with a
  schema cache folder of its own (what they share goes through Redis, not the disk), all
  stopped at the end and checked to leave no server process behind.
- `RoundRobin`: one SDK client session per replica, requests spread in turn.

``make test`` installs redis-server through ``.ci/run``; without it these tests fail, saying so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import redis
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp_types import CallToolResult, Tool

from actors.testing import procfs
from tests.conftest import wait_until
from tests.gateway.conftest import WAIT, GatewayProcess, gateway_env, missing, serve_args
from tests.runtime.conftest import ROOT
from tests.servers.http_server import free_port

__all__ = [
    "WAIT",
    "RedisServer",
    "Replica",
    "RoundRobin",
    "redis_client",
    "text_of",
]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
PREFIX = "mcp-actors:"
"""The prefix of every key the cluster writes."""


class RedisServer:
    """``redis-server`` on a free loopback port, without persistence, in a child process."""

    def __init__(self, folder: Path) -> None:
        if not os.access(REDIS_SERVER, os.X_OK):
            missing(
                "redis-server is not installed: the cluster tests run a real Redis "
                "(.ci/run installs Debian's: apt-get install -y redis-server)"
            )
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = folder / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start it (again, on the same port) and wait until it answers PING."""
        assert self.process is None or self.process.poll() is not None, "redis-server is running"
        with self.log_path.open("ab") as log:
            # No persistence: a restarted Redis is empty, as after an outage that lost its data.
            options = {"port": str(self.port), "bind": "127.0.0.1", "save": "", "appendonly": "no"}
            self.process = subprocess.Popen(
                [
                    REDIS_SERVER,
                    *(x for k, v in options.items() for x in (f"--{k}", v)),
                    "--dir",
                    str(self.folder),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if not wait_until(self._answers, WAIT, interval=0.05):
            self.stop()
            raise AssertionError(f"redis-server did not answer within {WAIT}s\n{self.log()}")
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"redis-server exited with status {self.process.returncode}\n{self.log()}")
        try:
            with redis_client(self.url) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        """Kill it (SIGKILL: an outage, not a shutdown) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)

    def log(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return f"--- redis-server log ---\n{text[-2000:]}"


def redis_client(url: str) -> redis.Redis:
    """A synchronous client for the test's own look into Redis (short timeouts)."""
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, decode_responses=True)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A ``redis-server`` of the test's own, for a test that stops it (an outage): a shared
    one started again would be a child process the next test did not start."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def _module_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One ``redis-server`` for a test module (starting one per test cost more than the tests)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server(_module_redis: RedisServer) -> RedisServer:
    """The module's Redis, empty (FLUSHDB) for each test. A test that stops Redis takes
    `own_redis` instead."""
    with redis_client(_module_redis.url) as client:
        client.flushdb()
    return _module_redis


class Replica(GatewayProcess):
    """One ``mcp-actors serve --http 127.0.0.1:<free> --cluster <url>`` process."""

    def __init__(self, config: Path, folder: Path, cluster: str, **options: Any) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(config, folder, **options)
        self.cluster = cluster
        self.seen_servers: set[int] = set()
        """Server processes this replica was seen running (checked gone at teardown)."""

    def launch(self) -> Replica:
        """Start the process without waiting for it (`ready` waits)."""
        self.port = free_port()
        extra = {"MCP_ACTORS_TOKEN": self.token} if self.token else {}
        args = ("--http", f"{self.host}:{self.port}", "--cluster", self.cluster, *self.extra_args)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                serve_args(self.config, *args),
                cwd=ROOT,
                env=gateway_env(self.folder, **extra, **self.env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        return self

    def ready(self) -> Replica:
        if not wait_until(self._ready, WAIT, interval=0.1):
            self.stop()
            raise AssertionError(f"the replica did not answer /healthz within {WAIT}s\n{self.log()}")
        return self

    def start(self) -> Replica:
        return self.launch().ready()

    def servers(self) -> set[int]:
        found = super().servers()
        self.seen_servers |= found
        return found

    def kill(self) -> None:
        """SIGKILL: the replica gets no chance to stop its servers (they follow by their
        parent-death signal)."""
        if self.process is not None and self.process.poll() is None:
            self.servers()
        super().kill()

    def stop(self) -> int | None:
        if self.process is not None and self.process.poll() is None:
            self.servers()
        return super().stop()


ReplicaFactory = Callable[..., list[Replica]]


@pytest.fixture
def replicas(tmp_path: Path, redis_server: RedisServer) -> Iterator[ReplicaFactory]:
    """``replicas(n, config, token_file=None, env=None, extra_args=())``: ``n`` started replicas
    on ``redis_server``, the fixture servers' markers in ``tmp_path / "markers"`` (shared)."""
    started: list[Replica] = []
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)

    def make(
        count: int,
        config: Path,
        *,
        token_file: Path | None = None,
        env: dict[str, str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> list[Replica]:
        more = (*extra_args, *(("--token-file", str(token_file)) if token_file else ()))
        batch = [
            Replica(
                config,
                tmp_path / f"replica-{len(started) + i}",
                redis_server.url,
                extra_args=tuple(more),
                env={"FIXTURE_MARKER_DIR": str(markers), **(env or {})},
            )
            for i in range(count)
        ]
        started.extend(batch)
        # Started side by side: each takes seconds to import on a busy machine.
        for replica in batch:
            replica.launch()
        for replica in batch:
            replica.ready()
        return batch

    try:
        yield make
    finally:
        for replica in started:
            replica.stop()
        left = set().union(*(r.seen_servers for r in started)) if started else set()
        if not wait_until(lambda: not any(procfs.is_alive(pid) for pid in left), WAIT):
            alive = sorted(pid for pid in left if procfs.is_alive(pid))
            pytest.fail(f"server processes left behind by the replicas: {alive}")


class RoundRobin:
    """One SDK client session per replica; each request goes to the next replica in turn.

    ``async with RoundRobin(urls, era="legacy") as clients: await clients.call_tool(...)``.
    ``clients.sessions[i]`` is the session with replica ``i``.
    """

    def __init__(self, urls: Sequence[str], *, era: str = "legacy", token: str | None = None) -> None:
        self.urls = list(urls)
        self.era = era
        self.token = token
        self.sessions: list[Client] = []
        self._turn = 0
        self._stack = contextlib.AsyncExitStack()

    def _client(self, url: str) -> Client:
        if self.token is None:
            return Client(url, mode=self.era)  # type: ignore[arg-type]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        return Client(streamable_http_client(url, http_client=http), mode=self.era)  # type: ignore[arg-type]

    async def __aenter__(self) -> RoundRobin:
        try:
            for url in self.urls:
                self.sessions.append(await self._stack.enter_async_context(self._client(url)))
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stack.aclose()

    def next(self) -> Client:
        """The session the next request goes to."""
        session = self.sessions[self._turn % len(self.sessions)]
        self._turn += 1
        return session

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return await self.next().call_tool(name, arguments or {})

    async def list_tools(self) -> list[Tool]:
        return list((await self.next().list_tools()).tools)


def text_of(result: CallToolResult) -> str | None:
    """The one text of a successful tool result, else None."""
    if result.is_error or len(result.content) != 1:
        return None
    return getattr(result.content[0], "text", None)
