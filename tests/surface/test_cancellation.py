"""Cancelling the reply future of an in-flight request cancels it at the server
(``notifications/cancelled``), and the server's counters count it; the session goes on.

The surface server's ``sleep`` tool and ``surface://never`` write ``<marker>.started`` and, once
cancelled, ``<marker>.cancelled`` (like the fixture server's ``sleep``)."""

from __future__ import annotations

import threading
from pathlib import Path

from actors import ErrorType, Runtime
from actors.runtime.messages import CallTool, GetStatus, ReadResource, ServerStatus
from tests.conftest import wait_until
from tests.servers.surface_server import NEVER_URI
from tests.surface.conftest import WAIT, ServerEntry, config, text_of

NS = "s"
EV = "ev"
# Long enough for a request to reach a running server on a busy machine, short enough to wait out.
SHORT = 3.0


def status_of(rt: Runtime, namespace: str) -> ServerStatus:
    return rt.status(namespace)[0]


def test_cancelling_an_in_flight_call_or_read_cancels_it_at_the_server(
    surface: ServerEntry, marker_dir: Path
) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        before = rt.start_server(NS)

        call = CallTool(
            namespace=NS, tool="sleep", arguments={"seconds": 300, "marker": "long"}, timeout=3 * WAIT
        )
        rt.registry.tell(call)
        assert wait_until((marker_dir / "long.started").exists, WAIT)
        assert call.reply.cancel()
        assert wait_until((marker_dir / "long.cancelled").exists, WAIT), "the server was not told"

        read = ReadResource(namespace=NS, uri=NEVER_URI, timeout=3 * WAIT)
        rt.registry.tell(read)
        assert wait_until((marker_dir / "never.started").exists, WAIT)
        assert read.reply.cancel()
        assert wait_until((marker_dir / "never.cancelled").exists, WAIT), "the server was not told"

        def both_counted() -> bool:
            status = status_of(rt, NS)
            return status.in_flight == 0 and status.errors >= before.errors + 2

        assert wait_until(both_counted, WAIT), status_of(rt, NS)
        after = status_of(rt, NS)
        assert after.calls >= before.calls + 2
        # The session goes on: same process, no restart.
        assert text_of(rt.call_tool(f"{NS}/progress", {"steps": 1}, timeout=WAIT)) == "done 1"
        assert (after.state, after.pid, after.restarts) == ("running", before.pid, 0)


def test_a_timeout_tells_the_server_to_cancel(surface: ServerEntry, marker_dir: Path) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        # Started first: a call's timeout also counts the time its server takes to start.
        rt.start_server(NS)
        late = rt.call_tool(f"{NS}/sleep", {"seconds": 300, "marker": "late"}, timeout=SHORT)
        assert late.error_type == ErrorType.TIMEOUT, late
        assert (marker_dir / "late.started").exists(), "the call never reached the server"
        assert wait_until((marker_dir / "late.cancelled").exists, WAIT)
        never = rt.read_resource(NS, NEVER_URI, timeout=SHORT)
        assert never.error_type == ErrorType.TIMEOUT, never
        assert (marker_dir / "never.started").exists(), "the read never reached the server"
        assert wait_until((marker_dir / "never.cancelled").exists, WAIT)
        status = status_of(rt, NS)
        assert (status.state, status.restarts, status.in_flight) == ("running", 0, 0)


def test_cancelling_server_everything_long_operation_leaves_the_session_working(
    everything: ServerEntry,
) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        running = threading.Event()
        call = CallTool(
            namespace=EV,
            tool="trigger-long-running-operation",
            arguments={"duration": 300, "steps": 300},
            timeout=3 * WAIT,
            progress=lambda progress, total, message: running.set(),
        )
        rt.registry.tell(call)
        assert running.wait(WAIT), "no progress: the operation did not start"
        assert call.reply.cancel()

        def counted() -> bool:
            asked = GetStatus(EV)
            rt.registry.tell(asked)
            [status] = asked.reply.result(timeout=WAIT)
            return status.in_flight == 0 and status.errors >= 1

        assert wait_until(counted, WAIT), status_of(rt, EV)
        assert (
            text_of(rt.call_tool(f"{EV}/echo", {"message": "still here"}, timeout=WAIT)) == "Echo: still here"
        )
        assert status_of(rt, EV).restarts == 0
