"""The long-running commands, through their entry points: ``mcp-actors run`` until a signal, and
``mcp-actors demo`` from start to end."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors import procfs
from actors.cli import main
from actors.tools import ErrorType
from tests.runtime.conftest import stdio_server

SCRIPT = Path(sys.executable).with_name("mcp-actors")


class Lines:
    """A child's stdout, line by line, read on a thread so that waits have timeouts."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self.seen: list[str] = []
        self._stream = stream
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._read, args=(stream,), name="test-run-stdout", daemon=True
        )
        self._thread.start()

    def _read(self, stream: io.TextIOBase) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first line from now on that matches ``pattern``; fails at the end of output or on timeout."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(
                    f"no line matched {pattern!r} within {timeout} s; output so far:\n" + "\n".join(self.seen)
                )
            if line is None:
                pytest.fail(f"the output ended before a line matched {pattern!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if found := re.search(pattern, line):
                return found

    def close(self, timeout: float) -> None:
        """Once the child has exited: wait for the end of its output, then close the pipe."""
        self._thread.join(timeout)
        self._stream.close()

    def rest(self, timeout: float) -> list[str]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the output did not end"
        while (line := self._queue.get_nowait()) is not None:
            self.seen.append(line)
        return self.seen


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    """``mcp-actors run`` on a fixture server that starts at once (``lazyStart: false``)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": stdio_server(lazyStart=False)}}))
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    process = subprocess.Popen(
        [str(SCRIPT), "run", "--config", str(config), "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
        # As a shell starts the command: a runner started in the background of a shell without
        # job control ignores SIGINT, and the command would inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - one disposition reset
    )
    assert process.stdout is not None
    lines = Lines(process.stdout)
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        lines.close(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_shows_a_table_and_stops_cleanly_on_a_signal(
    running: tuple[subprocess.Popen[str], Lines], signum: signal.Signals
) -> None:
    process, lines = running
    lines.wait_for(r"^mcp-actors: running 1 servers from .*mcp\.json; Ctrl-C stops$", timeout=60)
    lines.wait_for(r"^server\s+state\s+transport\s+pid\s+restarts", timeout=60)
    pid = int(lines.wait_for(r"^fx\s+running\s+stdio\s+(\d+)\s", timeout=60).group(1))
    assert pid in procfs.child_pids(process.pid), "the server process is the command's child"

    process.send_signal(signum)

    assert process.wait(timeout=60) == 0
    output = lines.rest(timeout=10)
    assert output[-2:] == ["shutting down", "stopped"]
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read()
    assert not procfs.is_alive(pid), f"the server process {pid} outlived the command"


def test_demo_runs_to_completion_showing_the_lazy_start_and_the_restart(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["demo", "--workspace", str(tmp_path)], out=out) == 0
    text = out.getvalue()

    # 1. Nothing runs before the first call: the demo server is idle, with no process.
    first_table = text.split("1. Started.", 1)[1].split("2. ", 1)[0]
    assert re.search(r"^demo\s+idle\s+stdio\s+-\s", first_table, re.M), first_table
    assert re.search(
        r"2\. demo/echo -> 'hello from an actor' \(\d+ ms: the server started on this first call\)", text
    )
    assert "16 ok" in text

    # 6. The crash and the restart: a new process, one restart.
    crash = re.search(r"demo/crash kills the server process \(pid (\d+)\) mid-call", text)
    assert crash, text
    crashed = int(crash.group(1))
    restarted = re.search(r"the supervisor restarted it: pid (\d+), restarts (\d+)", text)
    assert restarted, text
    assert int(restarted.group(1)) != crashed
    assert restarted.group(2) == "1"
    assert re.search(r"demo/now -> \d{4}-\d\d-\d\dT", text)
    assert text.rstrip().endswith("8. Shut down: no server process is left.")
    # Failures read "<type>: <message>", never the type's label twice ("validation: validation error: ...").
    assert re.search(r"3\. A bad argument is refused before the server sees it:\n   validation: \S", text), (
        text
    )
    doubled = [t.value for t in ErrorType if f"{t.value}: {t.label}:" in text]
    assert not doubled, text
