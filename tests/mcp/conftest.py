"""Fixtures for the MCP transport tests: an event loop, event recorders, transports to test servers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
import pytest

from actors.mcp.loop import EventLoop
from actors.mcp.sdk_transport import HTTPEndpoint, SDKOptions, SDKTransport, StdioCommand
from tests.harness import forkserver
from tests.servers.http_server import REPO_ROOT, HTTPServer

FIXTURE_MODULE = "tests.servers.fixture_server"


class Recorder:
    """`TransportEvents` that tests can wait on."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.reasons: list[str] = []
        self.tools_changed = threading.Event()
        self.tools_changed_count = 0
        self.threads: set[str] = set()
        self.news: list[tuple[str, tuple[Any, ...]]] = []
        """Every other event: ``("resources_changed", ())``, ``("resource_updated", (uri,))``,
        ``("log", (level, logger, data))``, ..."""
        self._changed = threading.Condition()

    def on_closed(self, reason: str, *, auth: bool = False) -> None:
        self.threads.add(threading.current_thread().name)
        self.reasons.append(reason)
        self.closed.set()

    def on_tools_changed(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.tools_changed_count += 1
        self.tools_changed.set()
        self._note("tools_changed")

    def on_resources_changed(self) -> None:
        self._note("resources_changed")

    def on_prompts_changed(self) -> None:
        self._note("prompts_changed")

    def on_resource_updated(self, uri: str) -> None:
        self._note("resource_updated", uri)

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        self._note("log", level, logger, data)

    def _note(self, news: str, *args: Any) -> None:
        with self._changed:
            self.threads.add(threading.current_thread().name)
            self.news.append((news, args))
            self._changed.notify_all()

    def count(self, news: str, *args: Any) -> int:
        """How many times ``news`` came (with exactly ``args``, if given)."""
        with self._changed:
            return sum(1 for n, a in self.news if n == news and (not args or a == args))

    def logs(self, text: str) -> list[tuple[str, str | None, Any]]:
        """The log messages whose data mentions ``text``, as ``(level, logger, data)``."""
        with self._changed:
            return [(a[0], a[1], a[2]) for n, a in self.news if n == "log" and text in str(a[2])]

    def wait_for(self, ready: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Wait until ``ready()`` (checked on each event) or ``timeout``."""
        with self._changed:
            return self._changed.wait_for(ready, timeout)


def stdio_transport(
    *server_args: str,
    module: str = FIXTURE_MODULE,
    memo: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    real_process: bool = False,
    **options: Any,
) -> SDKTransport:
    """A stdio transport to a server module of ``tests.servers`` (not yet connected): forked from
    a fork server that imported it, or ``python -m`` with ``real_process`` (tests/harness/forkserver.py)."""
    command, *argv = forkserver.python_module(module, *server_args, real_process=real_process)
    return SDKTransport(
        StdioCommand(command, tuple(argv), env, str(REPO_ROOT)),
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
