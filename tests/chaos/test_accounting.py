"""The chaos harness's own checks can fail: a wrong answer, a late one and an unexpected outcome
are each counted (a harness that counted nothing would pass every run)."""

from __future__ import annotations

import random

from actors import ToolResult
from actors.tools import ErrorType
from tests.chaos.harness import ChaosPlan, Planned, Tally, plan_call

PLAN = ChaosPlan(seconds=1, seed=1)


def _text(text: str) -> ToolResult:
    return ToolResult.ok({"content": [{"type": "text", "text": text}]})


def test_a_success_must_carry_the_calls_own_answer() -> None:
    tally = Tally()
    planned = Planned("k0", "echo", {"text": "mine"}, 2.0, None, answer="mine")
    tally.record(planned, _text("mine"), 0.1, PLAN, "tell")
    assert (tally.ok, tally.wrong_answers) == (1, 0)
    tally.record(planned, _text("another call's text"), 0.1, PLAN, "tell")
    assert tally.wrong_answers == 1
    assert "wrong answer" in tally.examples[0]


def test_an_answer_after_timeout_plus_slack_is_late() -> None:
    tally = Tally()
    planned = Planned("hang", "sleep", {"seconds": 3600}, 1.0, frozenset({"timeout"}))
    timeout = ToolResult.fail(ErrorType.TIMEOUT, "no answer within 1 s")
    tally.record(planned, timeout, 1.0 + PLAN.slack - 0.01, PLAN, "call_tool")
    assert tally.late == 0
    tally.record(planned, timeout, 1.0 + PLAN.slack + 0.01, PLAN, "call_tool")
    assert tally.late == 1


def test_an_outcome_the_call_does_not_allow_is_unexpected() -> None:
    tally = Tally()
    planned = Planned("hang", "sleep", {"seconds": 3600}, 1.0, frozenset({"timeout"}))
    tally.record(planned, _text("slept 3600"), 0.5, PLAN, "ask")
    assert tally.unexpected == 1


def test_every_planned_success_has_an_answer_and_echo_texts_are_unique() -> None:
    rng = random.Random(7)
    planned = [plan_call(rng) for _ in range(5000)]
    for call in planned:
        if call.expect is None or "ok" in call.expect:
            assert call.answer is not None, call
    texts = [call.arguments["text"] for call in planned if call.tool == "echo" and call.answer]
    assert len(texts) == len(set(texts))
