"""Completion of prompt arguments and template variables, and progress notifications handed to
the host's callback in order, on a host thread; a raising or slow callback harms nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from actors import ErrorType, Runtime
from actors.runtime.messages import CallTool, Complete
from actors.tools import RefusalReason
from tests.servers.surface_server import HELLO_TEXT, HELLO_URI, NOTE_TEMPLATE
from tests.surface.conftest import WAIT, ServerEntry, config, on_host_thread, read_text, text_of

NS = "s"
EV = "ev"


class Progress:
    """A progress callback that records what it got and where it ran."""

    def __init__(self, expected: int) -> None:
        self.reports: list[tuple[float, float | None, str | None]] = []
        self.on_host_thread: list[bool] = []
        self.expected = expected
        self.all_in = threading.Event()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.reports.append((progress, total, message))
        self.on_host_thread.append(on_host_thread())
        if len(self.reports) >= self.expected:
            self.all_in.set()


def values(result: Any) -> list[str]:
    assert result.success, result
    return list(result.output["values"])


def test_prompt_arguments_and_template_variables_complete(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        assert values(rt.complete(NS, "greet", ("style", "f"), timeout=WAIT)) == ["formal", "friendly"]
        assert values(rt.complete(NS, NOTE_TEMPLATE, {"name": "name", "value": "al"})) == ["alpha", "alpine"]
        assert values(rt.complete(NS, {"type": "ref/prompt", "name": "greet"}, ("style", "zzz"))) == []

        message = Complete(
            namespace=NS,
            ref={"type": "ref/resource", "uri": NOTE_TEMPLATE},
            argument={"name": "name", "value": "b"},
        )
        rt.registry.tell(message)
        answer = message.reply.result(timeout=WAIT)
        assert values(answer) == ["beta"]
        assert answer.output is not None and answer.output.get("total") == 1

        # A malformed request is refused before it is sent.
        bad = rt.complete(NS, {"type": "ref/tool", "name": "x"}, ("a", "b"))
        assert bad.error_type == ErrorType.VALIDATION, bad
        assert rt.complete(NS, "greet", {"name": "style"}).error_type == ErrorType.VALIDATION


def test_a_completion_of_a_prompt_the_server_does_not_offer_is_refused(surface: ServerEntry) -> None:
    """As its ``prompts/get`` is (a server may answer it with an empty completion): whether the
    request starts the server or finds it running."""
    with Runtime.start(config({NS: surface()})) as rt:
        starting = rt.complete(NS, "no_such_prompt", ("style", "f"), timeout=WAIT)
        running = rt.complete(NS, "no_such_prompt", ("style", "f"), timeout=WAIT)
        for refused in (starting, running):
            assert (refused.error_type, refused.refusal) == (ErrorType.NOT_FOUND, RefusalReason.NOT_OFFERED)
        assert values(rt.complete(NS, "greet", ("style", "f"), timeout=WAIT)) == ["formal", "friendly"]


def test_server_everything_completes_with_context(everything: ServerEntry) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        assert values(rt.complete(EV, "completable-prompt", ("department", "E"))) == ["Engineering"]
        leads = rt.complete(EV, "completable-prompt", ("name", ""), context={"department": "Sales"})
        assert values(leads) == ["David", "Eve", "Frank"]
        template = "demo://resource/dynamic/text/{resourceId}"
        assert values(rt.complete(EV, template, ("resourceId", "7"))) == ["7"]


def test_progress_reaches_the_callback_in_order_on_a_host_thread(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        progress = Progress(expected=5)
        result = rt.call_tool(f"{NS}/progress", {"steps": 5}, timeout=WAIT, progress=progress)
        assert text_of(result) == "done 5"
        assert progress.all_in.wait(WAIT), progress.reports
        assert progress.reports == [(float(i), 5.0, f"step {i}") for i in range(1, 6)]
        assert all(progress.on_host_thread), "a progress callback ran on the loop or an actor thread"

        # The message API takes the callback too.
        again = Progress(expected=3)
        message = CallTool(namespace=NS, tool="progress", arguments={"steps": 3}, progress=again)
        rt.registry.tell(message)
        assert text_of(message.reply.result(timeout=WAIT)) == "done 3"
        assert again.all_in.wait(WAIT), again.reports
        assert [r[0] for r in again.reports] == [1.0, 2.0, 3.0]
        # A call without a callback asks for no progress and works as ever.
        assert text_of(rt.call_tool(f"{NS}/progress", {"steps": 2}, timeout=WAIT)) == "done 2"


def test_server_everything_long_operation_reports_increasing_progress(everything: ServerEntry) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        progress = Progress(expected=4)
        result = rt.call_tool(
            f"{EV}/trigger-long-running-operation",
            {"duration": 0.4, "steps": 4},
            timeout=WAIT,
            progress=progress,
        )
        assert "Steps: 4" in text_of(result)
        assert progress.all_in.wait(WAIT), progress.reports
        done = [r[0] for r in progress.reports]
        assert done == sorted(done) and len(set(done)) == len(done), done
        assert {r[1] for r in progress.reports} == {4.0}
        assert all(progress.on_host_thread)


@pytest.mark.parametrize("kind", ["raises", "is slow"])
def test_a_progress_callback_that_raises_or_is_slow_breaks_neither_the_call_nor_other_servers(
    surface_stdio: ServerEntry, kind: str
) -> None:
    release = threading.Event()
    called = threading.Event()

    def raising(progress: float, total: float | None, message: str | None) -> None:
        called.set()
        raise RuntimeError("the host's progress callback failed")

    def slow(progress: float, total: float | None, message: str | None) -> None:
        called.set()
        # Holds the host's news thread, longer than the calls may take, until the test lets go.
        release.wait(4 * WAIT)

    callback = raising if kind == "raises" else slow
    with Runtime.start(config({"a": surface_stdio(), "b": surface_stdio()})) as rt:
        try:
            assert rt.start_server("b").state == "running"
            result = rt.call_tool("a/progress", {"steps": 3}, timeout=WAIT, progress=callback)
            assert text_of(result) == "done 3"
            assert called.wait(WAIT)
            # Meanwhile (a slow callback still holds its thread) both servers answer.
            assert read_text(rt.read_resource("b", HELLO_URI, timeout=WAIT)) == HELLO_TEXT
            assert text_of(rt.call_tool("a/progress", {"steps": 2}, timeout=WAIT)) == "done 2"
            if kind == "is slow":
                assert not release.is_set()
        finally:
            release.set()
        for status in rt.status():
            assert (status.state, status.restarts) == ("running", 0), status
