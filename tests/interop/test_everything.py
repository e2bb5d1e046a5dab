"""@modelcontextprotocol/server-everything through the Runtime and the registry actor, over
stdio, Streamable HTTP and legacy HTTP+SSE.

What the server showed us (2026.8.31, on the TypeScript SDK 1.32, handshake era only):
- ``auto`` falls back to the handshake (2025-11-25); a ``2026-07-28`` pin fails to start with a
  classified ``connection`` error (``server/discover``: Method not found), and the server is
  ``failed`` at once: restarting cannot help.
- It registers more tools once initialised and sends ``tools/list_changed`` (stdio and SSE
  deliver it; over Streamable HTTP it is sent before the GET stream exists and is lost, and the
  first ``tools/list`` already has them).
- Tools that need client capabilities (roots, sampling, elicitation, tasks) are registered only
  for clients that declare them. The runtime declares none, so the server never sends it a
  server-to-client request. (The conformance suite's elicitation scenario sends one anyway:
  see tests/conformance.)
- ``simulate-research-query`` requires task-augmented calls (SEP-1686), which the runtime does
  not make: the call is refused as ``validation`` (its taskSupport says why) before it is sent.
"""

from __future__ import annotations

import base64
import concurrent.futures
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult
from actors.runtime.messages import CallTool, ListTools
from actors.testing import procfs
from tests.conftest import wait_until
from tests.interop.conftest import config, npm_stdio

NS = "ev"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

BASE_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
# Registered after initialisation whatever the client declares: announced by tools/list_changed.
LATE_TOOL = "simulate-research-query"
# Registered only for clients that declare roots, sampling, elicitation (url) or tasks.
CAPABILITY_GATED = {
    "get-roots-list",
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request-async",
    "trigger-elicitation-request-async",
}


def tool_names(rt: Runtime) -> set[str]:
    return {spec.tool_name for spec in rt.list_tools(NS)}


def call(rt: Runtime, tool: str, arguments: dict[str, Any], timeout: float = 20) -> ToolResult:
    """A call through the registry actor's message API."""
    message = CallTool(namespace=NS, tool=tool, arguments=arguments, timeout=timeout)
    rt.registry.tell(message)
    result: ToolResult = message.reply.result(timeout=timeout + 5)
    return result


def blocks(result: ToolResult, kind: str) -> list[dict[str, Any]]:
    assert result.success, result
    assert result.output is not None
    return [block for block in result.output["content"] if block.get("type") == kind]


def test_tools_content_types_and_structured_content(everything: dict[str, Any]) -> None:
    with Runtime.start(config({NS: everything})) as rt:
        status = rt.start_server(NS)
        assert status.state == "running"
        assert status.protocol_version == "2025-11-25"  # auto fell back to the handshake
        names = tool_names(rt)
        assert names >= BASE_TOOLS, sorted(names)
        assert not names & CAPABILITY_GATED, "the runtime declares no roots/sampling/elicitation"

        assert call(rt, "echo", {"message": "héllo ✓"}).text == "Echo: héllo ✓"
        assert "3.5" in (call(rt, "get-sum", {"a": 1, "b": 2.5}).text or "")

        structured = call(rt, "get-structured-content", {"location": "Chicago"})
        assert structured.output is not None
        assert structured.output["structuredContent"] == {
            "temperature": 36,
            "conditions": "Light rain / drizzle",
            "humidity": 82,
        }
        [spec] = [s for s in rt.list_tools(NS) if s.tool_name == "get-structured-content"]
        assert spec.output_schema is not None
        assert set(spec.output_schema["properties"]) == {"temperature", "conditions", "humidity"}

        [image] = blocks(call(rt, "get-tiny-image", {}), "image")
        assert image["mimeType"] == "image/png"
        assert base64.b64decode(image["data"]).startswith(PNG_MAGIC)

        annotated = call(rt, "get-annotated-message", {"messageType": "error", "includeImage": True})
        [text] = blocks(annotated, "text")
        assert text["annotations"]["priority"] == 1.0
        assert len(blocks(annotated, "image")) == 1

        links = blocks(call(rt, "get-resource-links", {"count": 3}), "resource_link")
        assert len(links) == 3
        assert all(link["uri"].startswith("demo://resource/dynamic/") for link in links)

        [embedded] = blocks(
            call(rt, "get-resource-reference", {"resourceType": "Text", "resourceId": 7}), "resource"
        )
        assert embedded["resource"]["uri"] == "demo://resource/dynamic/text/7"

        # Arguments are checked against the server's own schemas before anything is sent.
        bad = call(rt, "get-resource-reference", {"resourceType": "blob", "resourceId": 2})
        assert bad.error_type == "validation", bad
        assert call(rt, "echo", {}).error_type == "validation"

        # Many calls in flight on one session, each answered.
        messages = [CallTool(namespace=NS, tool="echo", arguments={"message": f"m{i}"}) for i in range(32)]
        for message in messages:
            rt.registry.tell(message)
        texts = {m.reply.result(timeout=30).text for m in messages}
        assert texts == {f"Echo: m{i}" for i in range(32)}

        status = rt.status(NS)[0]
        assert status.state == "running" and status.restarts == 0
        assert status.in_flight == 0


