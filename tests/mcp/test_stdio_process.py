"""`actors.mcp.stdio_process`: resolving commands, the command line, the keeper thread, exit texts.

The stream over the process is tested in tests/mcp/test_stdio_stream.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from unittest import mock

import anyio
import pytest

from actors.mcp.sdk_options import StdioCommand
from actors.mcp.stdio_process import (
    PDEATHSIG_SCRIPT,
    StdioProcess,
    command_line,
    exit_text,
    parent_death_launcher,
    resolve_command,
)
from actors.mcp.transport import StartRefused
from tests.conftest import wait_until

PRINT_DEATH_SIGNAL = """
import ctypes
libc = ctypes.CDLL(None)
sig = ctypes.c_int()
libc.prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(sig.value)
"""


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read()
    except OSError:
        return b""


def test_the_command_line_goes_through_setpriv_where_it_can() -> None:
    spec = StdioCommand("server", ("--flag", "value"))
    argv = command_line(spec, "/usr/bin/server")
    launcher = parent_death_launcher()
    if sys.platform.startswith("linux") and shutil.which("setpriv"):
        # Debian's util-linux always has it; without it the cold start pays a Python start.
        assert launcher, "setpriv is here but cannot set the parent-death signal"
    if launcher:
        assert argv[: len(launcher)] == list(launcher)
        assert "--pdeathsig" in launcher
        assert argv[len(launcher) :] == [str(os.getpid()), "/usr/bin/server", "--flag", "value"]


@pytest.mark.skipif(not parent_death_launcher(), reason="no setpriv --pdeathsig here")
def test_setpriv_runs_nothing_for_a_parent_that_is_gone(tmp_path: Path) -> None:
    # The pid the launch names is not its parent (as when the host died between the fork and
    # the prctl): the server must never run, for no death signal would ever reach it.
    ran = tmp_path / "ran"
    argv = [*parent_death_launcher(), "1", "/bin/sh", "-c", f"touch {ran}"]
    assert subprocess.run(argv, timeout=30, check=False).returncode == 1
    assert not ran.exists()
    argv = [*parent_death_launcher(), str(os.getpid()), "/bin/sh", "-c", f"touch {ran}"]
    assert subprocess.run(argv, timeout=30, check=False).returncode == 0
    assert ran.exists()


@pytest.mark.skipif(not parent_death_launcher(), reason="no setpriv --pdeathsig here")
def test_setpriv_sets_the_death_signal_the_server_runs_with() -> None:
    argv = [*parent_death_launcher(), str(os.getpid()), sys.executable, "-c", PRINT_DEATH_SIGNAL]
    shown = subprocess.run(argv, timeout=30, check=True, capture_output=True, text=True).stdout
    assert shown.strip() == str(int(signal.SIGKILL))


def test_the_python_wrapper_is_the_fallback() -> None:
    spec = StdioCommand("server", ("--flag", "value"))
    parent_death_launcher.cache_clear()
    try:
        with mock.patch("shutil.which", return_value=None):
            argv = command_line(spec, "/usr/bin/server")
    finally:
        parent_death_launcher.cache_clear()
    if os.name == "posix":
        assert argv[:4] == [sys.executable, "-I", "-S", str(PDEATHSIG_SCRIPT)]
        assert argv[4:] == [f"--ppid={os.getpid()}", "/usr/bin/server", "--flag", "value"]
    else:
        assert argv == ["/usr/bin/server", "--flag", "value"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_server_outlives_the_thread_that_asked_for_its_start() -> None:
    # The parent-death signal fires when the *thread* that forked the server ends. Forking on
    # the caller's thread (or on a pooled worker, which anyio retires when idle) would kill the
    # server with that thread; the keeper thread lives as long as the server.
    spec = StdioCommand(sys.executable, ("-c", "import sys; sys.stdin.read()"))
    process = StdioProcess(command_line(spec, sys.executable), label="outliving")

    async def start() -> None:
        started = await process.start()
        # Past the wrapper's exec, the death signal is set: from now on it would fire.
        with anyio.fail_after(30):
            while not _cmdline(started.pid).startswith(f"{sys.executable}\0-c".encode()):
                await anyio.sleep(0.01)

    starter = threading.Thread(target=anyio.run, args=(start,), name="short-lived starter")
    starter.start()
    starter.join(60)
    assert not starter.is_alive()
    assert process.process is not None and process.process.stdin is not None
    process.process.stdin.close()  # a server still running reads the end of its input and exits 0
    assert wait_until(lambda: process.returncode is not None, 30)
    assert process.returncode == 0, exit_text(process.returncode)
    assert process.process.stdout is not None
    process.process.stdout.close()


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
