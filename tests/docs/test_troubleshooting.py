"""docs/troubleshooting.md quotes what the program prints: each message the page quotes (the
first code span of a table row's first cell) is provoked for real, by the command, the gateway
or the runtime, and the page's quote must match it (``...`` standing for any text).

Every quote of the page has its case here, and every case a quote: a message that changes, or a
row added without a case, fails."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, ToolResult
from tests.gateway.conftest import http_gateway

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
WAIT = 60.0
DEMO = {"command": sys.executable, "args": ["-m", "actors.demo.server"], "healthCheckInterval": 0}

pytestmark = pytest.mark.timeout(240)


def quotes() -> list[str]:
    """The first code span of each table row's first cell (rows without one quote nothing)."""
    found = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith(("| you see", "|---")):
            continue
        first_cell = line[2:].split(" | ", 1)[0]
        span = re.search(r"`([^`]+)`", first_cell)
        if span:
            found.append(span[1])
    return found


def matches(quote: str, line: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in quote.split("..."))
    return re.fullmatch(pattern, line, re.S) is not None


# --- the command and the gateway ---------------------------------------------------------------


def command(folder: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """The lines ``mcp-actors ARGS`` prints (stdout and stderr), run in ``folder``."""
    done = subprocess.run(
        [sys.executable, "-m", "actors", *args],
        cwd=folder,
        env=env if env is not None else dict(os.environ, MCP_ACTORS_CACHE_DIR=str(folder / "cache")),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    return (done.stdout + done.stderr).splitlines()


def config(folder: Path, servers: dict[str, Any]) -> str:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "builtin": {"enabled": False}}))
    return str(path)


