"""The pure parts of multi round-trip requests through the gateway: the sealed ``requestState``,
which held request a retry answers, and which capabilities a round needs. No threads, no I/O."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from mcp.shared.exceptions import MCPError

from actors.gateway.handoff import LoopHandoff
from actors.gateway.rounds import Asked, Held, HeldCalls, StateSeal, missing_capabilities
from actors.mcp.inputs import InputRefused, required_capabilities

ELICIT = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {}}}
SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
ROOTS = {"method": "roots/list", "params": {}}
WHAT = Held("tools/call", "everything", lambda result: result)


def test_a_sealed_state_opens_to_its_payload() -> None:
    seal = StateSeal(b"k" * 32)
    state = seal.seal({"c": "abc", "r": 2})
    assert seal.open(state) == {"c": "abc", "r": 2}


@pytest.mark.parametrize(
    "tamper",
    [
        lambda s: s + "-TAMPERED",
        lambda s: "x" + s,
        lambda s: s.replace(".", ""),
        lambda s: s.split(".")[0] + "." + "A" * 43,
        lambda s: "",
        lambda s: "not base64!.tag",
    ],
)
def test_a_tampered_state_does_not_open(tamper: object) -> None:
    seal = StateSeal(b"k" * 32)
    state = seal.seal({"c": "abc", "r": 0})
    assert callable(tamper)
    assert seal.open(tamper(state)) is None


def test_a_state_sealed_under_another_key_does_not_open() -> None:
    assert StateSeal(b"a" * 32).open(StateSeal(b"b" * 32).seal({"c": "x"})) is None


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ACTORS_REQUEST_STATE_KEY", "shared secret")
    one, two = StateSeal.from_environment(), StateSeal.from_environment()
    assert two.open(one.seal({"c": "x"})) == {"c": "x"}
    monkeypatch.delenv("MCP_ACTORS_REQUEST_STATE_KEY")
    assert StateSeal.from_environment().open(StateSeal.from_environment().seal({"c": "x"})) is None


def _code(exc: pytest.ExceptionInfo[MCPError]) -> int:
    return exc.value.error.code


def test_a_retry_finds_its_held_request_once() -> None:
    async def scenario() -> None:
        handoff = LoopHandoff()
        handoff.bind(asyncio.get_running_loop())
        held_calls = HeldCalls(handoff, StateSeal(b"k" * 32))
        held = held_calls.open(WHAT, {"elicitation": {}})
        held.task = asyncio.get_running_loop().create_future()
        answers = held.ask({"name": ELICIT})
        asked = await held.next()
        assert isinstance(asked, Asked) and asked.requests == {"name": ELICIT}
        state = held_calls.state(held)
        assert held_calls.take(state) is held
        held.resume({"name": {"action": "accept", "content": {"name": "Alice"}}})
        assert answers.result(timeout=1) == {"name": {"action": "accept", "content": {"name": "Alice"}}}
        with pytest.raises(MCPError, match="already used") as replayed:
            held_calls.take(state)
        assert _code(replayed) == -32602
        with pytest.raises(MCPError, match="integrity") as tampered:
            held_calls.take(state + "-TAMPERED")
        assert _code(tampered) == -32602
        held_calls.close(held)
        with pytest.raises(MCPError, match="no longer held"):
            held_calls.take(state)
        held.task.cancel()

    asyncio.run(scenario())


def test_a_state_of_another_gateway_process_is_refused_as_such() -> None:
    async def scenario() -> None:
        handoff = LoopHandoff()
        handoff.bind(asyncio.get_running_loop())
        key = StateSeal(b"k" * 32)
        here, there = HeldCalls(handoff, key), HeldCalls(handoff, key)
        held = there.open(WHAT, {})
        held.task = asyncio.get_running_loop().create_future()
        held.ask({"r": ROOTS})
        await held.next()
        with pytest.raises(MCPError, match="another gateway process"):
            here.take(there.state(held))
        held.abandon()

    asyncio.run(scenario())


def test_a_refused_round_fails_the_backends_request_with_the_error() -> None:
    async def scenario() -> concurrent.futures.Future[object]:
        handoff = LoopHandoff()
        handoff.bind(asyncio.get_running_loop())
        held = HeldCalls(handoff, StateSeal(b"k" * 32)).open(WHAT, {})
        held.task = asyncio.get_running_loop().create_future()
        answers = held.ask({"s": SAMPLE})
        await held.next()
        held.refuse(InputRefused(-32021, "needs sampling", {"requiredCapabilities": {"sampling": {}}}))
        held.task.cancel()
        return answers  # type: ignore[return-value]

    answers = asyncio.run(scenario())
    with pytest.raises(InputRefused) as refused:
        answers.result(timeout=1)
    assert refused.value.code == -32021


def test_the_result_ends_the_rounds() -> None:
    async def scenario() -> object:
        handoff = LoopHandoff()
        handoff.bind(asyncio.get_running_loop())
        held = HeldCalls(handoff, StateSeal(b"k" * 32)).open(WHAT, {})
        task = asyncio.get_running_loop().create_future()
        task.set_result("the result")
        held.task = task
        return await held.next()

    assert asyncio.run(scenario()) == "the result"


def test_the_capabilities_a_round_needs() -> None:
    assert required_capabilities({"a": ELICIT, "b": SAMPLE, "c": ROOTS, "d": {"method": "x"}}) == {
        "elicitation": {},
        "sampling": {},
        "roots": {},
    }
    assert missing_capabilities({"a": ELICIT, "b": SAMPLE}, {"sampling": {}}) == {"elicitation": {}}
    assert missing_capabilities({"a": ELICIT}, {"elicitation": {"form": {}}}) == {}


def test_what_a_client_without_the_capability_answers() -> None:
    from actors.gateway.rounds import without_capability

    assert without_capability({"e": ELICIT}, {"elicitation": {}}) == {"e": {"action": "decline"}}
    assert without_capability({"r": ROOTS}, {"roots": {}}) == {"r": {"roots": []}}
    assert without_capability({"s": SAMPLE}, {"sampling": {}}) is None  # no answer stands in
    assert without_capability({"e": ELICIT, "s": SAMPLE}, {"elicitation": {}}) is None  # sampling is declared
