"""The gateway as its users run it: ``mcp-actors serve`` in a process of its own, over stdio or
Streamable HTTP, in front of real MCP servers (tests/servers), with real clients.

Every gateway here keeps its schema cache in the test's own folder (``MCP_ACTORS_CACHE_DIR``),
never the user's, and its stderr in a log file that failures print.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from actors.testing import procfs
from tests.conftest import wait_until
from tests.harness import forkserver
from tests.runtime.conftest import ROOT, stdio_server
from tests.servers.http_server import HTTPServer, gateway_port

HERE = Path(__file__).resolve().parent
MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
"""The console script, as a host's config entry names it."""
NODE_MODULES = HERE / "node_modules"
INSPECTOR = (
    NODE_MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)

WAIT = 60.0
"""Seconds any one step may take on a slow, busy machine before a test gives up."""


def missing(reason: str) -> NoReturn:
    """A dependency is missing: fail and say so, never skip (``make test`` installs it)."""
    pytest.fail(f"{reason} (run make test, which installs it)", pytrace=False)


def fixture(*args: str, **keys: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry for the fixture server (echo, add, sleep, ...) over stdio."""
    return stdio_server("fixture_server", *args, **keys)


def write_config(folder: Path, servers: dict[str, dict[str, Any]], **top: Any) -> Path:
    """A config file in ``mcpServers`` form (built-in tools off unless ``top`` says otherwise)."""
    path = folder / "gateway.json"
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}, **top}))
    return path


def gateway_env(folder: Path, **extra: str) -> dict[str, str]:
    """The environment of a gateway: its schema cache and the servers' markers in ``folder``."""
    markers = folder / "markers"
    markers.mkdir(exist_ok=True)
    return {
        **os.environ,
        "MCP_ACTORS_CACHE_DIR": str(folder / "cache"),
        "FIXTURE_MARKER_DIR": str(markers),
        **extra,
    }


def serve_args(config: Path, *more: str) -> list[str]:
    """``mcp-actors serve --config <config> ...``: the command line of a host's config entry."""
    return [str(MCP_ACTORS), "serve", "--config", str(config), *more]


class GatewayProcess:
    """``mcp-actors serve --http 127.0.0.1:<port>`` in a child process.

    Entering waits until ``/healthz`` answers; leaving stops it (SIGTERM, then SIGKILL) and
    reaps it. ``servers()`` are its children: the stdio servers it started.
    """

    def __init__(
        self,
        config: Path,
        folder: Path,
        *,
        host: str = "127.0.0.1",
        token: str | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.config = config
        self.folder = folder
        self.host = host
        self.port = 0
        self._port = port
        """The port to serve on (a free one by default): known before it starts, for a config
        that names the gateway's own URL."""
        self.token = token
        self.extra_args = extra_args
        self.env = env or {}
        self.log_path = folder / f"gateway-{id(self)}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> GatewayProcess:
        # Port 0 unless one is asked for: the gateway binds a free port itself and says which,
        # so no other test's process can take it between a look-up here and its bind.
        self.port = self._port or 0
        extra = {"MCP_ACTORS_TOKEN": self.token} if self.token else {}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                serve_args(self.config, "--http", f"{self.host}:{self.port}", *self.extra_args),
                cwd=ROOT,
                env=gateway_env(self.folder, **extra, **self.env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        if not wait_until(self._ready, WAIT, interval=0.1):
            self.stop()
            raise AssertionError(f"the gateway did not answer /healthz within {WAIT}s\n{self.log()}")
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the gateway exited with status {self.process.returncode}\n{self.log()}")
        # Only once its own bind succeeded: before, another test's gateway on a port asked
        # for could answer /healthz in its stead.
        bound = gateway_port(self.log_path.read_text(errors="replace"))
        if bound is None:
            return False
        self.port = bound
        try:
            return self.request("GET", "/healthz")[0] == 200
        except OSError:
            return False

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """One raw HTTP request to the gateway: its status and body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def healthz(self) -> dict[str, Any]:
        """``/healthz``, with the bearer token if the gateway has one (else servers go unsaid)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        status, body = self.request("GET", "/healthz", headers=headers)
        assert status == 200, (status, body)
        return dict(json.loads(body))

    def servers(self) -> set[int]:
        """The gateway's live child processes: the stdio servers it runs."""
        return procfs.child_pids(self.pid)

    def log(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return f"--- gateway stderr ---\n{text[-4000:]}"

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL if it lingers; its exit status (None if it had to be killed)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(WAIT)
                return None
        return process.returncode

    def kill(self) -> None:
        """SIGKILL: the gateway gets no chance to stop its servers."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            exc.add_note(self.log())
        children = self.servers() if self.process is not None and self.process.poll() is None else set()
        self.stop()
        # The servers go with the gateway: by its shutdown, else by their parent-death signal.
        wait_until(lambda: not any(procfs.is_alive(pid) for pid in children), WAIT)


@contextlib.contextmanager
def http_gateway(config: Path, folder: Path, **options: Any) -> Iterator[GatewayProcess]:
    with GatewayProcess(config, folder, **options) as gateway:
        yield gateway


@contextlib.contextmanager
def everything_gateway(
    folder: Path, backend: str, module: str = "tests.servers.everything_server", **keys: Any
) -> Iterator[GatewayProcess]:
    """``mcp-actors serve --http`` before tests/servers/everything_server.py (or ``module``),
    unprefixed, with sampling allowed. ``backend`` is the era the gateway speaks to it
    (``2026-07-28``, ``legacy`` or ``auto``), over Streamable HTTP when prefixed ``http-``, else
    over stdio; ``keys`` are more keys of its config entry."""
    with contextlib.ExitStack() as stack:
        if backend.startswith("http-"):
            remote = stack.enter_context(HTTPServer(module=module))
            everything: dict[str, object] = {"url": remote.url}
        else:
            command, *args = forkserver.python_module(module)
            everything = {"command": command, "args": args}
        era = backend.removeprefix("http-")
        everything |= {"cwd": str(ROOT), "prefix": False, "sampling": "allow", "protocol": era, **keys}
        config = write_config(folder, {"everything": everything})
        yield stack.enter_context(http_gateway(config, folder))


@pytest.fixture(scope="module")
def everything(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """`everything_gateway` before ``backend``, shared by the tests of a module that parametrize
    ``backend`` with ``scope="module"`` (each opens clients of its own, as separate agents
    would): started before the first of them, stopped after the last. The backend logs at
    ``debug`` (its ``logLevel`` key), as the suite's ``tools-call-with-logging`` expects."""
    folder = tmp_path_factory.mktemp(f"gateway-{backend}")
    with everything_gateway(folder, backend, logLevel="debug") as gateway:
        yield gateway


def node22() -> str:
    """The Node 22 installed beside the Inspector (``npm ci --prefix tests/gateway``)."""
    if not INSPECTOR.is_file():
        missing("the MCP Inspector is not installed: run `npm ci --prefix tests/gateway`")
    for candidate in (str(NODE_MODULES / ".bin" / "node"), shutil.which("node")):
        if candidate and os.access(candidate, os.X_OK):
            version = subprocess.run(
                [candidate, "--version"], capture_output=True, text=True, timeout=30, check=False
            ).stdout.strip()
            if version.startswith("v") and int(version[1:].split(".")[0]) >= 22:
                return candidate
    missing("no Node 22+ for the MCP Inspector (tests/gateway/node_modules/.bin/node is missing)")


def alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if procfs.is_alive(pid)}


def processes_mentioning(text: str) -> set[int]:
    """Live processes whose command line contains ``text`` (this one excepted)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command and procfs.is_alive(int(entry.name)):
            found.add(int(entry.name))
    return found
