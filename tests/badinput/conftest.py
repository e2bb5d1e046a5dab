"""Shared runtimes for the bad-input tests, and the checks every answer must pass."""

from __future__ import annotations

import concurrent.futures
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult
from actors.runtime.messages import CallTool
from actors.tools import ErrorType
from tests.conftest import child_pids, wait_until
from tests.harness.calibration import scaled
from tests.runtime.conftest import config, stdio_server

CLASSIFIED = frozenset(member.value for member in ErrorType)
"""Every `error_type` a failed call may carry."""

CALL_TIMEOUT = 10.0
"""The timeout of each fuzzed call."""
LATE = 1.0 + scaled(0.5)
"""A call answers within its timeout plus a second, and half a second more (on our machine:
scaled to this one's speed) for a loaded machine."""

# Servers that never stop or probe on their own during a test: what happens is what we did.
QUIET = {"healthCheckInterval": 0, "idleTimeout": 0, "restartBackoff": 0.05}


@dataclass(frozen=True)
class Answer:
    result: ToolResult
    seconds: float
    via: str


def call(
    rt: Runtime, name: str, arguments: Any, *, via: str = "facade", timeout: float = CALL_TIMEOUT
) -> Answer:
    """Call ``namespace/tool`` through the facade, ``registry.tell`` or ``registry.ask``; time it.

    A reply that never comes is reported as a failed result of type ``hang``, which no test accepts.
    """
    started = time.monotonic()
    if via == "facade":
        result = rt.call_tool(name, arguments, timeout=timeout)
        return Answer(result, time.monotonic() - started, via)
    namespace, _, tool = name.partition("/")
    message = CallTool(namespace, tool, arguments, timeout)
    if via == "ask":
        reply = rt.registry.ask(message, timeout=5)
        assert reply is message.reply
    else:
        rt.registry.tell(message)
    try:
        result = message.reply.result(timeout=timeout + 10)
    except concurrent.futures.TimeoutError:
        result = ToolResult.fail("hang", f"no answer within {timeout + 10}s")
    return Answer(result, time.monotonic() - started, via)


def assert_classified(answer: Answer, timeout: float = CALL_TIMEOUT) -> None:
    """A `ToolResult`, a success or a failure of a known type, in time."""
    result = answer.result
    assert isinstance(result, ToolResult), result
    if not result.success:
        assert result.error_type in CLASSIFIED, result
        assert result.error, result
    assert answer.seconds <= timeout + LATE, f"answered after {answer.seconds:.2f}s ({answer.via}): {result}"


def assert_serving(rt: Runtime, namespace: str, restarts: int = 0) -> None:
    """The server still answers, and was not restarted behind our back."""
    echo = rt.call_tool(f"{namespace}/echo", {"text": "still serving"}, timeout=30)
    assert echo.success and echo.text == "still serving", echo
    status = rt.status(namespace)[0]
    assert status.state == "running", status
    assert status.restarts == restarts, status


@pytest.fixture(scope="module")
def mcp_runtime() -> Iterator[Runtime]:
    """One runtime for a module: the fixture server ``fx`` and the big-payload server ``big``.

    Both are started before the first test, so the per-test leak check sees their processes
    as already there; a test that makes one restart leaves a new process and fails that check.
    """
    threads_before = set(threading.enumerate())
    children_before = child_pids()
    servers = {"fx": stdio_server(**QUIET), "big": stdio_server("big_server", **QUIET)}
    rt = Runtime.start(config(servers))
    try:
        for namespace in servers:
            rt.start_server(namespace)
        yield rt
    finally:
        rt.shutdown()
    assert wait_until(lambda: child_pids() <= children_before, 10), "server processes left behind"
    assert wait_until(lambda: set(threading.enumerate()) <= threads_before, 10), "threads left behind"


def _git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=fuzz", "-c", "user.email=fuzz@example.com", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def builtin_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """One runtime with only the built-in tools, confined to a fresh git workspace."""
    workspace = tmp_path_factory.mktemp("workspace")
    (workspace / "README.md").write_text("# fuzz\nhello world\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hello')\n" * 20)
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "initial")
    threads_before = set(threading.enumerate())
    rt = Runtime.start({"mcpServers": {}, "builtin": {"enabled": True, "workspace": str(workspace)}})
    try:
        yield rt
    finally:
        rt.shutdown()
    assert wait_until(lambda: set(threading.enumerate()) <= threads_before, 10), "threads left behind"
