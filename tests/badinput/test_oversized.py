"""Oversized arguments (5 MB) and responses (about 10 MB on the wire): each call gets a success or a
classified failure, other servers are not held up, and the runtime keeps serving afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from actors import Runtime
from actors.runtime.messages import CallTool
from tests.badinput.conftest import assert_classified, assert_serving, call
from tests.harness.calibration import scaled
from tests.runtime.conftest import config, stdio_server

FIVE_MB = 5 * 1024 * 1024
TEN_MB = 10 * 1024 * 1024
BIG_TIMEOUT = 60.0


@pytest.mark.parametrize("via", ["facade", "tell"])
def test_a_5_mb_argument_is_served(mcp_runtime: Runtime, via: str) -> None:
    text = "é" * (FIVE_MB // 2)  # 5 MB of UTF-8
    answer = call(mcp_runtime, "big/length", {"text": text}, via=via, timeout=BIG_TIMEOUT)
    assert_classified(answer, timeout=BIG_TIMEOUT)
    assert answer.result.success, answer.result
    assert answer.result.output["structuredContent"] == {"result": FIVE_MB // 2}
    echo = call(mcp_runtime, "fx/echo", {"text": text}, via=via, timeout=BIG_TIMEOUT)
    assert_classified(echo, timeout=BIG_TIMEOUT)
    assert echo.result.success and echo.result.text == text
    assert_serving(mcp_runtime, "big")
    assert_serving(mcp_runtime, "fx")


def test_a_5_mb_argument_that_breaks_the_schema_is_refused(mcp_runtime: Runtime) -> None:
    answer = call(mcp_runtime, "fx/add", {"a": "1" * FIVE_MB, "b": 2})
    assert_classified(answer)
    assert answer.result.error_type == "validation"
    assert_serving(mcp_runtime, "fx")


@pytest.mark.parametrize(("tool", "size"), [("blob", TEN_MB), ("blob_structured", TEN_MB // 2)])
def test_a_10_mb_response_is_served_and_other_servers_are_not_held_up(
    mcp_runtime: Runtime, tool: str, size: int
) -> None:
    # blob_structured sends its payload twice (text and structured content): 10 MB either way.
    big = CallTool("big", tool, {"size": size}, timeout=BIG_TIMEOUT)
    started = time.monotonic()
    done_at: list[float] = []
    big.reply.add_done_callback(lambda _: done_at.append(time.monotonic()))
    mcp_runtime.registry.tell(big)
    slowest = 0.0
    while not big.reply.done() and time.monotonic() - started < BIG_TIMEOUT + 5:
        echo = call(mcp_runtime, "fx/echo", {"text": "meanwhile"}, timeout=10)
        assert echo.result.success, echo.result
        slowest = max(slowest, echo.seconds)
    result = big.reply.result(timeout=5)
    assert result.success, result
    if tool == "blob":
        assert len(result.text) == size
    else:
        assert len(result.output["structuredContent"]["data"]) == size
    assert done_at[0] - started <= BIG_TIMEOUT + scaled(1.5)
    # Bounds as on our machine, scaled to this one (tests/harness/calibration.py).
    assert slowest < scaled(2.0), f"a call to another server took {slowest:.2f}s during the big response"
    assert_serving(mcp_runtime, "big")


def test_a_5_mb_builtin_argument_is_served(builtin_runtime: Runtime) -> None:
    workspace = Path(builtin_runtime.config.builtin.workspace)
    # Numbered lines: a byte lost, doubled or reordered on the way shows in the file.
    lines = FIVE_MB // len("line 0000000\n")
    content = "".join(f"line {i:07d}\n" for i in range(lines))
    assert len(content) >= FIVE_MB - 13
    write = call(builtin_runtime, "builtin/file-write", {"path": "big.txt", "content": content}, timeout=60)
    assert_classified(write, timeout=60)
    assert write.result.success, write.result
    assert write.result.output["bytes_written"] == len(content), write.result.output
    assert (workspace / "big.txt").read_text() == content
    # Read back through the tool: its last two lines, and the size it sees.
    tail = call(builtin_runtime, "builtin/file-read", {"path": "big.txt", "offset": lines - 2, "limit": 2})
    assert tail.result.success, tail.result
    assert tail.result.output["content"] == f"line {lines - 2:07d}\nline {lines - 1:07d}\n"
    assert tail.result.output["size_bytes"] == len(content)
    # 5 MB as the edit's new text, into a small file.
    (workspace / "small.txt").write_text("before\nMARK\nafter\n")
    edit = call(
        builtin_runtime,
        "builtin/file-edit",
        {"path": "small.txt", "old_text": "MARK", "new_text": content},
        timeout=60,
    )
    assert_classified(edit, timeout=60)
    assert edit.result.success, edit.result
    assert edit.result.output["replacements"] == 1, edit.result.output
    assert (workspace / "small.txt").read_text() == "before\n" + content + "\nafter\n"
    # 5 MB as old text that is not there: refused, nothing changed.
    (workspace / "other.txt").write_text("nothing to see\n")
    missing = call(
        builtin_runtime,
        "builtin/file-edit",
        {"path": "other.txt", "old_text": "x" * FIVE_MB, "new_text": "y"},
        timeout=60,
    )
    assert_classified(missing, timeout=60)
    assert missing.result.error_type == "validation", missing.result
    assert "does not occur" in (missing.result.error or ""), missing.result
    assert (workspace / "other.txt").read_text() == "nothing to see\n"
    assert call(builtin_runtime, "builtin/git-status", {}).result.success


def test_a_big_response_does_not_fail_the_health_check() -> None:
    # 20 MB of text, 40 MB on the wire (it travels twice), within the default loop-lag limit:
    # the frame is parsed off the loop, in pieces (actors.mcp.frames).
    entry = stdio_server("big_server", healthCheckInterval=1, idleTimeout=0)
    with Runtime.start(config({"big": entry})) as rt:
        rt.start_server("big")
        answer = call(rt, "big/blob", {"size": 2 * TEN_MB}, timeout=BIG_TIMEOUT)
        assert_classified(answer, timeout=BIG_TIMEOUT)
        assert answer.result.success, answer.result
        assert_serving(rt, "big")


def test_many_concurrent_1_mb_calls_all_answer(mcp_runtime: Runtime) -> None:
    text = "z" * (1024 * 1024)
    calls = [CallTool("fx", "echo", {"text": text}, timeout=BIG_TIMEOUT) for _ in range(20)]
    for message in calls:
        mcp_runtime.registry.tell(message)
    results = [m.reply.result(timeout=BIG_TIMEOUT + 5) for m in calls]
    assert all(r.success and r.text == text for r in results), [r.error for r in results if not r.success]
    assert_serving(mcp_runtime, "fx")
