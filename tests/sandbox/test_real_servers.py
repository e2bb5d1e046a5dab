"""Real servers work inside their sandbox (issue 38), through `Runtime`, on bubblewrap.

- ``@modelcontextprotocol/server-filesystem`` (tests/interop/node_modules) with its declared
  folder writable: lists, reads and writes there; what lies outside stays out of reach even where
  the server itself would allow it (it is given the home folder as an allowed directory), and a
  folder it is given but that is not declared writable is shown read-only: no write lands
  outside the declared folder.
- ``@modelcontextprotocol/server-memory`` writing its graph into its own data folder
  (``MEMORY_FILE_PATH``); without that variable its default file is inside its package, which
  the sandbox shows read-only: its first write fails, and says why (``EROFS``).
- ``mcp-server-time`` (PyPI) in both protocol eras.
- ``mcp-server-fetch`` (PyPI) with one loopback host on its network list: that host's page is
  fetched through the egress proxy, another loopback host is refused and sees no request.
- ``npx -y @modelcontextprotocol/server-everything@<version of tests/interop/package.json>``
  with a fresh data folder: npm installs it inside the sandbox through the egress proxy (only
  the registry npm names is reachable), and a second server whose code fetches another host is
  refused. This one needs the real npm registry (reachable from here and from CI).

Each test runs with ``$MCP_ACTORS_STATE_DIR`` set to a folder of its own, so every data folder
(``<state>/servers/<ns>/data``) starts empty. Files planted outside /tmp (a private /tmp is not
what may hide them) live under ``~/.cache/mcp-actors-tests/<unique>`` and are removed after.

Without bubblewrap (or user namespaces) the tests fail and say what to install: never skip.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import logging
import shutil
import subprocess
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult, load_config
from actors.mcp.sdk_transport import SDKTransport
from tests.interop.conftest import HERE as INTEROP
from tests.interop.conftest import npm_stdio, pypi_server
from tests.sandbox.conftest import require_bubblewrap

CALL_TIMEOUT = 180.0
"""Seconds for one call, the server's start in the sandbox included, on a slow, busy machine."""
INSTALL_TIMEOUT = 420.0
"""Seconds for ``npx -y`` to download and install server-everything (10-60 s as measured)."""
WAIT = 60.0

pytestmark = pytest.mark.timeout(900)


# --- bubblewrap, state, planted files --------------------------------------------------------


@pytest.fixture(autouse=True)
def bubblewrap() -> None:
    require_bubblewrap("the sandboxed real-server tests")


@pytest.fixture(autouse=True)
def fresh_protocol_memo() -> Iterator[None]:
    """Each test negotiates protocol eras from scratch: the memo of eras is process-wide."""
    saved = dict(SDKTransport.default_protocol_memo)
    SDKTransport.default_protocol_memo.clear()
    yield
    SDKTransport.default_protocol_memo.clear()
    SDKTransport.default_protocol_memo.update(saved)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$MCP_ACTORS_STATE_DIR`` for this test: every server's data folder starts empty."""
    folder = tmp_path / "state"
    folder.mkdir()
    monkeypatch.setenv("MCP_ACTORS_STATE_DIR", str(folder))
    return folder


def data_of(state: Path, namespace: str) -> Path:
    """A sandboxed server's own folder (its HOME and working folder)."""
    return state / "servers" / namespace / "data"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder of the host's outside /tmp that no server is given: removed afterwards."""
    base = Path.home() / ".cache" / "mcp-actors-tests" / uuid.uuid4().hex[:12]
    base.mkdir(parents=True)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(OSError):
            base.parent.rmdir()  # the shared parent, once no test uses it


# --- the runtime -----------------------------------------------------------------------------


@contextlib.contextmanager
def running(**servers: dict[str, Any]) -> Iterator[Runtime]:
    config = load_config({"mcpServers": servers, "builtin": {"enabled": False}})
    with Runtime.start(config) as rt:
        yield rt


def call(rt: Runtime, name: str, arguments: dict[str, Any], timeout: float = CALL_TIMEOUT) -> ToolResult:
    return rt.call_tool(name, arguments, timeout=timeout)


