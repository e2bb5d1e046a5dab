"""`actors.mcp.stdio_process`: finding the SDK's stdio process, resolving commands, exit texts.

The process is read out of the SDK's ``stdio_client`` generator frame, which the SDK does not
promise to keep: `test_the_sdk_still_keeps_the_stdio_process_where_we_read_it` pins the ``mcp``
versions that was verified on.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import signal
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from actors.loop import EventLoop
from actors.mcp.sdk_options import StdioCommand
from actors.mcp.stdio_process import SDK_VERIFIED, exit_text, resolve_command, sdk_process
from actors.mcp.transport import StartRefused
from tests.conftest import child_pids
from tests.mcp.conftest import stdio_transport


def _major_minor(version: str) -> tuple[int, int]:
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]]
    return numbers[0], numbers[1] if len(numbers) > 1 else 0


def test_the_sdk_still_keeps_the_stdio_process_where_we_read_it(loop: EventLoop) -> None:
    version = importlib.metadata.version("mcp")
    (low, high) = SDK_VERIFIED
    what_to_check = (
        "check that mcp/client/stdio.py `stdio_client` still keeps the process it starts in a local "
        "variable named `process` (actors.mcp.stdio_process.sdk_process reads it out of the suspended "
        "generator), then update SDK_VERIFIED"
    )
    transport = stdio_transport(protocol="legacy")
    loop.run(transport.connect, None, timeout=30)
    try:
        pid = transport.pid
        assert pid is not None, f"no stdio process found in mcp {version}'s stdio_client: {what_to_check}"
        assert pid == transport.spawned_pid
        assert pid in child_pids(), "the pid found is not a child of this process"
    finally:
        loop.run(transport.close, timeout=15)
    low_text, high_text = ".".join(map(str, low)), ".".join(map(str, high))
    assert low <= _major_minor(version) < high, (
        f"mcp {version} is outside the range verified for reading the stdio process "
        f"({low_text} <= mcp < {high_text}): {what_to_check}"
    )


def test_no_generator_frame_means_no_process_and_no_noise(caplog: pytest.LogCaptureFixture) -> None:
    # A spawn that failed leaves a finished generator (no frame): nothing to find, nothing to say.
    caplog.set_level(logging.DEBUG, logger="actors.mcp.stdio_process")
    finished: Any = SimpleNamespace(gen=SimpleNamespace(ag_frame=None))
    assert sdk_process(finished) is None
    assert sdk_process(object()) is None  # type: ignore[arg-type]
    assert not caplog.records


def test_a_frame_without_the_process_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    # What a future SDK that renamed its local would look like.
    caplog.set_level(logging.DEBUG, logger="actors.mcp.stdio_process")
    moved: Any = SimpleNamespace(gen=SimpleNamespace(ag_frame=SimpleNamespace(f_locals={"proc": object()})))
    assert sdk_process(moved) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "could not find the stdio server's process" in caplog.records[0].getMessage()


def test_resolve_command_finds_programs_on_the_servers_own_path(tmp_path: Path) -> None:
    program = tmp_path / "my-mcp-server"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    spec = StdioCommand("my-mcp-server", env={"PATH": str(tmp_path)})
    assert resolve_command(spec, "mine") == str(program)
    # A path with a separator is taken from cwd, and kept as given.
    assert resolve_command(StdioCommand("./my-mcp-server", cwd=str(tmp_path)), "mine") == "./my-mcp-server"
    assert resolve_command(StdioCommand(sys.executable), "py") == sys.executable


def test_resolve_command_refuses_what_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(StartRefused, match=r"ghost: command not found: 'no-such-mcp-server-command'"):
        resolve_command(StdioCommand("no-such-mcp-server-command"), "ghost")
    not_executable = tmp_path / "server.py"
    not_executable.write_text("print('hi')\n")
    with pytest.raises(StartRefused, match="not executable"):
        resolve_command(StdioCommand(str(not_executable)), "plain")
    with pytest.raises(StartRefused, match="not found"):
        resolve_command(StdioCommand(os.path.join("bin", "missing"), cwd=str(tmp_path)), "rel")


def test_exit_text() -> None:
    assert exit_text(None) == ""
    assert exit_text(0) == "exit status 0"
    assert exit_text(3) == "exit status 3"
    assert exit_text(-signal.SIGTERM) == "killed by SIGTERM"
    assert exit_text(-200) == "killed by signal 200"
