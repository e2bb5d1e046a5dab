"""``mcp-actors serve`` as a host starts it, through the console script: with no configuration
file it serves nothing (never the built-in default, whose tools write files and commit in the
folder the host picked) and says so in one line; with one, one line on stderr names the file
it serves, and stdout carries MCP alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import wait_until

MCP_ACTORS = Path(sys.executable).with_name("mcp-actors")
WAIT = 60.0
"""Seconds any one step may take on a slow, busy machine."""

WRITE_TOOLS = {"file-write", "file-edit", "git-commit"}


def host_env(folder: Path, **extra: str) -> dict[str, str]:
    """The environment a host gives the command: no ``$MCP_ACTORS_CONFIG`` unless ``extra``
    sets it, and a schema cache of the test's own."""
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    return {**env, "MCP_ACTORS_CACHE_DIR": str(folder / "cache"), **extra}


def processes_in(folder: Path) -> set[int]:
    """Live processes whose command line or working folder is ``folder`` or inside it."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(folder) in command or cwd == str(folder) or cwd.startswith(f"{folder}/"):
            found.add(int(entry.name))
    return found


@pytest.fixture
def empty_folder(tmp_path: Path) -> Path:
    """A working folder without an mcp.json, as a host picks it."""
    folder = tmp_path / "host-cwd"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("command", ["serve", "run"])
@pytest.mark.parametrize("transport", [[], ["--http", "127.0.0.1:0"]], ids=["stdio", "http"])
def test_serve_without_a_config_refuses_in_one_line(
    empty_folder: Path, tmp_path: Path, command: str, transport: list[str]
) -> None:
    done = subprocess.run(
        [str(MCP_ACTORS), command, *transport],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=empty_folder,
        env=host_env(tmp_path),
        timeout=WAIT,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    if command == "run":  # the former name says so first
        assert lines.pop(0).startswith("mcp-actors: `run` is `serve` now")
    [line] = lines
    assert line.startswith("error: no configuration to serve: pass --config FILE, set $MCP_ACTORS_CONFIG")
    assert f"put an mcp.json in {empty_folder} " in line
    assert not list(empty_folder.iterdir()), "nothing is written in the host's folder"


def test_a_host_entry_without_a_config_gets_no_tools(empty_folder: Path, tmp_path: Path) -> None:
    """``{"command": "mcp-actors", "args": ["serve"]}`` through the SDK's client: the connection
    fails (the host shows the server as failed), nothing is offered, no process is left."""
    errlog = tmp_path / "stderr.log"
    parameters = StdioServerParameters(
        command=str(MCP_ACTORS), args=["serve"], env=host_env(tmp_path), cwd=str(empty_folder)
    )

    async def connect() -> None:
        with errlog.open("w") as err, anyio.fail_after(WAIT):
            async with Client(stdio_client(parameters, errlog=err)) as client:
                pytest.fail(f"a client connected and was offered {await client.list_tools()}")

    with pytest.raises(ExceptionGroup) as failed:
        anyio.run(connect)
    assert failed.group_contains(MCPError, match="Connection closed", depth=None), failed.value
    assert errlog.read_text().startswith("error: no configuration to serve:")
    assert wait_until(lambda: not processes_in(empty_folder), WAIT), processes_in(empty_folder)


@pytest.mark.parametrize("found_by", ["--config", "$MCP_ACTORS_CONFIG", "./mcp.json"])
def test_serve_names_the_file_it_serves_on_stderr(tmp_path: Path, found_by: str) -> None:
    """Whichever way the file is found, stderr's first line names it (absolute: a host's log
    does not say which folder the host picked), and the tools are the file's own: a file that
    does not turn the built-in tools on has none."""
    folder = tmp_path / "project"
    folder.mkdir()
    config = folder / "mcp.json"
    demo = {"command": sys.executable, "args": ["-m", "actors.demo.server"], "cwd": str(folder)}
    config.write_text(json.dumps({"mcpServers": {"demo": demo}}))
    args, env = ["serve"], host_env(tmp_path)
    if found_by == "--config":
        args += ["--config", "mcp.json"]  # relative to the command's folder
    elif found_by == "$MCP_ACTORS_CONFIG":
        env["MCP_ACTORS_CONFIG"] = str(config)
    errlog = tmp_path / "stderr.log"
    parameters = StdioServerParameters(command=str(MCP_ACTORS), args=args, env=env, cwd=str(folder))

    async def tools() -> set[str]:
        with errlog.open("w") as err, anyio.fail_after(WAIT):
            async with Client(stdio_client(parameters, errlog=err)) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    names = anyio.run(tools)
    assert {"demo__echo", "demo__add"} <= names
    assert not {name for name in names if name.startswith("builtin") or name.split("__")[-1] in WRITE_TOOLS}
    first = errlog.read_text().splitlines()[0]
    assert first == f"mcp-actors serve: serving {config.resolve()}"
    assert wait_until(lambda: not processes_in(folder), WAIT), processes_in(folder)