def structured(result: ToolResult) -> dict[str, Any]:
    assert result.success, f"{result.error_type}: {result.error}"
    assert result.output is not None, result
    content: dict[str, Any] = result.output["structuredContent"]
    return content


# --- server-filesystem -----------------------------------------------------------------------


def test_filesystem_server_writes_only_its_declared_folder(state: Path, outside: Path) -> None:
    declared = outside / "declared"
    shown = outside / "shown"  # given to the server as an allowed folder, not declared writable
    for folder in (declared, shown):
        folder.mkdir()
    (declared / "hello.txt").write_text("hello from the host\n")
    (shown / "readme.txt").write_text("shown read-only\n")
    planted = outside / "planted.txt"
    secret_text = f"planted-secret-{uuid.uuid4().hex[:12]}"
    planted.write_text(secret_text)
    home = Path.home()
    # The server allows all three folders; the sandbox is what keeps it to the declared one.
    entry = npm_stdio("server-filesystem", str(declared), str(shown), str(home))
    entry["sandbox"] = {"write": [str(declared)]}
    with running(fs=entry) as rt:
        listing = call(rt, "fs/list_directory", {"path": str(declared)})
        assert listing.success, listing
        assert listing.text == "[FILE] hello.txt", listing
        read = call(rt, "fs/read_text_file", {"path": str(declared / "hello.txt")})
        assert read.text == "hello from the host\n", read

        note = declared / "notes" / "todo.txt"
        assert call(rt, "fs/create_directory", {"path": str(note.parent)}).success
        wrote = call(rt, "fs/write_file", {"path": str(note), "content": "written in the sandbox\n"})
        assert wrote.success, wrote
        assert note.read_text() == "written in the sandbox\n"
        edited = call(
            rt, "fs/edit_file", {"path": str(note), "edits": [{"oldText": "written", "newText": "edited"}]}
        )
        assert edited.success, edited
        assert note.read_text() == "edited in the sandbox\n"
        found = call(rt, "fs/search_files", {"path": str(declared), "pattern": "**/*.txt"})
        assert str(note) in (found.text or ""), found

        # Outside the declared folder, where the server itself allows it (under the home folder):
        # not there at all, as the sandbox shows nothing of the host's home.
        secret = call(rt, "fs/read_text_file", {"path": str(planted)})
        assert secret.error_type == "server_error", secret
        assert "ENOENT" in (secret.error or ""), secret
        assert secret_text not in json.dumps(secret.model_dump()), secret
        listed = call(rt, "fs/list_directory", {"path": str(outside)})
        assert "planted.txt" not in (listed.text or listed.error or ""), listed
        stray = outside / "stray.txt"
        # The sandbox's own view of the home folder is bubblewrap's throw-away root (empty folders
        # under the bound ones): as measured, the write "succeeds" there and vanishes with the
        # sandbox (``--remount-ro /`` would refuse it); either way it never reaches the host.
        call(rt, "fs/write_file", {"path": str(stray), "content": "escaped"})
        assert not stray.exists()

        # The folder it was given but not declared writable: bound read-only by the launcher
        # (an argument that names a folder is shown); it reads there and writes nothing.
        assert call(rt, "fs/read_text_file", {"path": str(shown / "readme.txt")}).text == "shown read-only\n"
        refused = call(rt, "fs/write_file", {"path": str(shown / "new.txt"), "content": "nope"})
        assert refused.error_type == "server_error", refused
        assert "EROFS" in (refused.error or ""), refused
        moved = call(
            rt, "fs/move_file", {"source": str(shown / "readme.txt"), "destination": str(declared / "r.txt")}
        )
        assert not moved.success, moved

        status = rt.status("fs")[0]
        assert (status.state, status.restarts) == ("running", 0), status
    assert sorted(p.name for p in outside.iterdir()) == ["declared", "planted.txt", "shown"]
    assert sorted(p.name for p in shown.iterdir()) == ["readme.txt"]
    assert planted.read_text() == secret_text


# --- server-memory ---------------------------------------------------------------------------


