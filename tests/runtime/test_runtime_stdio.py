"""The actor runtime against real SDK servers over stdio: lifecycle, supervision, concurrency."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from actors import Runtime, ToolError, ToolResult, load_config
from actors.runtime.clock import ManualClock
from actors.runtime.messages import CallTool, GetStatus
from actors.testing import procfs
from tests.conftest import child_pids, wait_until
from tests.runtime.conftest import ROOT, advance_to, armed, config, stdio_server


def status_of(rt: Runtime, namespace: str) -> object:
    return rt.status(namespace)[0]


def running_with_restarts(rt: Runtime, namespace: str, restarts: int) -> bool:
    """One status snapshot: running, after exactly ``restarts`` restarts."""
    status = rt.status(namespace)[0]
    return status.state == "running" and status.restarts == restarts


def test_lazy_start_spawns_no_process_before_the_first_call() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.status("fx")[0].state == "idle"
        assert child_pids() == set()
        result = rt.call_tool("fx/echo", {"text": "hello"}, timeout=30)
        assert result.success, result
        assert result.text == "hello"
        status = rt.status("fx")[0]
        assert status.state == "running"
        assert status.pid in child_pids()
    assert child_pids() == set()


def test_idle_stop_reaps_the_process() -> None:
    clock = ManualClock()
    with Runtime.start(config({"fx": stdio_server(idleTimeout=300)}), clock=clock) as rt:
        assert rt.call_tool("fx/echo", {"text": "x"}, timeout=30).success
        pid = rt.status("fx")[0].pid
        assert pid is not None
        advance_to(clock, armed(rt, "idle", "fx"))
        assert wait_until(lambda: rt.status("fx")[0].state == "stopped", 10)
        assert wait_until(lambda: not procfs.is_alive(pid), 15)
        # The next call starts it again, lazily.
        assert rt.call_tool("fx/echo", {"text": "again"}, timeout=30).success
        assert rt.status("fx")[0].pid != pid


def test_bad_arguments_are_rejected_without_waking_the_server() -> None:
    clock = ManualClock()
    with Runtime.start(config({"fx": stdio_server(idleTimeout=300)}), clock=clock) as rt:
        assert rt.call_tool("fx/add", {"a": 1, "b": 2}, timeout=30).success
        advance_to(clock, armed(rt, "idle", "fx"))
        assert wait_until(lambda: rt.status("fx")[0].state == "stopped", 10)
        bad = rt.call_tool("fx/add", {"a": "one"}, timeout=30)
        assert bad.error_type == "validation", bad
        assert "'b' is a required property" in (bad.error or "")
        missing = rt.call_tool("fx/no_such_tool", {}, timeout=30)
        assert missing.error_type == "not_found", missing
        assert rt.status("fx")[0].state == "stopped"
        assert child_pids() == set()


def test_unknown_namespace_is_not_found() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        result = rt.call_tool("nope/echo", {"text": "x"})
        assert result.error_type == "not_found"
        assert "known: fx" in (result.error or "")


def test_kill_9_mid_call_fails_the_call_fast_and_the_supervisor_restarts_it() -> None:
    entry = stdio_server(restartBackoff=0.05, healthCheckInterval=0)
    with Runtime.start(config({"fx": entry})) as rt:
        assert rt.call_tool("fx/echo", {"text": "up"}, timeout=30).success
        pid = rt.status("fx")[0].pid
        assert pid is not None
        slow = CallTool(namespace="fx", tool="sleep", arguments={"seconds": 60}, timeout=60)
        rt.registry.tell(slow)
        assert wait_until(lambda: rt.status("fx")[0].in_flight == 1, 10)
        os.kill(pid, signal.SIGKILL)
        # Fast: well before the call's own 60 s timeout could have ended it.
        result: ToolResult = slow.reply.result(timeout=30)
        assert result.error_type == "connection", result
        # The status from before the crash is also "running": wait for the restart itself.
        assert wait_until(lambda: running_with_restarts(rt, "fx", 1), 30), rt.status("fx")
        status = rt.status("fx")[0]
        assert status.pid not in (None, pid)
        assert rt.call_tool("fx/echo", {"text": "back"}, timeout=30).text == "back"


def test_a_call_cut_short_by_the_hosts_own_stop_or_shutdown_is_cancelled_not_connection() -> None:
    # The host ended it (stop_server, shutdown): `cancelled`, as for a call it cancelled itself.
    # A server that dies on its own is `connection` (the test above). Decided on the type alone.
    with Runtime.start(config({"fx": stdio_server(), "gx": stdio_server()})) as rt:
        for namespace in ("fx", "gx"):
            assert rt.call_tool(f"{namespace}/echo", {"text": "up"}, timeout=30).success
        stopped = CallTool(namespace="fx", tool="sleep", arguments={"seconds": 60}, timeout=60)
        shut = CallTool(namespace="gx", tool="sleep", arguments={"seconds": 60}, timeout=60)
        for message in (stopped, shut):
            rt.registry.tell(message)
        assert wait_until(lambda: all(s.in_flight == 1 for s in rt.status()), 10), rt.status()
        rt.stop_server("fx")
        result: ToolResult = stopped.reply.result(timeout=30)
        assert result.error_type == "cancelled", result
        # Counted as the caller was answered.
        assert wait_until(lambda: rt.status("fx")[0].last_call_error == "cancelled", 10), rt.status("fx")
        rt.shutdown()
        result = shut.reply.result(timeout=30)
        assert result.error_type == "cancelled", result


def test_a_server_that_crashes_on_every_start_ends_failed() -> None:
    entry = stdio_server(
        "exit_server", real_process=True, maxRestarts=2, restartBackoff=0.05, restartBackoffMax=0.1
    )
    with Runtime.start(config({"bad": entry})) as rt:
        first = rt.call_tool("bad/anything", {}, timeout=30)
        assert first.error_type == "connection", first
        assert "failed to start" in (first.error or "")
        assert wait_until(lambda: rt.status("bad")[0].state == "failed", 20), rt.status("bad")
        status = rt.status("bad")[0]
        assert status.restarts == 2
        after = rt.call_tool("bad/anything", {}, timeout=30)
        assert after.error_type == "failed", after
        assert "start it explicitly" in (after.error or "")
    assert child_pids() == set()


def test_64_concurrent_slow_calls_on_one_server_overlap() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        rt.start_server("fx")
        calls = [
            CallTool(namespace="fx", tool="sleep", arguments={"seconds": 0.5, "marker": f"m{i}"}, timeout=30)
            for i in range(64)
        ]
        started = time.monotonic()
        for call in calls:
            rt.registry.tell(call)
        results = [c.reply.result(timeout=60) for c in calls]
        elapsed = time.monotonic() - started
        assert all(r.success for r in results), [r for r in results if not r.success][:3]
        # One after another they would take 32 s.
        assert elapsed < 12, f"64 calls of 0.5 s took {elapsed:.1f}s"
        assert rt.status("fx")[0].calls == 64


def test_a_call_to_server_b_is_not_delayed_by_slow_calls_on_server_a() -> None:
    with Runtime.start(config({"a": stdio_server(), "b": stdio_server()})) as rt:
        rt.start_server("a")
        rt.start_server("b")
        slow = [
            CallTool(namespace="a", tool="sleep", arguments={"seconds": 3}, timeout=30) for _ in range(64)
        ]
        for call in slow:
            rt.registry.tell(call)
        assert wait_until(lambda: rt.status("a")[0].in_flight == 64, 10)
        started = time.monotonic()
        fast = rt.call_tool("b/echo", {"text": "quick"}, timeout=30)
        elapsed = time.monotonic() - started
        assert fast.success
        assert not any(c.reply.done() for c in slow), "server A's calls finished before B answered"
        assert elapsed < 3
        # Status of A is answered while its calls are in flight.
        probe = GetStatus("a")
        rt.registry.tell(probe)
        assert probe.reply.result(timeout=5)[0].in_flight == 64
        assert all(c.reply.result(timeout=30).success for c in slow)


def test_twenty_servers_shut_down_in_parallel() -> None:
    servers = {f"s{i}": stdio_server() for i in range(20)}
    rt = Runtime.start(config(servers))
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(rt.start_server, servers))
        assert len(child_pids()) == 20
    finally:
        started = time.monotonic()
        rt.shutdown()
        elapsed = time.monotonic() - started
    assert child_pids() == set()
    # One after another, the SDK's stdio close alone could take 20 x 2 s.
    assert elapsed < 20, f"shutdown took {elapsed:.1f}s"


def test_message_api_tell_and_ask_share_one_reply_slot() -> None:
    with Runtime.start(load_config(config({"fx": stdio_server()}))) as rt:
        told = CallTool(namespace="fx", tool="add", arguments={"a": 2, "b": 3})
        rt.registry.tell(told)
        assert told.reply.result(timeout=30).output["structuredContent"] == {"result": 5}
        asked = CallTool(namespace="fx", tool="echo", arguments={"text": "via ask"})
        returned = rt.registry.ask(asked, timeout=5)
        assert returned is asked.reply
        assert returned.result(timeout=30).text == "via ask"


def test_list_tools_starts_only_servers_never_seen() -> None:
    clock = ManualClock()
    with Runtime.start(config({"fx": stdio_server(idleTimeout=300)}), clock=clock) as rt:
        names = [t.name for t in rt.list_tools()]
        assert {"fx/echo", "fx/add", "fx/sleep"} <= set(names)
        assert all(t.source == "mcp" for t in rt.list_tools())
        advance_to(clock, armed(rt, "idle", "fx"))
        assert wait_until(lambda: rt.status("fx")[0].state == "stopped", 10)
        assert [t.name for t in rt.list_tools()] == names
        assert rt.status("fx")[0].state == "stopped"
        # The runtime's ToolRegistry holds the same tools, each routed through the registry actor.
        from actors.tools import ToolRunner

        result = ToolRunner(rt.tools).execute("fx/add", {"a": 20, "b": 22})
        assert result.success, result
        assert result.output["structuredContent"] == {"result": 42}


def test_list_changed_reaches_the_registry() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/add_tool", {"name": "late_tool"}, timeout=30).success
        assert wait_until(lambda: "fx/late_tool" in {t.name for t in rt.list_tools()}, 10)
        assert rt.call_tool("fx/late_tool", {}, timeout=30).success


def test_a_timeout_is_classified_and_the_server_keeps_serving(marker_dir: Path) -> None:
    entry = stdio_server(env={"FIXTURE_MARKER_DIR": str(marker_dir)})
    with Runtime.start(config({"fx": entry})) as rt:
        rt.start_server("fx")
        result = rt.call_tool("fx/sleep", {"seconds": 30, "marker": "slow"}, timeout=0.5)
        assert result.error_type == "timeout", result
        assert (marker_dir / "slow.started").exists()
        assert wait_until((marker_dir / "slow.cancelled").exists, 10), "no cancellation seen"
        assert rt.call_tool("fx/echo", {"text": "still here"}, timeout=30).text == "still here"


def test_host_killed_with_sigkill_leaves_no_server_behind(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(ROOT)!r})
            from actors import Runtime
            from tests.runtime.conftest import config, stdio_server
            # The server's own process: its parent-death signal is what this test is about.
            rt = Runtime.start(config({{"fx": stdio_server(real_process=True)}}))
            assert rt.call_tool("fx/echo", {{"text": "x"}}, timeout=30).success
            print(rt.status("fx")[0].pid, flush=True)
            time.sleep(60)
            """
        )
    )
    host = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert host.stdout is not None
        server_pid = int(host.stdout.readline())
        assert procfs.is_alive(server_pid)
        host.kill()
        host.wait(timeout=10)
        assert wait_until(lambda: not procfs.is_alive(server_pid), 10), "the server outlived its host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(timeout=10)
        if host.stdout is not None:
            host.stdout.close()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_host_stopped_by_a_signal_shuts_servers_down_cleanly(tmp_path: Path, signum: int) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(ROOT)!r})
            from actors import Runtime
            from tests.runtime.conftest import config, stdio_server
            with Runtime.start(config({{"fx": stdio_server(real_process=True)}}), handle_signals=True) as rt:
                assert rt.call_tool("fx/echo", {{"text": "x"}}, timeout=30).success
                print(rt.status("fx")[0].pid, flush=True)
                time.sleep(60)
            """
        )
    )
    host = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # As a shell starts a host: a runner started in the background of a shell without job
        # control ignores SIGINT, and a child would inherit that (and never see this test's).
        preexec_fn=_default_sigint,  # noqa: PLW1509 - one signal disposition reset before exec
    )
    try:
        assert host.stdout is not None
        server_pid = int(host.stdout.readline())
        host.send_signal(signum)
        host.wait(timeout=20)
        assert not procfs.is_alive(server_pid)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(timeout=10)
        for stream in (host.stdout, host.stderr):
            if stream is not None:
                stream.close()


def test_an_embedded_runtime_leaves_the_hosts_signal_handlers_alone() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with Runtime.start(config({"fx": stdio_server()})):
        assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    with Runtime.start(config({"fx": stdio_server()}), handle_signals=True):
        assert signal.getsignal(signal.SIGTERM) is not before[0]
    assert signal.getsignal(signal.SIGTERM) == before[0]


def test_a_command_that_does_not_exist_fails_at_once_without_restarts() -> None:
    with Runtime.start(config({"ghost": {"command": "no-such-mcp-server-xyz"}})) as rt:
        first = rt.call_tool("ghost/anything", {}, timeout=30)
        assert first.error_type == "connection", first
        assert "command not found" in (first.error or "")
        status = rt.status("ghost")[0]
        assert (status.state, status.restarts) == ("failed", 0)
        again = rt.call_tool("ghost/anything", {}, timeout=30)
        assert again.error_type == "failed", again
        with pytest.raises(ToolError, match="command not found"):
            rt.start_server("ghost")
