"""Two real MCP servers for the agent-framework adapter tests (tests/servers/agent_server.py over
stdio, namespaces ``alpha`` and ``beta``), lazily started, and what the tests do to them; and the
skills server (tests/servers/skills_server.py over stdio) on a folder of the test's own."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from actors import AsyncRuntime
from tests.runtime.conftest import config, stdio_server
from tests.servers.skills_server import write_sample

WAIT = 30.0
"""Seconds any one step may take on a slow, busy machine before a test gives up."""

NAMESPACES = ("alpha", "beta")


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def agent_config(marker_dir: Path) -> dict[str, Any]:
    """The ``mcpServers`` config of the two agent servers (no built-in tools, no schema cache)."""
    env = {"AGENT_MARKER_DIR": str(marker_dir)}
    return config(
        {ns: stdio_server("agent_server", "--name", ns, env=env, callTimeout=WAIT) for ns in NAMESPACES}
    )


@pytest.fixture
def skills_folder(tmp_path: Path) -> Path:
    """The skills server's sample skills (`tests.servers.skills_server.SAMPLE`), in a folder the
    test may edit: the server reads it anew for every request."""
    folder = tmp_path / "skills"
    write_sample(folder)
    return folder


def skills_server(folder: Path, *args: str) -> dict[str, Any]:
    """An ``mcpServers`` entry: the skills server over stdio, serving ``folder`` (``args``: its
    other options, ``--log-reads FILE``)."""
    return stdio_server("skills_server", "--skills", str(folder), *args, callTimeout=WAIT)


async def states(rt: AsyncRuntime) -> dict[str, str]:
    """Each server's lifecycle state."""
    return {s.namespace: str(s.state) for s in await rt.status()}


async def kill_server(rt: AsyncRuntime, namespace: str) -> int:
    """SIGKILL the running server's process; return its pid once the runtime saw it go."""
    [status] = await rt.status(namespace)
    assert status.state == "running" and status.pid, status
    os.kill(status.pid, signal.SIGKILL)

    async def gone() -> bool:
        # Not a pid of None while "running": the transport saw the death (the adapter let go of
        # the session) before the actor did, and a call sent now would fail as "not connected"
        # instead of waiting for the restart.
        [now] = await rt.status(namespace)
        return now.state != "running" or now.pid not in (None, status.pid)

    assert await eventually(gone, WAIT), f"the runtime did not see {namespace} (pid {status.pid}) die"
    return status.pid


async def eventually(predicate: Callable[[], Awaitable[bool]], timeout: float) -> bool:
    """Await ``predicate`` until it is true or ``timeout`` runs out; return its last value.
    The host loop goes on meanwhile (`tests.conftest.wait_until` would hold it)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        if asyncio.get_running_loop().time() >= deadline:
            return await predicate()
        await asyncio.sleep(0.02)
    return True
