"""Fixtures for the MCP transport tests: an event loop, event recorders, transports to test servers."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
import pytest

from actors.loop import EventLoop
from actors.mcp.sdk_transport import HTTPEndpoint, SDKOptions, SDKTransport, StdioCommand
from tests.servers.http import REPO_ROOT, HTTPServer

FIXTURE_MODULE = "tests.servers.fixture_server"


class Recorder:
    """`TransportEvents` that tests can wait on."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.reasons: list[str] = []
        self.tools_changed = threading.Event()
        self.tools_changed_count = 0
        self.threads: set[str] = set()

    def on_closed(self, reason: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.reasons.append(reason)
        self.closed.set()

    def on_tools_changed(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.tools_changed_count += 1
        self.tools_changed.set()


def stdio_transport(
    *server_args: str,
    module: str = FIXTURE_MODULE,
    memo: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    **options: Any,
) -> SDKTransport:
    """A stdio transport to a server module of ``tests.servers`` (not yet connected)."""
    return SDKTransport(
        StdioCommand(sys.executable, ("-m", module, *server_args), env, str(REPO_ROOT)),
        SDKOptions(
            protocol_memo=memo if memo is not None else {},
            server_name=module.rsplit(".", 1)[-1],
            **options,
        ),
    )


def http_transport(
    url: str,
    kind: Literal["streamable-http", "sse"] = "streamable-http",
    headers: dict[str, str] | None = None,
    **options: Any,
) -> SDKTransport:
    """A streamable HTTP or SSE transport to ``url`` with a memo of its own (not yet connected)."""
    options.setdefault("protocol_memo", {})
    options.setdefault("server_name", kind)
    return SDKTransport(HTTPEndpoint(url, headers, kind), SDKOptions(**options))


@pytest.fixture(scope="module")
def loop() -> Iterator[EventLoop]:
    """One event loop for the module's transports, stopped at the end.

    Its one worker thread (the transports look commands up on it) is started here, before the
    first test, so that the per-test leak check does not count it: anyio keeps it until the loop
    ends.
    """
    event_loop = EventLoop.start()
    event_loop.run(anyio.to_thread.run_sync, _nothing, timeout=30)
    yield event_loop
    event_loop.stop()


def _nothing() -> None:
    """Runs on a worker thread, to start it."""


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def marker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where fixture servers started by this module record ``sleep`` starts and cancellations."""
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
def http_server(marker_dir: Path) -> Iterator[HTTPServer]:
    """The fixture server over streamable HTTP, shared by the module."""
    with HTTPServer("streamable-http", env={"FIXTURE_MARKER_DIR": str(marker_dir)}) as server:
        yield server


@pytest.fixture(scope="module")
def sse_server(marker_dir: Path) -> Iterator[HTTPServer]:
    """The fixture server over SSE, shared by the module."""
    with HTTPServer("sse", env={"FIXTURE_MARKER_DIR": str(marker_dir)}) as server:
        yield server
