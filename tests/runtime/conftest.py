"""Configurations of real MCP servers (the SDK fixture servers in tests/servers) for runtime tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import Runtime
from actors.runtime.clock import ManualClock
from tests.conftest import wait_until
from tests.harness import forkserver

ROOT = Path(__file__).resolve().parents[2]


def stdio_server(
    module: str = "fixture_server", *args: str, real_process: bool = False, **lifecycle: Any
) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs ``tests/servers/<module>.py`` over stdio: forked from a
    fork server that imported it (tests/harness/forkserver.py), or, with ``real_process``, as
    ``python -m`` in a process of its own (for a test that looks at the server's process)."""
    command, *argv = forkserver.python_module(f"tests.servers.{module}", *args, real_process=real_process)
    return {"command": command, "args": argv, "cwd": str(ROOT), **lifecycle}


def config(servers: dict[str, dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"mcpServers": servers, "builtin": {"enabled": False}, **top}


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


def armed(rt: Runtime, kind: str, namespace: str, timeout: float = 10.0) -> float:
    """Wait until the runtime's ``kind`` timer (idle, health, restart) of ``namespace`` is armed;
    return when it is due, in the runtime's clock seconds.

    The timer service is private to the runtime; a test on a `ManualClock` looks at it to know
    when to advance, since the supervisor arms a timer on its own thread, some time after the
    server said it is up.
    """
    due: float | None = None

    def check() -> bool:
        nonlocal due
        due = rt._timers.due((kind, namespace))
        return due is not None

    assert wait_until(check, timeout), f"no {kind} timer was armed for {namespace}: {rt.status(namespace)}"
    assert due is not None
    return due


def advance_to(clock: ManualClock, due: float) -> None:
    """Move the clock to ``due``: when it returns, every timer due by then has told its actor."""
    clock.advance(max(due - clock.monotonic(), 0.0))