def serve_without_config(folder: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_CONFIG"}
    return command(folder, "serve", env=env)


def unpinned(folder: Path) -> list[str]:
    return command(
        folder, "check", "--config", config(folder, {"x": {"command": "npx", "args": ["-y", "pkg"]}})
    )


def bad_value(folder: Path) -> list[str]:
    return command(
        folder, "check", "--config", config(folder, {"x": {"command": "a", "idleTimeout": "soon"}})
    )


def unset_variable(folder: Path) -> list[str]:
    path = config(folder, {"x": {"command": "a", "env": {"T": "${TOKEN}"}}})
    env = {k: v for k, v in os.environ.items() if k != "TOKEN"}
    return command(folder, "check", "--config", path, env=env)


def port_in_use(folder: Path) -> list[str]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        return command(folder, "serve", "--config", config(folder, {}), "--http", f"127.0.0.1:{port}")


def no_token_off_loopback(folder: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_ACTORS_TOKEN"}
    env["MCP_ACTORS_CACHE_DIR"] = str(folder / "cache")
    return command(folder, "serve", "--config", config(folder, {}), "--http", "0.0.0.0:0", env=env)


def foreign_host(folder: Path) -> list[str]:
    with http_gateway(Path(config(folder, {})), folder) as gateway:
        headers = {"Host": "evil.example", "Content-Type": "application/json"}
        status, body = gateway.request("POST", "/mcp", b"{}", headers)
    assert status == 421
    return [body.decode()]


# --- the runtime ---------------------------------------------------------------------------------


def on_runtime(servers: dict[str, Any], act: Callable[[Runtime], ToolResult]) -> Callable[[Path], list[str]]:
    """A case: ``act`` on a runtime of ``servers``; the error of the `ToolResult` it returns."""

    def case(folder: Path) -> list[str]:
        with Runtime.start({"mcpServers": servers, "builtin": {"enabled": False}}) as rt:
            result = act(rt)
        assert not result.success and result.error is not None, result
        return [result.error]

    return case


def warm_then(act: Callable[[Runtime], ToolResult]) -> Callable[[Runtime], ToolResult]:
    def run(rt: Runtime) -> ToolResult:
        assert rt.call_tool("x/echo", {"text": "up"}, timeout=WAIT).success
        return act(rt)

    return run


def until_failed(rt: Runtime) -> ToolResult:
    for _ in range(10):
        rt.call_tool("x/crash", {}, timeout=WAIT)
        if rt.status("x")[0].state == "failed":
            break
    result = rt.call_tool("x/echo", {"text": "again"}, timeout=WAIT)
    assert result.error_type == ErrorType.FAILED, result
    return result


def after_shutdown(folder: Path) -> list[str]:
    rt = Runtime.start({"mcpServers": {"x": DEMO}, "builtin": {"enabled": False}})
    rt.shutdown()
    result = rt.call_tool("x/echo", {"text": "late"}, timeout=WAIT)
    assert result.error is not None
    return [result.error]


PY = sys.executable
CASES: dict[str, Callable[[Path], list[str]]] = {
    "error: no configuration to serve: ...": serve_without_config,
    "warning: server 'x': npx -y 'pkg' names no version: ...": unpinned,
    "- server 'x': key 'idleTimeout': Input should be a valid number, ...": bad_value,
    "- server 'x': environment variable ${TOKEN} is not set and has no default": unset_variable,
    "connection error: server 'x' failed to start: connection failed: x: command not found: ...": on_runtime(
        {"x": {"command": "no-such-command-for-the-page"}}, lambda rt: rt.call_tool("x/t", {}, timeout=WAIT)
    ),
    "connection error: server 'x' failed to start: connection failed: x: the server ... during the "
    "handshake; exit status ...; stderr: ...": on_runtime(
        {"x": {"command": PY, "args": ["-c", "import sys; sys.exit('no such database')"]}},
        lambda rt: rt.call_tool("x/t", {}, timeout=WAIT),
    ),
    "connection error: server 'x' failed to start: connection timed out after ...": on_runtime(
        {"x": {"command": PY, "args": ["-c", "import time; time.sleep(120)"], "connectTimeout": 1}},
        lambda rt: rt.call_tool("x/t", {}, timeout=WAIT),
    ),
    "not started: server 'x' is not running and lazyStart is off; start it first": on_runtime(
        {"x": {**DEMO, "lazyStart": False}}, lambda rt: rt.call_tool("x/echo", {"text": "a"}, timeout=WAIT)
    ),
    "timeout: ... got no answer within ... s; the server was told to cancel it": on_runtime(
        {"x": DEMO}, warm_then(lambda rt: rt.call_tool("x/sleep", {"seconds": 30}, timeout=0.5))
    ),
    "timeout: server 'x' was not ready within ... s (state ...)": on_runtime(
        {"x": {"command": PY, "args": ["-c", "import time; time.sleep(120)"]}},
        lambda rt: rt.call_tool("x/t", {}, timeout=0.5),
    ),
    "connection error: x: the server ...; exit status ... (during tools/call ...)": (
        on_runtime({"x": DEMO}, warm_then(lambda rt: rt.call_tool("x/crash", {}, timeout=WAIT)))
    ),
    "failed: server 'x' is failed after ... restarts (...); start it explicitly to try again": on_runtime(
        {"x": {**DEMO, "maxRestarts": 1, "restartBackoff": 0.05}}, until_failed
    ),
    "validation error: x/add: ...": on_runtime(
        {"x": DEMO}, lambda rt: rt.call_tool("x/add", {"a": "two"}, timeout=WAIT)
    ),
    "not found: tool ... is not offered by server 'x' (its tools: ...)": on_runtime(
        {"x": DEMO}, lambda rt: rt.call_tool("x/no_such_tool", {}, timeout=WAIT)
    ),
    "cancelled: the runtime is shut down": after_shutdown,
    "error: cannot serve on ...: Address already in use": port_in_use,
    "error: serving on ... (not loopback) needs a bearer token: ...": no_token_off_loopback,
    "Invalid Host header": foreign_host,
}


def test_every_quote_of_the_page_has_its_case() -> None:
    assert sorted(quotes()) == sorted(CASES)


@pytest.mark.parametrize("quote", list(CASES))
def test_the_quote_is_what_the_program_prints(
    quote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_ACTORS_CACHE_DIR", str(tmp_path / "cache"))
    lines = CASES[quote](tmp_path)
    assert any(matches(quote, line.strip()) for line in lines), (quote, lines)