def test_long_running_operation_completes_and_a_timeout_cancels_it(everything: dict[str, Any]) -> None:
    with Runtime.start(config({NS: everything})) as rt:
        done = call(rt, "trigger-long-running-operation", {"duration": 0.6, "steps": 3})
        assert done.success, done
        assert "Steps: 3" in (done.text or "")

        started = time.monotonic()
        late = call(rt, "trigger-long-running-operation", {"duration": 10, "steps": 5}, timeout=1)
        assert late.error_type == "timeout", late
        assert time.monotonic() - started < 4
        # The server was told to cancel; the session goes on.
        assert call(rt, "echo", {"message": "still here"}).text == "Echo: still here"
        status = rt.status(NS)[0]
        assert (status.state, status.restarts, status.in_flight) == ("running", 0, 0)


def test_log_messages_and_list_changed_arrive_without_disturbing_the_session(
    everything: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="actors.mcp.sdk_transport")
    caplog.set_level(logging.DEBUG, logger=f"actors.server.{NS}")
    http = everything.get("type") == "streamable-http"
    with Runtime.start(config({NS: everything})) as rt:
        # The tool registered after initialisation is in the registry (list_changed or first list).
        assert wait_until(lambda: LATE_TOOL in tool_names(rt), 10), sorted(tool_names(rt))
        listed = ListTools(NS)
        rt.registry.tell(listed)
        assert LATE_TOOL in {spec.tool_name for spec in listed.reply.result(timeout=10)}
        if not http:
            assert any("the tool list changed" in r.getMessage() for r in caplog.records)

        # The logging tool sends one log message at once (then one every 5 s until toggled off).
        started = call(rt, "toggle-simulated-logging", {})
        assert "Started simulated" in (started.text or ""), started
        assert wait_until(lambda: any(r.name == f"actors.server.{NS}" for r in caplog.records), 10)
        assert call(rt, "echo", {"message": "after logs"}).text == "Echo: after logs"
        stopped = call(rt, "toggle-simulated-logging", {})
        assert "Stopped simulated" in (stopped.text or ""), stopped

        # A tool that needs task augmentation (which the runtime does not do): refused, with why.
        task_only = call(rt, LATE_TOOL, {"topic": "actors", "ambiguous": True}, timeout=10)
        assert task_only.error_type == "validation", task_only
        assert "task" in (task_only.error or "")
        assert rt.status(NS)[0].state == "running"


def test_stdio_server_is_node_itself_gets_its_env_and_is_reaped() -> None:
    entry = npm_stdio("server-everything", "stdio", env={"INTEROP_MARKER": "from-the-config"})
    with Runtime.start(config({NS: entry})) as rt:
        result = rt.call_tool(f"{NS}/get-env", {}, timeout=20)
        assert result.success, result
        assert '"INTEROP_MARKER": "from-the-config"' in (result.text or "")
        pid = rt.status(NS)[0].pid
        assert pid is not None
        # No npx or shell in between: the pid the runtime holds is node running the package.
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert os.path.basename(cmdline[0].decode()).startswith("node"), cmdline
        assert cmdline[1].decode().endswith("server-everything/dist/index.js"), cmdline
    assert wait_until(lambda: not procfs.is_alive(pid), 5), f"pid {pid} outlived the runtime"


def test_a_2026_07_28_pin_fails_with_a_classified_error_and_auto_falls_back() -> None:
    pinned = npm_stdio(
        "server-everything", "stdio", protocol="2026-07-28", maxRestarts=1, restartBackoff=0.05
    )
    auto = npm_stdio("server-everything", "stdio", protocol="auto")
    with Runtime.start(config({"pinned": pinned, "auto": auto})) as rt:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            refused_future = pool.submit(rt.call_tool, "pinned/echo", {"message": "x"}, 20)
            fallback_future = pool.submit(rt.call_tool, "auto/echo", {"message": "x"}, 20)
            refused, fallback = refused_future.result(60), fallback_future.result(60)
        assert refused.error_type == "connection", refused
        assert "Method not found" in (refused.error or ""), refused
        assert fallback.text == "Echo: x"
        assert rt.status("auto")[0].protocol_version == "2025-11-25"
        # Refused for good: `failed` at once, without restarts.
        assert wait_until(lambda: rt.status("pinned")[0].state == "failed", 20), rt.status("pinned")
        pinned_status = rt.status("pinned")[0]
        assert "does not support protocol 2026-07-28" in (pinned_status.last_error or "")
        assert pinned_status.restarts == 0
