"""Steps for runtime_supervision.feature: restart policies and the registry actor's message API."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from behave import given, then, when
from behave.runner import Context

from actors import Runtime
from actors.runtime.messages import CallTool, GetStatus, ServerStatus
from actors.testing import MockTransport
from actors.tools import ToolResult

WAIT = 10.0


def _wait_until(predicate: Any, timeout: float = WAIT, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(interval)
    return True


def _start(context: Context, name: str, mock: MockTransport, **lifecycle: Any) -> None:
    entry = {
        "command": "mock-server",
        "restartBackoff": 0.01,
        "restartBackoffMax": 0.05,
        "healthCheckInterval": 0,
        "idleTimeout": 0,
        **lifecycle,
    }
    context.supervision_mock = mock
    context.runtime = Runtime.start(
        {"mcpServers": {name: entry}, "builtin": {"enabled": False}}, transports={name: mock}
    )
    context.add_cleanup(context.runtime.shutdown)


def _repos() -> MockTransport:
    return MockTransport(["list_repos", "create_issue"], {"list_repos": lambda args: {"repos": ["a", "b"]}})


def _status(context: Context, name: str) -> ServerStatus:
    status: ServerStatus = context.runtime.status(name)[0]
    return status


@given('a runtime supervising mock server "{name}" with restart policy "{policy}"')
def step_runtime_with_policy(context: Context, name: str, policy: str) -> None:
    _start(context, name, _repos(), restart=policy)


@given('a runtime supervising mock server "{name}" that refuses connections, allowing {count:d} restarts')
def step_runtime_refusing(context: Context, name: str, count: int) -> None:
    mock = _repos()
    mock.connect_failures = 1000
    _start(context, name, mock, maxRestarts=count, restartWindow=60)


@given('a runtime supervising mock server "{name}" whose calls take {seconds:g} seconds')
def step_runtime_slow(context: Context, name: str, seconds: float) -> None:
    mock = _repos()
    mock.call_delay = seconds
    _start(context, name, mock)


@given(
    'a runtime supervising mock server "{name}" with restart policy "{policy}"'
    " and health checks every {seconds:g} seconds"
)
def step_runtime_with_health_checks(context: Context, name: str, policy: str, seconds: float) -> None:
    _start(context, name, _repos(), restart=policy, healthCheckInterval=seconds)


@when('the agent host calls "{tool}"')
def step_host_calls(context: Context, tool: str) -> None:
    context.supervision_result = context.runtime.call_tool(tool, {}, timeout=5)


@then('the agent host can call "{tool}" again')
def step_host_calls_again(context: Context, tool: str) -> None:
    result = context.runtime.call_tool(tool, {}, timeout=5)
    assert result.success, result


@then('the agent host\'s last call failed with error type "{error_type}"')
def step_last_call_failed(context: Context, error_type: str) -> None:
    result: ToolResult = context.supervision_result
    assert not result.success, result
    assert result.error_type == error_type, result


@when('mock server "{name}" dies')
def step_mock_dies(context: Context, name: str) -> None:
    context.supervision_mock.die("process exited with status 1")


@when('mock server "{name}" goes silent')
def step_mock_silent(context: Context, name: str) -> None:
    context.supervision_mock.crash()


@when('mock server "{name}" accepts connections again')
def step_mock_accepts(context: Context, name: str) -> None:
    context.supervision_mock.connect_failures = 0


@when('the agent host starts supervised server "{name}" explicitly')
def step_explicit_start(context: Context, name: str) -> None:
    status = context.runtime.start_server(name, timeout=5)
    assert status.state == "running", status


@then('supervised server "{name}" becomes "{state}" with {count:d} restart')
@then('supervised server "{name}" becomes "{state}" with {count:d} restarts')
def step_becomes(context: Context, name: str, state: str, count: int) -> None:
    def reached() -> bool:
        status = _status(context, name)
        return status.state == state and status.restarts == count

    assert _wait_until(reached), _status(context, name)


@then('supervised server "{name}" counted {count:d} health check failure')
@then('supervised server "{name}" counted {count:d} health check failures')
def step_health_failures(context: Context, name: str, count: int) -> None:
    assert _status(context, name).health_check_failures == count, _status(context, name)


@then('mock server "{name}" was connected {count:d} time')
@then('mock server "{name}" was connected {count:d} times')
def step_connects(context: Context, name: str, count: int) -> None:
    assert context.supervision_mock.connects == count, context.supervision_mock.connects


@when('the agent host tells the registry a CallTool for "{name}"')
def step_tell_call(context: Context, name: str) -> None:
    context.supervision_message = CallTool.named(name, {}, timeout=5)
    context.runtime.registry.tell(context.supervision_message)


@when('the agent host asks the registry with a CallTool for "{name}"')
def step_ask_call(context: Context, name: str) -> None:
    context.supervision_message = CallTool.named(name, {}, timeout=5)
    context.supervision_future = context.runtime.registry.ask(context.supervision_message, timeout=WAIT)


@then("the ask answered at once with the message's own reply slot")
def step_ask_answer(context: Context) -> None:
    future = context.supervision_future
    assert isinstance(future, concurrent.futures.Future), future
    assert future is context.supervision_message.reply
    # The call takes 0.5 s at the server: an ask that waited for it would find it done. No clock
    # is read, so a slow machine cannot fail this (only an ask slower than the call itself).
    assert not future.done(), "the ask waited for the server"


@then("the CallTool reply slot holds a successful result within {seconds:g} seconds")
def step_reply_success(context: Context, seconds: float) -> None:
    result = context.supervision_message.reply.result(timeout=seconds)
    assert isinstance(result, ToolResult), result
    assert result.success, result


@then('the CallTool reply slot holds a failure of type "{error_type}" within {seconds:g} seconds')
def step_reply_failure(context: Context, error_type: str, seconds: float) -> None:
    result = context.supervision_message.reply.result(timeout=seconds)
    assert isinstance(result, ToolResult), result
    assert result.error_type == error_type, result


@when("the agent host tells the registry a GetStatus")
def step_tell_status(context: Context) -> None:
    context.supervision_message = GetStatus()
    context.runtime.registry.tell(context.supervision_message)


@then('the GetStatus reply lists supervised server "{name}" as "{state}"')
def step_status_reply(context: Context, name: str, state: str) -> None:
    statuses = context.supervision_message.reply.result(timeout=WAIT)
    assert [(s.namespace, s.state) for s in statuses] == [(name, state)], statuses
