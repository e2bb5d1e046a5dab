"""The commands on a terminal, as a newcomer tries them: ``mcp-actors serve`` over stdio stops on
Ctrl-C (SIGINT) or SIGTERM as it does on a pipe, and stops its servers; Ctrl-C on ``call`` or
``tools`` ends quietly with status 130. The terminal is a pseudo-terminal (stdin, and stdout
for ``serve``); the signals are sent to the command's process."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.testing import procfs
from tests.conftest import wait_until
from tests.gateway.conftest import MCP_ACTORS, WAIT, fixture, gateway_env, serve_args, write_config
from tests.runtime.conftest import ROOT

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def _default_sigint() -> None:
    # As a shell starts a command: a test runner may ignore SIGINT, and the command inherits that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal: its controller's end and the end a command gets as its terminal."""
    controller, own = os.openpty()
    try:
        yield controller, own
    finally:
        for fd in (controller, own):
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    """What the terminal shows until ``needle`` (or the timeout)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_on_a_terminal_stops_on_a_signal(
    tmp_path: Path, terminal: tuple[int, int], signum: signal.Signals
) -> None:
    controller, own = terminal
    config = write_config(tmp_path, {"fx": fixture(lazyStart=False)})
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            serve_args(config),
            stdin=own,
            stdout=own,
            stderr=err,
            cwd=ROOT,
            env=gateway_env(tmp_path),
            preexec_fn=_default_sigint,  # noqa: PLW1509 - one disposition reset
        )
    try:
        # Serving: it answers what is typed on the terminal.
        os.write(controller, json.dumps(INITIALIZE).encode() + b"\n")
        shown = _read_until(controller, b'"result"', WAIT)
        assert b'"serverInfo"' in shown, (shown, log.read_text())
        assert wait_until(lambda: procfs.child_pids(process.pid), WAIT), "the server did not start"
        servers = procfs.child_pids(process.pid)

        process.send_signal(signum)

        assert process.wait(WAIT) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
    text = log.read_text()
    assert text.splitlines()[0] == f"mcp-actors serve: serving {config.resolve()}"
    assert "Traceback" not in text, text
    assert not any(procfs.is_alive(pid) for pid in servers), "a server outlived the gateway"


def _interrupted(command: list[str], terminal: tuple[int, int], folder: Path, started: Path) -> str:
    """Run ``command`` with a terminal for stdin, Ctrl-C it once ``started`` exists; its stderr."""
    log = folder / "command.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            command,
            stdin=terminal[1],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
            env=gateway_env(folder),
            preexec_fn=_default_sigint,  # noqa: PLW1509 - one disposition reset
        )
    try:
        assert wait_until(lambda: started.exists() or process.poll() is not None, WAIT)
        assert process.poll() is None, log.read_text()
        process.send_signal(signal.SIGINT)
        assert process.wait(WAIT) == 130, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
    return log.read_text()


def test_ctrl_c_on_call_ends_quietly(tmp_path: Path, terminal: tuple[int, int]) -> None:
    markers = {"FIXTURE_MARKER_DIR": str(tmp_path / "markers")}
    config = write_config(tmp_path, {"fx": fixture(env=markers)})
    command = [str(MCP_ACTORS), "call", "--config", str(config), "fx/sleep", '{"seconds": 600}']
    text = _interrupted(command, terminal, tmp_path, tmp_path / "markers" / "sleep.started")
    assert text == "", text
    pid = int((tmp_path / "markers" / "sleep.started").read_text())
    assert wait_until(lambda: not procfs.is_alive(pid), WAIT), "the server outlived the command"


def test_ctrl_c_on_tools_ends_quietly(tmp_path: Path, terminal: tuple[int, int]) -> None:
    """Interrupted while a server that never answers holds the listing."""
    started = tmp_path / "mute.started"
    mute = (
        "import os, sys, time; open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); "
        "os.replace(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(600)"
    )
    config = write_config(tmp_path, {"mute": {"command": sys.executable, "args": ["-c", mute, str(started)]}})
    command = [str(MCP_ACTORS), "tools", "--no-cache", "--config", str(config)]
    text = _interrupted(command, terminal, tmp_path, started)
    assert text == "", text
    pid = int(started.read_text())
    assert wait_until(lambda: not procfs.is_alive(pid), WAIT), "the server outlived the command"
