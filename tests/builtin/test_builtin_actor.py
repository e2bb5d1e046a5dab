"""`BuiltinActor`: work whose caller was already answered never runs, the queue is bounded, and a
stop answers what is still queued."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pykka
import pytest

from actors.runtime.builtin_actor import DEFAULT_TIMEOUT, MAX_QUEUED, WORKERS, BuiltinActor
from actors.runtime.clock import ManualClock
from actors.runtime.messages import CallTool
from actors.runtime.timers import TimerService
from actors.tools import RefusalReason, ToolRegistry, ToolResult, ToolSpec

WAIT = 10.0
LONG = 60.0


class Tools:
    """A slow tool that holds a worker until released, a file writer, and a recorder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started = threading.Event()
        self.running = 0
        self.changed = threading.Condition()
        self.release = threading.Event()
        self.ran: list[str] = []
        self.lock = threading.Lock()
        self.registry = ToolRegistry()
        self.registry.register(ToolSpec(name="builtin/slow", handler=self.slow))
        self.registry.register(ToolSpec(name="builtin/write", handler=self.write))
        self.registry.register(ToolSpec(name="builtin/note", handler=self.note))

    def slow(self, inputs: dict[str, Any]) -> dict[str, Any]:
        self.started.set()
        with self.changed:
            self.running += 1
            self.changed.notify_all()
        assert self.release.wait(LONG)
        return {"slow": "done"}

    def write(self, inputs: dict[str, Any]) -> dict[str, Any]:
        (self.folder / inputs["name"]).write_text("written")
        self.record(f"write:{inputs['name']}")
        return {"written": inputs["name"]}

    def note(self, inputs: dict[str, Any]) -> dict[str, Any]:
        self.record(f"note:{inputs.get('n')}")
        return {"n": inputs.get("n")}

    def record(self, what: str) -> None:
        with self.lock:
            self.ran.append(what)


@pytest.fixture
def tools(tmp_path: Path) -> Tools:
    return Tools(tmp_path)


@contextmanager
def builtin_actor(
    tools: Tools, *, timers: TimerService | None = None, **options: Any
) -> Iterator[pykka.ActorRef[Any]]:
    timers = timers or TimerService(name="test-builtin-timers")
    ref = BuiltinActor.start(tools.registry, timers=timers, **options)
    try:
        yield ref
    finally:
        tools.release.set()
        ref.stop()
        timers.stop()


