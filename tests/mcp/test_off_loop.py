"""The transport does no blocking work on the shared event-loop thread.

Every server's traffic runs on that one thread: a ``PATH`` walk, an SSL context build (29-97 ms)
or an import there stalls them all. These tests record the thread that does such work.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
from typing import Any

import pytest

from actors.mcp import tls
from actors.mcp.loop import THREAD_NAME, EventLoop
from actors.mcp.sdk_transport import SDKOptions, SDKTransport, StdioCommand
from actors.mcp.transport import StartRefused
from tests.mcp.conftest import http_transport
from tests.servers.http_server import REPO_ROOT, HTTPServer


def _echo(loop: EventLoop, transport: SDKTransport) -> str:
    outcome = loop.run(transport.call_tool, "echo", {"text": "hi"}, 10, timeout=15)
    return str(outcome.content[0]["text"])


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads on which ``shutil.which`` ran."""
    threads: list[str] = []
    real_which = shutil.which

    def which(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_which(*args, **kwargs)

    monkeypatch.setattr(shutil, "which", which)
    return threads


def test_a_missing_command_is_refused_at_once_and_looked_up_off_the_loop(
    loop: EventLoop, lookups: list[str]
) -> None:
    transport = SDKTransport(StdioCommand("no-such-mcp-server-command"), SDKOptions(server_name="ghost"))
    with pytest.raises(StartRefused, match="ghost: command not found: 'no-such-mcp-server-command'"):
        loop.run(transport.connect, None, timeout=30)
    assert lookups, "the command was not looked up on PATH"
    assert THREAD_NAME not in lookups, "the PATH walk ran on the event-loop thread"
    assert transport.closed_reason is not None and "command not found" in transport.closed_reason
    assert transport.spawned_pid is None
    loop.run(transport.close, timeout=15)


def test_a_command_on_path_is_looked_up_off_the_loop(loop: EventLoop, lookups: list[str]) -> None:
    python = os.path.basename(sys.executable)
    transport = SDKTransport(
        StdioCommand(
            python,
            ("-m", "tests.servers.fixture_server"),
            {"PATH": os.path.dirname(sys.executable)},
            str(REPO_ROOT),
        ),
        SDKOptions(protocol="legacy", protocol_memo={}, server_name="fixture"),
    )
    loop.run(transport.connect, None, timeout=30)
    try:
        assert _echo(loop, transport) == "hi"
    finally:
        loop.run(transport.close, timeout=15)
    assert lookups and THREAD_NAME not in lookups, lookups


@pytest.fixture
def contexts_built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads on which an ``ssl.SSLContext`` was created; the default context forgotten."""
    threads: list[str] = []
    real_new = ssl.SSLContext.__new__

    # A subclass in its place would not do: ssl's own property setters name the class.
    def recording_new(cls: type[ssl.SSLContext], *args: Any, **kwargs: Any) -> ssl.SSLContext:
        threads.append(threading.current_thread().name)
        return real_new(cls, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "__new__", recording_new)
    monkeypatch.setattr(tls, "_context", None)
    return threads


def test_http_connects_build_no_ssl_context_on_the_loop(
    loop: EventLoop, http_server: HTTPServer, sse_server: HTTPServer, contexts_built: list[str]
) -> None:
    # Without a context of its own, the first connect builds the default one, off the loop.
    for _ in range(2):
        transport = http_transport(http_server.url, protocol="legacy")
        loop.run(transport.connect, None, timeout=30)
        try:
            assert _echo(loop, transport) == "hi"
        finally:
            loop.run(transport.close, timeout=15)
    assert contexts_built, "no SSL context was built: the test proves nothing"
    assert THREAD_NAME not in contexts_built, f"built on: {contexts_built}"
    assert len(contexts_built) == 1, f"built more than once: {contexts_built}"
    assert tls.default_ssl_context() is tls.default_ssl_context()

    transport = http_transport(sse_server.url, "sse")
    loop.run(transport.connect, None, timeout=30)
    try:
        assert _echo(loop, transport) == "hi"
    finally:
        loop.run(transport.close, timeout=15)
    assert len(contexts_built) == 1, f"the SSE client built its own: {contexts_built}"


def test_a_given_ssl_context_is_used_as_is(
    loop: EventLoop, http_server: HTTPServer, sse_server: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    monkeypatch.setattr(tls, "_context", None)

    def no_default() -> ssl.SSLContext:
        raise AssertionError("the default SSL context was built although one was given")

    monkeypatch.setattr("actors.mcp.sdk_transport.channel.default_ssl_context", no_default)
    for url, kind in ((http_server.url, "streamable-http"), (sse_server.url, "sse")):
        transport = http_transport(url, kind, ssl_context=given)  # type: ignore[arg-type]
        loop.run(transport.connect, None, timeout=30)
        try:
            assert _echo(loop, transport) == "hi"
        finally:
            loop.run(transport.close, timeout=15)


# A fresh interpreter: which modules does each kind's first session load, after the import of
# the transport module? Only the main thread runs besides the loop, and it waits.
IMPORTS_SCRIPT = """
import json, sys
from actors.mcp.loop import EventLoop
from actors.mcp.sdk_transport import HTTPEndpoint, SDKOptions, SDKTransport, StdioCommand
from tests.servers.http_server import HTTPServer

def session(loop, transport):
    loop.run(transport.connect, None, timeout=60)
    try:
        loop.run(transport.list_tools, timeout=30)
        loop.run(transport.call_tool, "echo", {"text": "x"}, 30, timeout=40)
        loop.run(transport.probe, timeout=30)
    finally:
        loop.run(transport.close, timeout=30)

fixture = (sys.executable, ("-m", "tests.servers.fixture_server"))
# Real processes: a fork server (tests/harness/forkserver.py) would import modules here.
with HTTPServer("streamable-http", real_process=True) as http, HTTPServer("sse", real_process=True) as sse:
    loaded = {}
    loop = EventLoop.start()
    try:
        cases = [
            ("stdio legacy", StdioCommand(*fixture, cwd=sys.argv[1]), "legacy"),
            ("stdio auto", StdioCommand(*fixture, cwd=sys.argv[1]), "auto"),
            ("streamable-http 2026-07-28", HTTPEndpoint(http.url), "2026-07-28"),
            ("streamable-http legacy", HTTPEndpoint(http.url), "legacy"),
            ("sse", HTTPEndpoint(sse.url, kind="sse"), "legacy"),
        ]
        for name, target, protocol in cases:
            before = set(sys.modules)
            session(loop, SDKTransport(target, SDKOptions(protocol=protocol, protocol_memo={})))
            loaded[name] = sorted(set(sys.modules) - before)
    finally:
        loop.stop()
print(json.dumps(loaded))
"""


def test_sessions_of_every_kind_import_nothing_on_the_loop() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_SCRIPT, str(REPO_ROOT)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(loaded) == {
        "stdio legacy",
        "stdio auto",
        "streamable-http 2026-07-28",
        "streamable-http legacy",
        "sse",
    }
    imported = {name: modules for name, modules in loaded.items() if modules}
    assert not imported, f"modules imported on the event loop (import them at module top): {imported}"
