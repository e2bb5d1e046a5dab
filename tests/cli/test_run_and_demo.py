"""The long-running commands, through their entry points: ``mcp-actors run`` (the former name of
``serve``) until a signal, and ``mcp-actors demo`` from start to end."""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.cli import main
from actors.testing import procfs
from actors.tools import ErrorType
from tests.conftest import wait_until
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import free_port

SCRIPT = Path(sys.executable).with_name("mcp-actors")


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``mcp-actors run --http`` on a fixture server that starts at once (``lazyStart: false``);
    its port."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": stdio_server(lazyStart=False)}}))
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    env["MCP_ACTORS_CACHE_DIR"] = str(tmp_path / "cache")
    port = free_port()
    process = subprocess.Popen(
        [str(SCRIPT), "run", "--config", str(config), "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
        # As a shell starts the command: a runner started in the background of a shell without
        # job control ignores SIGINT, and the command would inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - one disposition reset
    )
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()


def _server_pid(port: int) -> int | None:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/healthz")
        health = json.loads(connection.getresponse().read())
        connection.close()
    except OSError:
        return None
    server = health["servers"]["fx"]
    return int(server["pid"]) if server["state"] == "running" else None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_serves_like_serve_and_stops_cleanly_on_a_signal(
    running: tuple[subprocess.Popen[str], int], signum: signal.Signals
) -> None:
    process, port = running
    pids: list[int] = []

    def started() -> bool:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        pid = _server_pid(port)
        pids.extend([pid] if pid else [])
        return bool(pids)

    assert wait_until(started, 60, interval=0.1), "the lazyStart: false server did not start"
    assert pids[0] in procfs.child_pids(process.pid), "the server process is the command's child"

    process.send_signal(signum)

    assert process.wait(timeout=60) == 0
    assert process.stderr is not None
    errors = process.stderr.read()
    assert "`run` is `serve` now" in errors
    assert "Traceback" not in errors
    assert not procfs.is_alive(pids[0]), f"the server process {pids[0]} outlived the command"


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
