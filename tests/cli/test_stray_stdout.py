"""``mcp-actors call`` and ``tools`` on a server that prints to stdout and never speaks MCP: the
error quotes what it printed (tests/runtime/test_stray_stdout.py has the runtime's side)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from actors.cli import main
from tests.runtime.conftest import stdio_server
from tests.servers.banner_server import BANNER

# Long enough for a forked server to print its banner on a slow, busy machine.
CONNECT_TIMEOUT = 3


@pytest.mark.parametrize("command", ["call", "tools"])
def test_a_start_that_times_out_quotes_what_the_server_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "mcp.json"
    entry = stdio_server("banner_server", connectTimeout=CONNECT_TIMEOUT, maxRestarts=0)
    path.write_text(json.dumps({"mcpServers": {"b": entry}, "builtin": {"enabled": False}}))
    args = ["b/echo", '{"text": "x"}'] if command == "call" else []
    assert main([command, *args, "--config", str(path)], out=io.StringIO()) == 1
    err = capsys.readouterr().err
    lead = (
        "error: connection: server 'b' failed to start: " if command == "call" else "error: server 'b' did "
    )
    assert err.startswith(lead), err
    assert f"connection timed out after {CONNECT_TIMEOUT} s; " in err, err
    assert f"the server wrote to stdout what is not MCP: {BANNER[0]!r} | " in err, err
    assert BANNER[2] not in err, err
