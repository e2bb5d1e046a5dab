"""Real servers for the client-surface tests: our own surface server (tests/servers/surface_server.py)
in both protocol eras over stdio and Streamable HTTP, and ``@modelcontextprotocol/server-everything``
over stdio and Streamable HTTP.

server-everything speaks only the handshake era (a 2026-07-28 pin fails to start: see
tests/interop/test_everything.py), so it runs pinned to ``legacy``; the surface server covers
2026-07-28.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult
from actors.mcp.loop import THREAD_NAME as LOOP_THREAD
from actors.mcp.sdk_transport import SDKTransport
from tests.conftest import wait_until
from tests.interop.conftest import NodeHTTPServer, npm_server, npm_stdio
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import HTTPServer

WAIT = 30.0
"""Seconds any one step may take on a slow, busy machine before a test gives up."""

ERAS = ("legacy", "2026-07-28")
KINDS = ("stdio", "streamable-http")

# The threads of the runtime's own actors: host code must never run on one.
_ACTOR_THREADS = ("ServerActor-", "RegistryActor-", "SupervisorActor-", "BuiltinActor-")

ServerEntry = Callable[..., dict[str, Any]]
"""Makes an ``mcpServers`` entry, lifecycle keys (``sampling=``, ``logLevel=``, ...) added."""


def config(servers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"mcpServers": servers, "builtin": {"enabled": False}}


def on_host_thread() -> bool:
    """True on a thread that is neither the event loop's nor an actor's."""
    name = threading.current_thread().name
    return name != LOOP_THREAD and not name.startswith(_ACTOR_THREADS)


def text_of(result: Any) -> str:
    """The text of a successful call's result."""
    assert result.success, result
    return str(result.text)


def json_of(result: Any) -> Any:
    return json.loads(text_of(result))


def contents_of(result: ToolResult) -> list[dict[str, Any]]:
    """The MCP contents of a successful read."""
    assert result.success, result
    assert result.output is not None
    return list(result.output["contents"])


def read_text(result: ToolResult) -> str:
    """The text of a successful read's one content."""
    [content] = contents_of(result)
    return str(content["text"])


class Updates:
    """An ``on_update`` callback that counts updates and where they ran."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.on_host_thread: list[bool] = []
        self.arrived = threading.Condition()

    def __call__(self, uri: str) -> None:
        with self.arrived:
            self.uris.append(uri)
            self.on_host_thread.append(on_host_thread())
            self.arrived.notify_all()

    def __len__(self) -> int:
        return len(self.uris)


def bump_until(rt: Runtime, updates: Updates, count: int, namespace: str = "s") -> None:
    """Change the surface server's counter until ``updates`` has seen ``count`` updates (a
    subscription takes effect a moment after it is made, so the first bumps may go unseen)."""

    def seen() -> bool:
        if len(updates) >= count:
            return True
        assert rt.call_tool(f"{namespace}/bump", {}, timeout=WAIT).success
        with updates.arrived:
            return updates.arrived.wait_for(lambda: len(updates) >= count, timeout=0.5)

    assert wait_until(seen, WAIT), f"{len(updates)} updates, wanted {count}"


@pytest.fixture(autouse=True)
def fresh_protocol_memo() -> Iterator[None]:
    """Each test negotiates protocol eras from scratch: the memo of eras is process-wide."""
    saved = dict(SDKTransport.default_protocol_memo)
    SDKTransport.default_protocol_memo.clear()
    yield
    SDKTransport.default_protocol_memo.clear()
    SDKTransport.default_protocol_memo.update(saved)


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    """Where the servers' ``sleep`` tools and ``surface://never`` write their markers."""
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@contextlib.contextmanager
def surface_server(kind: str, era: str, marker_dir: Path) -> Iterator[ServerEntry]:
    """Entries for the surface server over ``kind`` in ``era``; an HTTP server runs meanwhile."""
    env = {"FIXTURE_MARKER_DIR": str(marker_dir)}
    if kind == "stdio":

        def stdio(**keys: Any) -> dict[str, Any]:
            return stdio_server("surface_server", protocol=era, env=env, **keys)

        yield stdio
        return
    with HTTPServer("streamable-http", module="tests.servers.surface_server", env=env) as server:

        def http(**keys: Any) -> dict[str, Any]:
            return {"type": "streamable-http", "url": server.url, "protocol": era, **keys}

        yield http


@pytest.fixture(params=[(k, e) for k in KINDS for e in ERAS], ids=lambda p: f"{p[0]}-{p[1]}")
def surface(request: pytest.FixtureRequest, marker_dir: Path) -> Iterator[ServerEntry]:
    """The surface server over each transport, in each era (HTTP servers started here)."""
    kind, era = request.param
    with surface_server(kind, era, marker_dir) as entry:
        yield entry


@pytest.fixture(params=ERAS)
def surface_stdio(request: pytest.FixtureRequest, marker_dir: Path) -> Iterator[ServerEntry]:
    """The surface server over stdio, in each era: for what only a child process shows
    (its pid, a kill -9, lazy starts)."""
    with surface_server("stdio", request.param, marker_dir) as entry:
        yield entry


@pytest.fixture(params=KINDS)
def everything(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerEntry]:
    """server-everything over stdio or Streamable HTTP, in the handshake era."""
    if request.param == "stdio":

        def stdio(**keys: Any) -> dict[str, Any]:
            return npm_stdio("server-everything", "stdio", protocol="legacy", **keys)

        yield stdio
        return
    script = npm_server("server-everything")
    server = NodeHTTPServer(script, ["streamableHttp"], "/mcp", tmp_path / "http.log").start()

    def http(**keys: Any) -> dict[str, Any]:
        return {"type": "streamable-http", "url": server.url, "protocol": "legacy", **keys}

    yield http
    server.stop()
