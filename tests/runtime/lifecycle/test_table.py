"""Every (stage, event) pair of the lifecycle, the refused ones included: no threads, no time."""

from __future__ import annotations

import pytest

from actors.runtime import lifecycle as lc
from actors.runtime.lifecycle import effects as fx
from actors.runtime.lifecycle import events as ev
from actors.runtime.state import ServerState
from tests.runtime.lifecycle import table

PAIRS = [(stage, event) for event in lc.EVENTS for stage in lc.Stage]
EXPECTED = table.read()


def test_every_pair_does_what_the_table_says() -> None:
    # One test for all pairs (each a few microseconds): a parametrized test each would spend
    # far longer in the suite's per-test guards than in the lifecycle.
    wrong = [
        f"code:  {table.row(s, e)}\ntable: {EXPECTED[s.value, e.label]}"
        for s, e in PAIRS
        if table.row(s, e) != EXPECTED[s.value, e.label]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_table_lists_every_pair_once_and_nothing_else() -> None:
    assert set(EXPECTED) == {(s.value, e.label) for s, e in PAIRS}
    assert len({(s, e.label) for s, e in PAIRS}) == len(PAIRS), "two sample events share a label"


def test_every_event_kind_has_a_rule_and_a_refused_set() -> None:
    kinds = {type(e) for e in lc.EVENTS}
    assert kinds == set(lc.RULES) == set(lc.REFUSED)


@pytest.mark.parametrize("stage", list(lc.Stage), ids=[s.value for s in lc.Stage])
def test_refused_is_exactly_where_no_rule_applies(stage: lc.Stage) -> None:
    for event in lc.EVENTS:
        _refused_is_exactly_where_no_rule_applies(stage, event)


def _refused_is_exactly_where_no_rule_applies(stage: lc.Stage, event: lc.Event) -> None:
    refused = stage in lc.REFUSED[type(event)]
    assert (lc.RULES[type(event)](stage, event) is None) == refused
    moved = lc.step(stage, event)
    assert moved.refused == refused
    if refused:
        assert (moved.stage, moved.effects) == (stage, ())


@pytest.mark.parametrize("stage", list(lc.Stage), ids=[s.value for s in lc.Stage])
def test_what_the_effects_and_stages_promise(stage: lc.Stage) -> None:
    for event in lc.EVENTS:
        _promises(stage, event)


def _promises(stage: lc.Stage, event: lc.Event) -> None:
    moved = lc.step(stage, event)
    kinds = [type(e) for e in moved.effects]
    # A session opens only from a stage with no connection, into connecting.
    if fx.OpenSession in kinds:
        assert moved.stage == lc.Stage.CONNECTING and kinds[-1] is fx.OpenSession
    if moved.stage == lc.Stage.CONNECTING and stage != lc.Stage.CONNECTING:
        assert fx.OpenSession in kinds
    # A retired server starts nothing and stays retired.
    if stage.retired:
        assert moved.stage.retired and fx.OpenSession not in kinds and fx.DispatchRequest not in kinds
    # Only a running server sends requests; a cancel happens only to an opening link.
    if fx.DispatchRequest in kinds:
        assert stage == moved.stage == lc.Stage.RUNNING
    if fx.CancelStart in kinds:
        assert stage.link == lc.Link.OPENING and moved.stage.link == lc.Link.OPENING
    if fx.CloseSession in kinds:
        assert (
            stage.link in (lc.Link.UP, lc.Link.OPENING, lc.Link.DOWN) and moved.stage.link == lc.Link.CLOSING
        )
    # Answering stops means the stop is done.
    if fx.AnswerStops in kinds:
        assert stage.public == ServerState.STOPPING


def test_public_states_are_the_servers_states() -> None:
    assert {s.public for s in lc.Stage} == set(ServerState)
    assert {s for s in lc.Stage if s.retired} == {
        lc.Stage.RETIRING,
        lc.Stage.RETIRING_CANCEL,
        lc.Stage.RETIRED,
        lc.Stage.RETIRED_IDLE,
    }


def run(stage: lc.Stage, *events: lc.Event) -> tuple[lc.Stage, list[str]]:
    """Feed ``events`` in order; the last stage and every effect, by name."""
    done: list[str] = []
    for event in events:
        moved = lc.step(stage, event)
        assert not moved.refused, f"{event.label} refused in {stage.value}"
        stage = moved.stage
        done.extend(table.effect_text(e) for e in moved.effects)
    return stage, done


def test_a_call_starts_an_idle_server_and_goes_once_it_runs() -> None:
    stage, done = run(lc.Stage.IDLE, ev.CallArrived(), ev.Connected())
    assert stage == lc.Stage.RUNNING
    assert done[:2] == ["Queue", "OpenSession"] and "FlushWaiting" in done and "Tell(up)" in done


def test_a_stop_during_a_start_cancels_it_and_ends_as_that_stop() -> None:
    stage, done = run(lc.Stage.IDLE, ev.StartAsked(), ev.StopAsked())
    assert stage == lc.Stage.CANCELLING and done[-1] == "CancelStart"
    # The start got there first: it is closed, and the stop ends when it has.
    stage, done = run(stage, ev.Connected(), ev.SessionClosed())
    # Its tools are known now, and the start asked before the stop ends as that stop.
    cancelled = "FailStarts(cancelled, STOPPED_WHILE_STARTING)"
    assert (stage, done[:5]) == (
        lc.Stage.STOPPED,
        ["Learn", "AnswerDescribes", cancelled, "CloseSession", "Tell(stopped)"],
    )
    assert done[5] == "AnswerStops"
    # Or the cancel did: the failed start is the stop's end, and no error is noted.
    stage, done = run(lc.Stage.CANCELLING, ev.ConnectFailed("cancelled"))
    assert stage == lc.Stage.STOPPED and not any(d.startswith("NoteError") for d in done)


def test_a_start_asked_while_the_old_session_closes_opens_a_new_one_after() -> None:
    stage, done = run(lc.Stage.RUNNING, ev.LinkLost(), ev.RestartDue())
    assert stage == lc.Stage.AWAITING_CLOSE and "OpenSession" not in done
    stage, done = run(stage, ev.SessionClosed())
    assert (stage, done) == (lc.Stage.CONNECTING, ["OpenSession"])


def test_a_start_asked_while_stopping_is_made_once_the_stop_is_answered() -> None:
    stage, _ = run(lc.Stage.RUNNING, ev.StopAsked(), ev.StartAsked())
    assert stage == lc.Stage.CLOSING_THEN_START
    stage, done = run(stage, ev.SessionClosed())
    assert (stage, done) == (lc.Stage.CONNECTING, ["Tell(stopped)", "AnswerStops", "OpenSession"])


def test_a_retired_server_answers_everything_cancelled_and_starts_nothing() -> None:
    stage, _ = run(lc.Stage.RUNNING, ev.RetireAsked("gone"))
    assert stage == lc.Stage.RETIRING
    for event in (ev.CallArrived(), ev.StartAsked(), ev.SubscribeAsked()):
        assert run(stage, event) == (stage, ["Refuse(cancelled, RETIRED)"])
    assert lc.step(stage, ev.RestartDue()).refused
    assert run(stage, ev.SessionClosed(wanted=True)) == (lc.Stage.RETIRED, ["Tell(stopped)", "AnswerStops"])


def test_the_idle_check_reads_the_time_it_is_given() -> None:
    busy = ev.IdleTick(now=1000.0, last_activity=0.0, idle_timeout=30.0, busy=True)
    assert run(lc.Stage.RUNNING, busy) == (lc.Stage.RUNNING, ["ArmIdleTimer(30.0)"])
    early = ev.IdleTick(now=1010.0, last_activity=1000.0, idle_timeout=30.0)
    assert run(lc.Stage.RUNNING, early) == (lc.Stage.RUNNING, ["ArmIdleTimer(20.0)"])
    due = ev.IdleTick(now=1030.0, last_activity=1000.0, idle_timeout=30.0)
    assert run(lc.Stage.RUNNING, due) == (lc.Stage.CLOSING, ["CloseSession"])
    off = ev.IdleTick(now=1030.0, last_activity=1000.0, idle_timeout=0.0)
    assert run(lc.Stage.RUNNING, off) == (lc.Stage.RUNNING, [])


def test_texts_render_with_what_the_actor_knows() -> None:
    text = lc.Text(lc.TextKind.GAVE_UP, "3 ends in 60 s")
    assert text.render("gh", 3, None, None) == "server 'gh' gave up after 3 restarts (3 ends in 60 s)"
    assert lc.Text(lc.TextKind.RETIRED).render("gh", 0, None, "unregistered") == "unregistered"