def send(ref: pykka.ActorRef[Any], tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> CallTool:
    call = CallTool("builtin", tool, arguments or {}, **kw)
    ref.tell(call)
    return call


def answer(call: CallTool) -> ToolResult:
    result: ToolResult = call.reply.result(timeout=WAIT)
    return result


def hold_the_worker(ref: pykka.ActorRef[Any], tools: Tools) -> CallTool:
    slow = send(ref, "slow", timeout=LONG)
    assert tools.started.wait(WAIT)
    return slow


def test_a_call_that_timed_out_while_queued_never_runs(tools: Tools) -> None:
    with builtin_actor(tools, workers=1) as ref:
        slow = hold_the_worker(ref, tools)
        write = send(ref, "write", {"name": "late.txt"}, timeout=0.2)
        result = answer(write)
        assert result.error_type == "timeout"
        tools.release.set()
        assert answer(slow).success
        # One worker takes jobs in order: once this one has run, the write was taken up.
        assert answer(send(ref, "note", {"n": 1}, timeout=LONG)).success
    assert not (tools.folder / "late.txt").exists()
    assert tools.ran == ["note:1"]
    assert result.error == "timeout: builtin/write did not start within 0.2 s: the built-in tools were busy"


def test_a_call_cancelled_by_its_caller_never_runs(tools: Tools) -> None:
    with builtin_actor(tools, workers=1) as ref:
        slow = hold_the_worker(ref, tools)
        write = send(ref, "write", {"name": "cancelled.txt"}, timeout=LONG)
        assert write.reply.cancel()
        tools.release.set()
        assert answer(slow).success
        assert answer(send(ref, "note", {"n": 1}, timeout=LONG)).success
    assert not (tools.folder / "cancelled.txt").exists()
    assert tools.ran == ["note:1"]


def test_a_running_call_is_answered_at_its_deadline(tools: Tools) -> None:
    with builtin_actor(tools, workers=1) as ref:
        slow = send(ref, "slow", timeout=0.2)
        result = answer(slow)
        assert tools.started.is_set()
        assert result.error == "timeout: builtin/slow took longer than 0.2 s"
        tools.release.set()
        # The worker is free again and the late outcome did not replace the answer.
        assert answer(send(ref, "note", {"n": 1}, timeout=LONG)).success
        assert slow.reply.result(timeout=0).error_type == "timeout"


def test_the_queue_is_bounded(tools: Tools) -> None:
    with builtin_actor(tools, workers=1, max_queued=3) as ref:
        slow = hold_the_worker(ref, tools)
        queued = [send(ref, "note", {"n": i}, timeout=LONG) for i in range(3)]
        refused = [send(ref, "note", {"n": i}, timeout=LONG) for i in range(3, 5)]
        for call in refused:
            result = answer(call)
            assert result.error_type == "execution"
            assert result.error == (
                "execution error: builtin/note was not run: the built-in tools are busy (3 calls queued)"
            )
        assert not any(call.reply.done() for call in queued)
        tools.release.set()
        assert answer(slow).success
        assert [answer(call).output for call in queued] == [{"n": 0}, {"n": 1}, {"n": 2}]
        # Room again once the queue drains.
        assert answer(send(ref, "note", {"n": 5}, timeout=LONG)).success
    assert tools.ran == ["note:0", "note:1", "note:2", "note:5"]


def test_the_default_bound_is_reached(tools: Tools) -> None:
    # Every default worker held, then MAX_QUEUED calls wait and the next is refused.
    assert MAX_QUEUED == 256
    with builtin_actor(tools) as ref:
        slow = [send(ref, "slow", timeout=LONG) for _ in range(WORKERS)]
        with tools.changed:
            assert tools.changed.wait_for(lambda: tools.running == WORKERS, WAIT), tools.running
        queued = [send(ref, "note", {"n": i}, timeout=LONG) for i in range(MAX_QUEUED)]
        past = send(ref, "note", {"n": MAX_QUEUED}, timeout=LONG)
        done, _ = concurrent.futures.wait([past.reply], WAIT)
        assert done, "the call past the default bound was queued, not refused"
        refused = answer(past)
        assert refused.error == (
            "execution error: builtin/note was not run: the built-in tools are busy (256 calls queued)"
        )
        assert not any(call.reply.done() for call in queued)
        tools.release.set()
        assert all(answer(call).success for call in slow)
        assert [answer(call).output for call in queued] == [{"n": i} for i in range(MAX_QUEUED)]
    assert sorted(tools.ran) == sorted(f"note:{i}" for i in range(MAX_QUEUED))


def test_the_default_timeout_is_reached(tools: Tools) -> None:
    # A call that names no timeout runs until DEFAULT_TIMEOUT on a clock the test moves: not
    # answered just before it, a timeout at it.
    assert DEFAULT_TIMEOUT == 60.0
    clock = ManualClock()
    timers = TimerService(name="test-builtin-timers", clock=clock)
    with builtin_actor(tools, timers=timers, workers=1) as ref:
        slow = send(ref, "slow")
        assert slow.timeout is None
        assert tools.started.wait(WAIT)
        clock.advance(DEFAULT_TIMEOUT - 0.5)
        assert not slow.reply.done(), slow.reply.result(timeout=0)
        clock.advance(0.5)
        assert slow.reply.done(), "no answer at the default timeout"
        assert answer(slow).error == "timeout: builtin/slow took longer than 60 s"


def test_stopping_answers_queued_calls_and_runs_none_of_them(tools: Tools) -> None:
    timers = TimerService(name="test-builtin-timers")
    ref = BuiltinActor.start(tools.registry, timers=timers, workers=1)
    try:
        slow = hold_the_worker(ref, tools)
        queued = [send(ref, "write", {"name": f"{i}.txt"}, timeout=LONG) for i in range(3)]
        ref.stop()
        for call in queued:
            result = answer(call)
            assert result.error_type == "cancelled"
            assert result.error == "cancelled: builtin/write: the built-in tools stopped"
        # The call that was running finishes; then the worker ends (the leak check sees to it).
        tools.release.set()
        assert answer(slow).success
        assert timers.pending() == 0
    finally:
        tools.release.set()
        if ref.is_alive():
            ref.stop()
        timers.stop()
    assert not any((tools.folder / f"{i}.txt").exists() for i in range(3))
    assert tools.ran == []


def test_calls_are_checked_like_any_other(tools: Tools) -> None:
    with builtin_actor(tools) as ref:
        for call, fragment in [
            (send(ref, "note", timeout="5"), "timeout must be a positive number"),  # type: ignore[arg-type]
            (send(ref, "note", timeout=-1), "timeout must be a positive number"),
            (send(ref, "note", {"n": float("nan")}), "not JSON-serialisable"),
        ]:
            result = answer(call)
            assert result.error_type == "validation", result
            assert fragment in (result.error or "")
        missing = answer(send(ref, "nope"))
        assert missing.error_type == "not_found"
        assert missing.refusal is RefusalReason.NOT_OFFERED
        assert missing.error == (
            "not found: tool 'nope' is not offered by server 'builtin'; did you mean 'note'? "
            "(its tools: note, slow, write)"
        )
    assert tools.ran == []
