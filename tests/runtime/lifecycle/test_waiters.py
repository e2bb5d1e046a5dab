"""Every waiter is answered: a property over the whole lifecycle table, not one case.

A start, stop or describe request kept waiting (`KeepWaiter`) has no deadline of its own: only
an effect answers it. So whatever sequence of events a server meets, once it comes to rest
(idle, running, stopped, failed, retired) nothing may still be waiting. The waiters are tracked
by kind (which effect answers them), so the state space is finite: every (stage, waiters) pair
the table can reach is visited, and every event tried from each, which covers every sequence of
any length. Calls queued for a start are checked too: they have a deadline, but one that comes
to rest must not be left to it.
"""

from __future__ import annotations

from collections import deque

from actors.runtime import lifecycle as lc
from actors.runtime.lifecycle import effects as fx
from actors.runtime.lifecycle import events as ev

Waiters = frozenset[str]

AT_REST = frozenset(
    {
        lc.Stage.IDLE,
        lc.Stage.RUNNING,
        lc.Stage.STOPPED,
        lc.Stage.FAILED,
        lc.Stage.RETIRED,
        lc.Stage.RETIRED_IDLE,
    }
)
"""Where nothing is under way: no start, stop, close or restart will come to answer anyone."""

_KEPT = {ev.StartAsked: "start", ev.StopAsked: "stop", ev.RetireAsked: "stop", ev.DescribeAsked: "describe"}
_ANSWERS: dict[type[fx.Effect], str] = {
    fx.AnswerStarts: "start",
    fx.FailStarts: "start",
    fx.AnswerStops: "stop",
    fx.AnswerDescribes: "describe",
    fx.FlushWaiting: "call",
    fx.FailWaiting: "call",
}


def _events(waiters: Waiters) -> list[lc.Event]:
    """Every event the actor can send with these waiters: ``wanted`` means calls wait (and lazy
    start is on), so it is never true without them; the actor's own end is left out (it answers
    everyone itself)."""
    out = []
    for event in lc.EVENTS:
        if isinstance(event, ev.Released):
            continue
        if getattr(event, "wanted", False) and "call" not in waiters:
            continue
        out.append(event)
    # The calls' flag each way: calls may wait with lazy start off.
    for kind in (ev.ConnectFailed, ev.NeedsLogin):
        if "call" in waiters:
            out.append(kind(wanted=True))
    return out


def after(stage: lc.Stage, waiters: Waiters, event: lc.Event) -> tuple[lc.Stage, Waiters]:
    moved = lc.step(stage, event)
    now = set(waiters)
    for effect in moved.effects:
        if isinstance(effect, fx.KeepWaiter) and type(event) in _KEPT:
            now.add(_KEPT[type(event)])
        elif isinstance(effect, fx.Queue):
            now.add("call")
        elif type(effect) in _ANSWERS:
            now.discard(_ANSWERS[type(effect)])
    return moved.stage, frozenset(now)


def reachable() -> dict[tuple[lc.Stage, Waiters], list[str]]:
    """Every (stage, waiters) reachable from a new server, with the shortest path to it."""
    start = (lc.Stage.IDLE, frozenset[str]())
    paths: dict[tuple[lc.Stage, Waiters], list[str]] = {start: []}
    todo = deque([start])
    while todo:
        stage, waiters = todo.popleft()
        for event in _events(waiters):
            nxt = after(stage, waiters, event)
            if nxt not in paths:
                paths[nxt] = [*paths[stage, waiters], f"{event!r}"]
                todo.append(nxt)
    return paths


def test_every_waiter_is_answered_on_every_path_to_rest() -> None:
    stranded = [
        f"{stage.value} with {sorted(waiters)} waiting, after: {' -> '.join(path)}"
        for (stage, waiters), path in reachable().items()
        if stage in AT_REST and waiters
    ]
    assert not stranded, "\n".join(stranded)


def test_the_walk_reaches_every_stage() -> None:
    # The property means something only if the walk goes everywhere (with and without waiters).
    reached = reachable()
    assert {stage for stage, _ in reached} == set(lc.Stage)
    assert {w for _, waiters in reached for w in waiters} == {"start", "stop", "describe", "call"}
    assert len(reached) > 50
