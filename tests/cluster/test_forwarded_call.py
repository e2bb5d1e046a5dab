"""The parts of a forwarded request that need no owner: the rounds it answers, and which request
an owner's log message is for. The whole path, with replicas: tests/cluster/test_forwarded_rounds.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp_types import LOG_LEVEL_META_KEY

from actors.cluster.forwarded_call import MAX_ROUNDS, CallTags, capability_names, in_rounds
from actors.mcp.inputs import InputRefused
from actors.mcp.meta_keys import FORWARDED_CALL
from actors.tools import ErrorType, ToolResult

SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"}


class Relay:
    def __init__(self, log_level: types.LoggingLevel | None = "info") -> None:
        self.capabilities: Mapping[str, Any] = {"sampling": {}, "roots": {}}
        self.log_level = log_level
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.reports_progress = False

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        raise AssertionError("no progress here")


class Inputs:
    """Answers each round with a sampled message per request, or refuses it."""

    capabilities = None

    def __init__(self, refuse: bool = False) -> None:
        self.rounds: list[Mapping[str, Any]] = []
        self.refuse = refuse

    def ask(self, requests: Mapping[str, Any]) -> concurrent.futures.Future[Mapping[str, Any]]:
        self.rounds.append(requests)
        slot: concurrent.futures.Future[Mapping[str, Any]] = concurrent.futures.Future()
        if self.refuse:
            slot.set_exception(InputRefused(-32021, "not declared"))
        else:
            slot.set_result({key: SAMPLED for key in requests})
        return slot


def _asking(rounds: int) -> tuple[list[tuple[Any, Any]], Any]:
    """An owner that asks for a sample ``rounds`` times, then answers; what each round got."""
    seen: list[tuple[Any, Any]] = []

    async def send(responses: Any, state: str | None, meta: Any) -> types.Result:
        seen.append((responses, state))
        if len(seen) <= rounds:
            request = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
            return types.InputRequiredResult.model_validate(
                {"inputRequests": {"s": request}, "requestState": f"state-{len(seen)}"}
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    return seen, send


def test_rounds_are_answered_by_the_inputs_and_retried_with_the_owners_state() -> None:
    seen, send = _asking(2)
    inputs = Inputs()
    answer = asyncio.run(in_rounds(send, {}, inputs))  # type: ignore[arg-type]
    assert isinstance(answer, types.CallToolResult), answer
    assert [state for _, state in seen] == [None, "state-1", "state-2"]
    assert len(inputs.rounds) == 2 and inputs.rounds[0]["s"]["method"] == "sampling/createMessage"
    responses = seen[1][0]
    assert isinstance(responses["s"], types.CreateMessageResult), responses


def test_a_refused_round_an_unanswerable_one_and_endless_rounds_fail_classified() -> None:
    _, send = _asking(1)
    refused = asyncio.run(in_rounds(send, {}, Inputs(refuse=True)))  # type: ignore[arg-type]
    assert isinstance(refused, ToolResult) and refused.error_type == ErrorType.EXECUTION
    assert "not declared" in (refused.error or ""), refused
    _, send = _asking(1)
    nobody = asyncio.run(in_rounds(send, {}, None))  # type: ignore[arg-type]
    assert isinstance(nobody, ToolResult) and not nobody.success, nobody
    seen, send = _asking(MAX_ROUNDS + 5)
    endless = asyncio.run(in_rounds(send, {}, Inputs()))  # type: ignore[arg-type]
    assert isinstance(endless, ToolResult) and not endless.success and len(seen) == MAX_ROUNDS, endless


def test_a_log_message_goes_to_the_request_it_is_tagged_for_only() -> None:
    tags = CallTags()
    first, second = Relay(), Relay(log_level=None)
    tag, meta = tags.open(first)
    other, other_meta = tags.open(second)
    assert meta[FORWARDED_CALL] == tag and meta[LOG_LEVEL_META_KEY] == "info"  # type: ignore[literal-required]
    assert LOG_LEVEL_META_KEY not in other_meta and tag != other

    def message(for_tag: str | None) -> types.LoggingMessageNotificationParams:
        extra = {FORWARDED_CALL: for_tag, "kept": 1} if for_tag else None
        return types.LoggingMessageNotificationParams(level="info", data="x", logger="l", _meta=extra)

    asyncio.run(tags.on_log(message(tag)))
    asyncio.run(tags.on_log(message(None)))  # untagged: nobody's
    asyncio.run(tags.on_log(message("unknown")))
    tags.close(tag)
    asyncio.run(tags.on_log(message(tag)))  # after its request ended
    assert [m.meta for m in first.logs] == [{"kept": 1}] and not second.logs
    assert capability_names(first) == {"sampling", "roots"} and capability_names(None) == frozenset()
