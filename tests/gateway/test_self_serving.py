"""A configuration that holds its own ``serve`` entry, as docs/gateway.md's host entry pasted into
the file it names: the entry is refused, naming the server and the cause, and the rest is served;
no gateway starts another without end.

Two checks (`actors.mcp.served`): an entry that runs ``mcp-actors serve`` on the file being
served is refused before it starts, whichever way it names the file; what no entry shows (a
shell wrapping the command) meets the marker every started server carries, and the gateway it
starts refuses to serve the file again. A watchdog bounds each test: past a few processes it
kills them all, and the test fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import wait_until
from tests.gateway.conftest import MCP_ACTORS, WAIT, fixture, gateway_env, write_config
from tests.runtime.conftest import ROOT

LIMIT = 6
"""More processes than this in the test's folder is a runaway: a fixed config needs three."""


def processes_in(folder: Path) -> set[int]:
    """Live processes whose command line names ``folder`` or that run in it."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(folder) in command or cwd == str(folder):
            found.add(int(entry.name))
    return found


@pytest.fixture
def watchdog(tmp_path: Path) -> Iterator[Path]:
    """The test's folder, watched: past `LIMIT` processes in it, all are killed and the test fails;
    at the end none may be left."""
    folder = tmp_path / "host"
    folder.mkdir()
    done = threading.Event()
    peak: list[int] = [0]
    runaway = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            found = processes_in(folder)
            peak[0] = max(peak[0], len(found))
            if len(found) > LIMIT:
                runaway.set()
                for pid in found:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=watch, name="watchdog", daemon=True)
    thread.start()
    try:
        yield folder
    finally:
        left = wait_until(lambda: not processes_in(folder), WAIT)
        done.set()
        thread.join(WAIT)
    assert not runaway.is_set(), f"gateways started gateways: {peak[0]} processes, killed"
    assert left, f"processes left: {processes_in(folder)}"


def _config(folder: Path, entry: dict[str, Any]) -> Path:
    path = folder / "gateway.json"
    write_config(folder, {"fx": fixture(), "self": entry})
    return path


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    serve = str(MCP_ACTORS)
    cache = {"MCP_ACTORS_CACHE_DIR": str(path.parent / "inner-cache")}
    return {
        "--config": {"command": serve, "args": ["serve", "--config", str(path)], "env": cache},
        "relative": {
            "command": serve,
            "args": ["serve", "--config=gateway.json"],
            "cwd": str(path.parent),
            "env": cache,
        },
        "$MCP_ACTORS_CONFIG": {
            "command": serve,
            "args": ["serve"],
            "env": {**cache, "MCP_ACTORS_CONFIG": str(path)},
        },
        "sh -c": {"command": "sh", "args": ["-c", f"exec {serve} serve --config {path}"], "env": cache},
    }


@pytest.mark.parametrize("form", ["--config", "relative", "$MCP_ACTORS_CONFIG", "sh -c"])
def test_tools_refuses_the_entry_that_serves_its_own_file(watchdog: Path, form: str) -> None:
    path = watchdog / "gateway.json"
    _config(watchdog, _entries(path)[form])
    done = subprocess.run(
        [str(MCP_ACTORS), "tools", "--config", str(path)],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=gateway_env(watchdog),
        timeout=4 * WAIT,
    )
    assert "fx/echo" in done.stdout, (done.stdout, done.stderr)
    assert "self/" not in done.stdout
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: server 'self' "), line
    if form == "sh -c":  # refused one level down, by the gateway the shell started
        assert f"error: {path} is already served by the mcp-actors that started this one" in line, line
        return
    # An entry's env values are masked in messages as secrets: the file, when its env names it.
    named = "***" if form == "$MCP_ACTORS_CONFIG" else str(path)
    assert f"self: it runs `mcp-actors serve` on {named}, a configuration already being served" in line, line


def test_the_gateway_serves_the_rest(watchdog: Path) -> None:
    """The host entry of docs/gateway.md, pointed at the file that holds it: the host's client
    gets the other servers' tools."""
    path = watchdog / "gateway.json"
    _config(watchdog, _entries(path)["--config"])
    parameters = StdioServerParameters(
        command=str(MCP_ACTORS),
        args=["serve", "--config", str(path)],
        env=gateway_env(watchdog),
        cwd=str(ROOT),
    )
    errlog = watchdog.parent / "stderr.log"

    async def names() -> set[str]:
        with errlog.open("w") as err, anyio.fail_after(2 * WAIT):
            async with Client(stdio_client(parameters, errlog=err)) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    found = anyio.run(names)
    assert {"fx__echo", "fx__sleep"} <= found, errlog.read_text()
    assert not {name for name in found if name.startswith("self__")}


def test_a_gateway_refuses_a_file_served_up_the_chain(tmp_path: Path) -> None:
    """The marker alone: a gateway whose parent serves its file serves nothing and says why."""
    path = write_config(tmp_path, {"fx": fixture()})
    done = subprocess.run(
        [str(MCP_ACTORS), "serve", "--config", str(path)],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=gateway_env(tmp_path, MCP_ACTORS_SERVING=os.pathsep.join(["/elsewhere.json", str(path)])),
        timeout=WAIT,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {path} is already served by the mcp-actors that started this one (a config that serves"
        " itself, through a script or another file): not serving it again"
    ]


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
def test_every_server_started_carries_the_marker(tmp_path: Path, sandboxed: bool) -> None:
    """What a server sees of the chain: the files its runtime serves, over its entry's env; in
    a sandbox too."""
    seen = tmp_path / "seen" / "marker"
    seen.parent.mkdir()
    show = "import os, sys; open(sys.argv[1], 'w').write(os.environ.get('MCP_ACTORS_SERVING', '-'))"
    entry: dict[str, Any] = {"command": sys.executable, "args": ["-c", show, str(seen)]}
    if sandboxed:
        entry["sandbox"] = {"write": [str(seen.parent)]}
    else:
        entry["env"] = {"MCP_ACTORS_SERVING": "hidden"}
    path = write_config(tmp_path, {"shows": entry})
    subprocess.run(
        [str(MCP_ACTORS), "tools", "--no-cache", "--timeout", "30", "--config", str(path)],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env=gateway_env(
            tmp_path, MCP_ACTORS_SERVING="/up/the/chain.json", MCP_ACTORS_STATE_DIR=str(tmp_path / "state")
        ),
        timeout=2 * WAIT,
    )
    assert seen.read_text() == os.pathsep.join(["/up/the/chain.json", str(path)])


def test_check_names_the_entry_that_serves_its_own_file(watchdog: Path) -> None:
    """``check`` says it before anything runs, as the start would."""
    path = watchdog / "gateway.json"
    _config(watchdog, _entries(path)["--config"])
    done = subprocess.run(
        [str(MCP_ACTORS), "check", "--config", str(path)],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=gateway_env(watchdog),
        timeout=WAIT,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"error: server 'self': it runs `mcp-actors serve` on {path}, a configuration already being served"
        " (a config that serves itself starts gateways without end): remove that entry from the file"
    ]
