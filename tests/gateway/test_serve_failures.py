"""``mcp-actors serve --http`` as a newcomer runs it: the URL it serves on is said at the default
log level, and a gateway that cannot serve (its port taken, a host that does not resolve, a port
that does not exist) exits non-zero with one ``error:`` line, no uvicorn log line and no
traceback."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.gateway.conftest import WAIT, fixture, gateway_env, serve_args, write_config
from tests.runtime.conftest import ROOT


def _serve(config: Path, folder: Path, where: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        serve_args(config, "--http", where),
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=gateway_env(folder, **env),
        timeout=WAIT,
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A server that starts with the gateway."""
    return write_config(tmp_path, {"fx": fixture(lazyStart=False)})


def _one_error(done: subprocess.CompletedProcess[str], config: Path) -> str:
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and "ERROR:" not in done.stderr, done.stderr
    first, *rest = done.stderr.splitlines()
    assert first == f"mcp-actors serve: serving {config.resolve()}"
    [line] = rest
    assert line.startswith("error: "), done.stderr
    return line


def test_a_port_taken_is_one_error_and_a_failure(config: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(config, tmp_path, f"127.0.0.1:{port}")
    assert done.returncode == 1, done.stderr
    line = _one_error(done, config)
    assert line == f"error: cannot serve on 127.0.0.1:{port}: Address already in use"


def test_a_host_that_does_not_resolve_is_one_error_and_a_failure(config: Path, tmp_path: Path) -> None:
    # Off loopback a token is needed first: with one, the host is what fails.
    done = _serve(config, tmp_path, "no-such-host.invalid:8000", MCP_ACTORS_TOKEN="a-token")
    assert done.returncode == 1, done.stderr
    line = _one_error(done, config)
    assert line.startswith("error: cannot serve on no-such-host.invalid:8000: "), line


def test_a_port_out_of_range_is_a_usage_error(config: Path, tmp_path: Path) -> None:
    done = _serve(config, tmp_path, "127.0.0.1:99999")
    assert done.returncode == 2, done.stderr
    assert _one_error(done, config) == "error: --http wants a port from 0 to 65535, got 99999"


def test_the_url_is_said_at_the_default_log_level(config: Path, tmp_path: Path) -> None:
    """Port 0: the line names the port the system chose, where the gateway answers."""
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            serve_args(config, "--http", "127.0.0.1:0"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
            env=gateway_env(tmp_path),
        )
    try:
        pattern = re.compile(r"^mcp-actors serve: listening on http://127\.0\.0\.1:(\d+)/mcp$", re.M)
        assert wait_until(lambda: pattern.search(log.read_text()) or process.poll() is not None, WAIT)
        found = pattern.search(log.read_text())
        assert found, log.read_text()
        with socket.create_connection(("127.0.0.1", int(found.group(1))), timeout=WAIT) as connection:
            connection.sendall(
                b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:" + found.group(1).encode() + b"\r\n\r\n"
            )
            assert connection.recv(64).startswith(b"HTTP/1.1 200"), log.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
    assert "Traceback" not in log.read_text()