def test_memory_server_writes_its_graph_in_its_data_folder(state: Path) -> None:
    memory_file = data_of(state, "mem") / "memory.jsonl"
    entry = npm_stdio("server-memory", env={"MEMORY_FILE_PATH": str(memory_file)}, sandbox=True)
    entities = [
        {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
        {"name": "Engine", "entityType": "machine", "observations": ["analytical"]},
    ]
    with running(mem=entry) as rt:
        created = structured(call(rt, "mem/create_entities", {"entities": entities}))
        assert [e["name"] for e in created["entities"]] == ["Ada", "Engine"]
        related = call(
            rt,
            "mem/create_relations",
            {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programs"}]},
        )
        assert related.success, related
        assert memory_file.is_file()

        rt.stop_server("mem")  # the next call starts it again, in a new sandbox: the graph was kept
        graph = structured(call(rt, "mem/search_nodes", {"query": "analytical"}))
        assert [e["name"] for e in graph["entities"]] == ["Engine"]
    lines = [json.loads(line) for line in memory_file.read_text().splitlines()]
    assert {(line["type"], line.get("name", line.get("from"))) for line in lines} == {
        ("entity", "Ada"),
        ("entity", "Engine"),
        ("relation", "Ada"),
    }
    assert sorted(p.name for p in memory_file.parent.iterdir()) == ["memory.jsonl"]


def test_memory_server_without_memory_file_path_fails_clearly(state: Path) -> None:
    """Its default file is beside its code (``dist/memory.jsonl``), read-only in the sandbox:
    it starts, and its first write fails naming the read-only file system. (Set
    ``MEMORY_FILE_PATH`` into its data folder, as the test above does.)"""
    package = INTEROP / "node_modules" / "@modelcontextprotocol" / "server-memory"
    before = sorted(p.name for p in package.rglob("*"))
    with running(mem=npm_stdio("server-memory", sandbox=True)) as rt:
        failed = call(
            rt, "mem/create_entities", {"entities": [{"name": "A", "entityType": "x", "observations": []}]}
        )
        assert failed.error_type == "server_error", failed
        assert "EROFS" in (failed.error or "") and "read-only file system" in (failed.error or ""), failed
        assert str(package) in (failed.error or ""), failed
        assert rt.status("mem")[0].state == "running"  # a refused write, not a crash
    assert sorted(p.name for p in package.rglob("*")) == before
    assert list(data_of(state, "mem").iterdir()) == []


# --- mcp-server-time -------------------------------------------------------------------------

ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@pytest.mark.parametrize("protocol", list(ERAS))
def test_time_server_in_each_era(state: Path, protocol: str) -> None:
    entry = {
        "command": pypi_server("mcp-server-time"),
        "args": ["--local-timezone", "UTC"],
        "protocol": protocol,
        "sandbox": True,
    }
    with running(time=entry) as rt:
        now = structured(call(rt, "time/get_current_time", {"timezone": "Asia/Tokyo"}))
        assert now["timezone"] == "Asia/Tokyo"
        assert now["datetime"].endswith("+09:00"), now
        converted = structured(
            call(
                rt,
                "time/convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"},
            )
        )
        assert converted["target"]["datetime"].endswith("17:30:00+05:30"), converted
        status = rt.status("time")[0]
        assert (status.state, status.protocol_version, status.restarts) == ("running", ERAS[protocol], 0)


# --- mcp-server-fetch ------------------------------------------------------------------------


class Page:
    """A loopback HTTP server of the host's (one thread): a plain-text page with a token, and a
    record of the requests it saw."""

    def __init__(self) -> None:
        self.token = f"page-{uuid.uuid4().hex[:12]}"
        self.requests: list[str] = []
        page = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page.requests.append(self.path)
                body = f"the allowed page says {page.token}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name=f"page-{self.port}")

    def url(self, path: str = "/page") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Page:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self._thread.join(WAIT)
        self.server.server_close()


def test_fetch_server_reaches_only_its_allowed_host(state: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Page() as allowed, Page() as denied:
        entry = {
            "command": pypi_server("mcp-server-fetch"),
            # Loopback pages: private addresses are refused by the server itself unless allowed.
            "args": ["--ignore-robots-txt", "--allow-private-ips"],
            "sandbox": {"network": [f"127.0.0.1:{allowed.port}"]},
        }
        with running(fetch=entry) as rt:
            fetched = call(rt, "fetch/fetch", {"url": allowed.url()})
            assert fetched.success, fetched
            assert f"the allowed page says {allowed.token}" in (fetched.text or ""), fetched
            assert allowed.requests == ["/page"]

            refused = call(rt, "fetch/fetch", {"url": denied.url()})
            assert refused.error_type == "server_error", refused
            assert f"Failed to fetch {denied.url()}" in (refused.error or ""), refused
            assert "403" in (refused.error or ""), refused  # the egress proxy's answer
            assert denied.token not in json.dumps(refused.model_dump())
            assert rt.status("fetch")[0].restarts == 0
        assert denied.requests == []
    denials = [
        r.getMessage()
        for r in caplog.records
        if r.name == "actors.sandbox.egress" and "denied" in r.getMessage()
    ]
    assert any(f"sandbox fetch: egress to 127.0.0.1:{denied.port} denied" in d for d in denials), denials
    assert not any(f":{allowed.port}" in d for d in denials), denials


# --- npx -y, through the registry ------------------------------------------------------------


def everything_version() -> str:
    manifest = json.loads((INTEROP / "package.json").read_text())
    version: str = manifest["dependencies"]["@modelcontextprotocol/server-everything"]
    return version


def npm_registry_host() -> str:
    """The host npm installs from here, as npm's own configuration names it."""
    done = subprocess.run(
        ["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=WAIT, check=True
    )
    host = urllib.parse.urlsplit(done.stdout.strip()).hostname
    assert host, done
    return host


def test_npx_server_installs_through_the_registry(state: Path, caplog: pytest.LogCaptureFixture) -> None:
    if shutil.which("npx") is None:
        pytest.fail("npx is not installed (Debian's npm: make test installs it)", pytrace=False)
    caplog.set_level(logging.INFO, logger="actors.sandbox.boundary")
    spec = f"@modelcontextprotocol/server-everything@{everything_version()}"
    entry = {"command": "npx", "args": ["-y", spec], "sandbox": True, "connectTimeout": INSTALL_TIMEOUT}
    with Page() as other, running(everything=entry, other=entry) as rt:
        # A fresh data folder: its npm cache is empty, npm must download through the proxy.
        started = time.monotonic()
        echoed = call(rt, "everything/echo", {"message": "hello from the host"}, timeout=INSTALL_TIMEOUT)
        assert echoed.success, echoed
        assert echoed.text == "Echo: hello from the host", echoed
        installed = data_of(state, "everything") / ".npm" / "_npx"
        assert any(installed.glob(f"*/node_modules/{spec.rsplit('@', 1)[0]}/package.json")), (
            f"not installed in its data folder ({time.monotonic() - started:.0f} s)"
        )

        # The second server: the same package, from a copy of the first one's npm cache (one
        # download per test); its code fetches a host that is not its registry.
        shutil.copytree(
            data_of(state, "everything") / ".npm", data_of(state, "other") / ".npm", symlinks=True
        )
        gzip = "other/gzip-file-as-resource"
        text = b"compressed in the sandbox\n"
        data_url = "data:text/plain;base64," + base64.b64encode(text).decode()
        local = call(
            rt, gzip, {"name": "local.gz", "data": data_url, "outputType": "resource"}, INSTALL_TIMEOUT
        )
        assert local.success, local  # the tool works: what follows is refused for its network
        for url in (other.url("/exfiltrate"), "https://pypi.org/simple/"):
            refused = call(rt, gzip, {"name": "remote.gz", "data": url, "outputType": "resource"})
            assert refused.error_type == "server_error", (url, refused)
            assert "fetch failed" in (refused.error or ""), (url, refused)
        assert other.requests == []
        for namespace in ("everything", "other"):
            assert rt.status(namespace)[0].restarts == 0
    # The one host opened for them: the registry npm names (no other network in the sandbox).
    registry = npm_registry_host()
    opened = [r.getMessage() for r in caplog.records if "its package registry" in r.getMessage()]
    assert opened and all(f"its package registry {registry}:" in line for line in opened), opened
