"""Third-party MCP servers for the interop suite: npm packages pinned in ``package.json`` and
its lock file here (``make test`` runs ``npm ci``), and the PyPI servers of the test extras.

The npm servers are started with ``node`` on their own JS entry point, never through ``npx``:
no wrapper process, no registry lookup at test time. HTTP servers listen on 127.0.0.1 on a
free port and are stopped and reaped by their fixture.

Without ``node_modules`` (or ``node``, or ``git``) the tests fail and say what to install: they
never skip (``make test`` behaves as CI on every machine).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from actors.mcp.sdk_transport import SDKTransport
from tests.servers.http_server import free_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE_MODULES = HERE / "node_modules"
VENV_BIN = Path(sys.executable).parent

_READY_TIMEOUT = 20.0
_STOP_TIMEOUT = 5.0

# Loaded into node before the server: a listen() on a bare port binds 127.0.0.1 rather than
# every interface (server-everything's HTTP transports take only a PORT, no host).
_LOOPBACK_ONLY = (
    'import net from "node:net";'
    "const listen = net.Server.prototype.listen;"
    "net.Server.prototype.listen = function (...args) {"
    '  const port = typeof args[0] === "number" || (typeof args[0] === "string" && /^[0-9]+$/.test(args[0]));'
    '  if (port && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");'
    "  return listen.apply(this, args);"
    "};"
)
LOOPBACK_IMPORT = "data:text/javascript," + urllib.parse.quote(_LOOPBACK_ONLY)


def missing(reason: str) -> NoReturn:
    """A dependency is missing: fail and say so (``make test`` installs the npm ones)."""
    pytest.fail(f"{reason} (the interop suite needs it: run make test, which installs it)", pytrace=False)


def node() -> str:
    """The ``node`` to run the npm servers with (any Node 18+; the conformance Node 22 will do)."""
    found = shutil.which("node") or str(ROOT / "tests" / "conformance" / "node_modules" / ".bin" / "node")
    if not os.access(found, os.X_OK):
        missing("node is not installed")
    return found


def npm_server(package: str) -> str:
    """The JS entry point (its ``bin``) of an installed npm server package."""
    folder = NODE_MODULES / "@modelcontextprotocol" / package
    manifest = folder / "package.json"
    if not manifest.is_file():
        missing(f"{package} is not installed: run `npm ci --prefix tests/interop` (or make test)")
    bin_entry = json.loads(manifest.read_text())["bin"]
    script = bin_entry if isinstance(bin_entry, str) else next(iter(bin_entry.values()))
    return str(folder / script)


def npm_stdio(package: str, *args: str, **entry: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running an npm server over stdio with ``node``."""
    return {"command": node(), "args": [npm_server(package), *args], **entry}


def pypi_server(name: str) -> str:
    path = VENV_BIN / name
    if not path.exists():
        missing(f"{name} is not installed (pip install -e '.[test]')")
    return str(path)


def config(servers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"mcpServers": servers, "builtin": {"enabled": False}}


@pytest.fixture(autouse=True)
def fresh_protocol_memo() -> Iterator[None]:
    """Each test negotiates protocol eras from scratch: the memo of eras is process-wide."""
    saved = dict(SDKTransport.default_protocol_memo)
    SDKTransport.default_protocol_memo.clear()
    yield
    SDKTransport.default_protocol_memo.clear()
    SDKTransport.default_protocol_memo.update(saved)


class NodeHTTPServer:
    """An npm MCP server serving HTTP from a child ``node`` on 127.0.0.1 and a free port."""

    def __init__(self, script: str, args: list[str], path: str, log: Path) -> None:
        self.script = script
        self.args = args
        self.path = path
        self.log = log
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> NodeHTTPServer:
        for _ in range(3):  # the free port may be taken before node binds it: try another
            self.port = free_port()
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(
                    [node(), "--import", LOOPBACK_IMPORT, self.script, *self.args],
                    env={**os.environ, "PORT": str(self.port)},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"{self.script} did not serve: {self.log.read_text()[-2000:]}")

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + _READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_TIMEOUT)


@pytest.fixture
def everything_http(tmp_path: Path) -> Iterator[NodeHTTPServer]:
    """server-everything over Streamable HTTP (``/mcp``)."""
    server = NodeHTTPServer(
        npm_server("server-everything"), ["streamableHttp"], "/mcp", tmp_path / "http.log"
    )
    yield server.start()
    server.stop()


@pytest.fixture
def everything_sse(tmp_path: Path) -> Iterator[NodeHTTPServer]:
    """server-everything over the legacy HTTP+SSE transport (``/sse``)."""
    server = NodeHTTPServer(npm_server("server-everything"), ["sse"], "/sse", tmp_path / "sse.log")
    yield server.start()
    server.stop()


@pytest.fixture(params=["stdio", "streamable-http", "sse"])
def everything(request: pytest.FixtureRequest) -> dict[str, Any]:
    """An ``mcpServers`` entry for server-everything over each transport (HTTP ones started)."""
    kind = request.param
    if kind == "stdio":
        return npm_stdio("server-everything", "stdio")
    server: NodeHTTPServer = request.getfixturevalue(
        "everything_http" if kind == "streamable-http" else "everything_sse"
    )
    return {"type": kind, "url": server.url}


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A git repository with one commit."""
    if shutil.which("git") is None:
        missing("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    identity = [
        "-c",
        "user.name=Interop",
        "-c",
        "user.email=interop@example.com",
        "-c",
        "init.defaultBranch=main",
    ]

    def git(*args: str) -> None:
        subprocess.run(["git", *identity, *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q")
    (repo / "README.md").write_text("hello\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "first commit")
    return repo
