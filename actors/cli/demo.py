"""``demo``: the runtime at work on the built-in default configuration (what ``make demo``
runs): lazy start, calls, validation, concurrent calls, a crash and its restart, a stop."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from actors.cli.output import failure, status_table
from actors.cli.startup import start_runtime
from actors.config import load_config
from actors.demo import default_config

__all__ = ["demo_command"]


def demo_command(args: argparse.Namespace, out: TextIO) -> int:
    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    config = load_config(default_config(args.workspace))
    say("mcp-actors demo: the built-in default configuration (the demo server + built-in tools)\n")
    with start_runtime(config) as rt:
        say("1. Started. No server process runs until its first call (lazy start):")
        say(status_table(rt.status()) + "\n")
        started = time.monotonic()
        result = rt.call_tool("demo/echo", {"text": "hello from an actor"}, timeout=30)
        waited = (time.monotonic() - started) * 1000
        say(f"2. demo/echo -> {result.text!r} ({waited:.0f} ms: the server started on this first call)")
        result = rt.call_tool("demo/add", {"a": 2, "b": 40}, timeout=30)
        say(f"   demo/add {{a: 2, b: 40}} -> {result.text} ({result.duration_ms:.1f} ms)")
        say(status_table(rt.status()) + "\n")

        bad = rt.call_tool("demo/add", {"a": "two"}, timeout=30)
        refused = failure(bad.error_type or "", bad.error or "")
        say(f"3. A bad argument is refused before the server sees it:\n   {refused}\n")

        from actors.runtime.messages import CallTool  # noqa: PLC0415  (see start_runtime)

        started = time.monotonic()
        calls = [CallTool(namespace="demo", tool="sleep", arguments={"seconds": 0.5}) for _ in range(16)]
        for call in calls:
            rt.registry.tell(call)
        done = [c.reply.result(timeout=30) for c in calls]
        say(
            f"4. 16 calls of a 0.5 s tool, sent with tell to the registry actor: "
            f"{sum(r.success for r in done)} ok in {time.monotonic() - started:.2f}s "
            "(one session, multiplexed)\n"
        )

        tools = rt.list_tools()
        say(f"5. {len(tools)} tools across namespaces: " + ", ".join(t.name for t in tools) + "\n")
        listed = rt.call_tool("builtin/file-list", {"pattern": "*.md"}, timeout=30)
        say(f"   builtin/file-list *.md -> {listed.text[:200] if listed.success else listed.error}\n")

        pid = rt.status("demo")[0].pid
        crash = rt.call_tool("demo/crash", {}, timeout=30)
        crashed = failure(crash.error_type or "", crash.error or "")
        say(f"6. demo/crash kills the server process (pid {pid}) mid-call: {crashed}")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            status = rt.status("demo")[0]
            if status.state == "running" and status.pid != pid:
                break
            time.sleep(0.05)
        say(f"   the supervisor restarted it: pid {status.pid}, restarts {status.restarts}")
        result = rt.call_tool("demo/now", {}, timeout=30)
        say(f"   demo/now -> {result.text}")
        say(status_table(rt.status()) + "\n")

        say("7. Stop on request (idle servers stop by themselves after idleTimeout):")
        rt.stop_server("demo")
        say(status_table(rt.status()) + "\n")
    say("8. Shut down: no server process is left.")
    return 0
