"""Bad timeouts: zero, negative, NaN, infinite; and a built-in call that outlives its timeout."""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path

import pytest

from actors import Runtime
from actors.runtime.messages import CallTool
from tests.badinput.conftest import QUIET, assert_classified, assert_serving, call
from tests.conftest import wait_until
from tests.runtime.conftest import config, stdio_server


@pytest.mark.parametrize("timeout", [0.0, -1.0, 1e-9])
@pytest.mark.parametrize("via", ["facade", "tell"])
def test_zero_and_negative_timeouts_are_classified(mcp_runtime: Runtime, timeout: float, via: str) -> None:
    answer = call(mcp_runtime, "fx/sleep", {"seconds": 0.01}, via=via, timeout=timeout)
    assert_classified(answer, timeout=max(timeout, 0.0))
    assert answer.result.success or answer.result.error_type in ("timeout", "validation"), answer.result
    assert_serving(mcp_runtime, "fx")


@pytest.mark.parametrize("timeout", [math.inf, 1e300])
def test_call_tool_with_an_infinite_timeout_answers(mcp_runtime: Runtime, timeout: float) -> None:
    result = mcp_runtime.call_tool("fx/echo", {"text": "x"}, timeout=timeout)
    assert result.success or result.error_type == "validation", result


def test_an_infinite_timeout_through_the_message_api_is_served(mcp_runtime: Runtime) -> None:
    message = CallTool("fx", "echo", {"text": "x"}, timeout=math.inf)
    mcp_runtime.registry.tell(message)
    result = message.reply.result(timeout=10)
    assert result.success or result.error_type == "validation", result


def test_a_nan_timeout_does_not_stop_the_runtime_s_timers() -> None:
    with Runtime.start(config({"a": stdio_server(**QUIET), "b": stdio_server(**QUIET)})) as rt:
        rt.start_server("b")
        # Queued while "a" starts: its deadline timer gets the NaN.
        nan_call = CallTool("a", "echo", {"text": "x"}, timeout=math.nan)
        rt.registry.tell(nan_call)
        assert_classified(call(rt, "a/echo", {"text": "y"}))
        nan_call.reply.result(timeout=30)
        pid = rt.status("b")[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        restarted = wait_until(lambda: rt.status("b")[0].restarts == 1, 30)
        assert restarted, f"b was not restarted after a kill: {rt.status('b')[0]}"
        assert_serving(rt, "b", restarts=1)


def test_a_slow_builtin_call_is_answered_within_its_timeout(tmp_path: Path) -> None:
    # About 3 s of backtracking on this machine: far beyond the 0.1 s timeout plus a second.
    (tmp_path / "slow.txt").write_text("a" * 25 + "!\n")
    with Runtime.start({"mcpServers": {}, "builtin": {"enabled": True, "workspace": str(tmp_path)}}) as rt:
        try:
            answer = call(rt, "builtin/file-search", {"pattern": "(a+)+$"}, via="tell", timeout=0.1)
            assert_classified(answer, timeout=0.1)
        finally:
            # Let the actor finish the regex (a call behind it waits) before the runtime stops it.
            rt.call_tool("builtin/git-status", {}, timeout=60)
