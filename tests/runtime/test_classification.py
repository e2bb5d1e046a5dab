"""One classification whichever way a call is sent: facade or message API, good or broken."""

from __future__ import annotations

import time
from typing import Any

import pytest

from actors import CallTool, ErrorType, Runtime, ToolResult
from actors.mcp.auth import LoginRequired
from actors.runtime.registry import RegistryActor
from actors.runtime.server import ServerActor
from actors.testing import MockTransport
from actors.tools import error_label
from tests.conftest import wait_until
from tests.runtime.conftest import config, stdio_server
from tests.runtime.test_supervision import NS, entry, repos, runtime, status

WAIT = 10.0


def told(rt: Runtime, message: CallTool) -> ToolResult:
    rt.registry.tell(message)
    return message.reply.result(timeout=WAIT)


@pytest.mark.parametrize("timeout", ["5", -1, 0, float("nan"), float("inf"), True])
def test_a_bad_timeout_is_validation_through_the_facade_and_the_message_api(timeout: Any) -> None:
    with runtime(repos()) as rt:
        facade = rt.call_tool(f"{NS}/list_repos", {}, timeout=timeout)
        message = told(rt, CallTool(NS, "list_repos", {}, timeout=timeout))
        assert facade.error_type == message.error_type == "validation", (facade, message)
        assert facade.error == message.error
        assert "timeout must be a positive number" in (facade.error or "")
        assert "Traceback" not in (message.error or "")


@pytest.mark.parametrize("arguments", [[1, 2], "text", 3])
def test_arguments_that_are_not_an_object_are_one_validation_error(arguments: Any) -> None:
    with runtime(repos()) as rt:
        facade = rt.call_tool(f"{NS}/list_repos", arguments, timeout=WAIT)
        message = told(rt, CallTool(NS, "list_repos", arguments))
        assert facade.error_type == message.error_type == "validation"
        assert facade.error == message.error


def test_a_server_actor_that_cannot_be_spawned_gives_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no threads left")

    with runtime(repos()) as rt:
        monkeypatch.setattr(ServerActor, "start", refuse)
        result = rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT)
        assert isinstance(result, ToolResult)
        assert result.error_type == "execution", result
        assert "no threads left" in (result.error or "")


def test_an_internal_registry_failure_is_execution_not_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: RegistryActor, call: CallTool) -> None:
        raise KeyError("internal")

    with runtime(repos()) as rt:
        monkeypatch.setattr(RegistryActor, "_route", broken)
        result = told(rt, CallTool(NS, "list_repos", {}))
        assert result.error_type == "execution", result


def test_an_unknown_tool_gets_a_did_you_mean_and_the_servers_tool_names() -> None:
    with runtime(repos()) as rt:
        assert rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT).success
        result = rt.call_tool(f"{NS}/list_repo", {}, timeout=WAIT)
        assert result.error_type == "not_found"
        assert "did you mean 'list_repos'?" in (result.error or "")
        assert "its tools: create_issue, list_repos" in (result.error or "")


def test_the_last_crash_reason_and_its_time_outlive_the_restart() -> None:
    mock = repos()
    with runtime(mock) as rt:
        assert rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT).success
        before = time.time()
        mock.die()
        assert wait_until(lambda: status(rt).state == "running" and status(rt).restarts == 1, WAIT)
        now = status(rt)
        assert now.last_error is not None and "connection lost" in now.last_error
        assert now.last_error_at is not None and before <= now.last_error_at <= time.time()


def test_a_queued_call_that_times_out_says_how_long_the_start_took() -> None:
    # The start (0.5 s of the server's own, plus the spawn) must end within the call's timeout,
    # also on a busy machine where a spawn alone can take seconds.
    slow = stdio_server("slow_start_server", "0.5")
    with Runtime.start(config({"slow": slow})) as rt:
        result = rt.call_tool("slow/sleep", {"seconds": 30}, timeout=8)
        assert result.error_type == "timeout", result
        error = result.error or ""
        assert error.startswith("timeout: sleep got no answer within 8 s (")
        assert "of it went to starting the server" in error


def test_no_error_message_repeats_its_label() -> None:
    """Failures of every kind, each labelled once (no ``timeout: timeout:``)."""
    mock = repos()
    mock.call_delay = 1.0
    results = []
    with Runtime.start(
        {
            "mcpServers": {NS: entry(), "ghost": {"command": "no-such-server-xyz"}},
            "builtin": {"enabled": False},
        },
        transports={NS: mock},
    ) as rt:
        results.append(rt.call_tool(f"{NS}/list_repos", {}, timeout=0.2))  # timeout
        results.append(rt.call_tool(f"{NS}/nope", {}, timeout=WAIT))  # not found
        results.append(rt.call_tool(f"{NS}/list_repos", {"x": float("nan")}, timeout=WAIT))  # validation
        results.append(rt.call_tool("ghost/x", {}, timeout=WAIT))  # connection (cannot start)
        results.append(rt.call_tool("ghost/x", {}, timeout=WAIT))  # failed
        results.append(rt.call_tool("nowhere/x", {}, timeout=WAIT))  # not found
    results.append(rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT))  # cancelled
    kinds = {r.error_type for r in results}
    assert kinds >= {"timeout", "not_found", "validation", "connection", "failed", "cancelled"}, kinds
    labels = {error_label(kind) for kind in ErrorType}
    for result in results:
        error = result.error or ""
        assert error.startswith(f"{error_label(result.error_type or '')}:"), result
        rest = error.split(":", 1)[1].lstrip()
        assert not any(rest.startswith(f"{label}:") for label in labels), error


class _NeedsLogin(MockTransport):
    """A remote server that refuses every connect for want of a login (what the OAuth provider
    raises at once when nobody can be asked)."""

    def __init__(self) -> None:
        super().__init__(["list_repos"])
        self.attempts = 0

    async def connect(self, events: Any = None) -> Any:
        self.attempts += 1
        raise LoginRequired(NS)


def test_a_server_that_needs_a_login_fails_calls_as_auth_and_is_not_restarted() -> None:
    mock = _NeedsLogin()
    with runtime(mock) as rt:  # type: ignore[arg-type]
        first = rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT)
        assert first.error_type == "auth", first
        assert f"run `mcp-actors login {NS}`" in (first.error or "")
        status = rt.status(NS)[0]
        assert (status.state, status.restarts) == ("stopped", 0)
        assert "login" in (status.last_error or "")
        # After a login (made elsewhere) the next call simply tries again: nothing to reset.
        again = rt.call_tool(f"{NS}/list_repos", {}, timeout=WAIT)
        assert again.error_type == "auth"
        assert mock.attempts == 2


def test_a_uri_the_server_does_not_know_is_not_found() -> None:
    mock = MockTransport(
        ["list_repos"],
        resources=["file:///here"],
        capabilities={"tools": {}, "resources": {}},
    )
    with runtime(mock) as rt:
        known = rt.read_resource(NS, "file:///here", timeout=WAIT)
        assert known.success, known
        missing = rt.read_resource(NS, "file:///nope", timeout=WAIT)
        assert missing.error_type == "not_found", missing
        assert "file:///nope" in (missing.error or "")
