"""A sandboxed server's boundary over its lifecycle: built per start, off the loop; its cgroup
and route taken down with the process, restarts included; refused, never run without it, where
no sandbox can be built."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, load_config
from actors.sandbox.limits import _own_v1_path
from tests.conftest import wait_until

REPO = Path(__file__).resolve().parents[2]
COUNTER = str(REPO / "tests" / "servers" / "counter_server.py")
MCP_ACTORS = str(Path(sys.executable).with_name("mcp-actors"))


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("MCP_ACTORS_STATE_DIR", str(folder))
    return folder


@pytest.fixture
def cgroups() -> list[Path]:
    """This process's sandbox cgroup folders (v1 as root here; what the runtime made)."""
    tag = f"mcp-actors-{os.getpid()}"
    folders = []
    for controller in ("memory", "pids"):
        own = _own_v1_path(controller)
        if own is not None:
            folders.append(Path("/sys/fs/cgroup", controller, own.lstrip("/"), tag))
    return folders


def leaves(folders: list[Path]) -> list[Path]:
    return [leaf for folder in folders if folder.is_dir() for leaf in folder.iterdir() if leaf.is_dir()]


def counter(**sandbox: Any) -> dict[str, Any]:
    entry = {"command": sys.executable, "args": [COUNTER], "sandbox": sandbox or True, "restartBackoff": 0}
    return load_config({"mcpServers": {"c": entry}}, environ=dict(os.environ))


def test_each_start_has_its_own_boundary_taken_down_with_it(state: Path, cgroups: list[Path]) -> None:
    with Runtime.start(counter()) as rt:
        first = rt.call_tool("c/increment", {}, timeout=60)
        assert first.success, first.text
        assert first.output is not None
        inside = first.output["structuredContent"]["pid"]
        host_pid = rt.status("c")[0].pid
        assert host_pid is not None and inside != host_pid  # its own PID namespace
        assert (state / "servers" / "c" / "data").is_dir()
        if cgroups:
            assert len(leaves(cgroups)) == len(cgroups)  # one group per controller, this start's

        os.kill(host_pid, signal.SIGKILL)  # a crash: the supervisor restarts it
        assert wait_until(
            lambda: rt.status("c")[0].restarts == 1 and rt.status("c")[0].state == "running", 60
        )
        again = rt.call_tool("c/increment", {}, timeout=60)
        assert again.success, again.text
        assert again.output is not None and again.output["structuredContent"]["count"] == 1  # a new process
        if cgroups:
            assert wait_until(lambda: len(leaves(cgroups)) == len(cgroups), 10)  # the crashed one's is gone
    if cgroups:
        assert wait_until(lambda: not any(folder.exists() for folder in cgroups), 10)


def test_no_sandbox_no_start_where_bubblewrap_is_missing(state: Path, tmp_path: Path) -> None:
    """A machine without bubblewrap (a PATH without it): the server that asks for a sandbox is
    refused with a classified error saying what to install; it never runs unsandboxed."""
    marker = tmp_path / "ran"
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"], "sandbox": True}
    config.write_text(json.dumps({"mcpServers": {"s": entry}}))
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    checked = subprocess.run(
        [MCP_ACTORS, "check", "--config", str(config)],
        capture_output=True,
        check=False,
        text=True,
        env=env,
        timeout=120,
    )
    assert checked.returncode == 1, checked
    assert "asks for a sandbox, but bubblewrap (bwrap) is not installed: install bubblewrap" in checked.stderr
    assert "REFUSED" in checked.stdout
    called = subprocess.run(
        [MCP_ACTORS, "call", "s/anything", "{}", "--config", str(config)],
        capture_output=True,
        check=False,
        text=True,
        env=env,
        timeout=120,
    )
    assert called.returncode != 0, called
    assert "error: connection:" in called.stderr and "apt-get install bubblewrap" in called.stderr, (
        called.stderr
    )
    assert not marker.exists()
