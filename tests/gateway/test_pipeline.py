"""`Pipeline`: stages run in order over one request; a stage may answer, or pass it on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from actors.config import RuntimeConfig
from actors.gateway.external import ExternalNames
from actors.gateway.pipeline import Forwarded, Next, Pipeline
from actors.gateway.routing import Serving


def request(name: str = "echo") -> Forwarded:
    serving = Serving(RuntimeConfig(), ExternalNames(), tool_search=False)
    return Forwarded(None, "tools/call", f"ns_{name}", "ns", name, {"text": "x"}, serving)


def test_stages_run_in_order_then_the_last_answers() -> None:
    seen: list[str] = []

    def stage(label: str) -> Callable[[Forwarded, Next[str]], Awaitable[str]]:
        async def run(call: Forwarded, rest: Next[str]) -> str:
            seen.append(label)
            return await rest(call)

        return run

    async def send(call: Forwarded) -> str:
        seen.append("send")
        return f"sent {call.namespace}/{call.name}"

    pipeline = Pipeline([("gate", stage("gate")), ("rounds", stage("rounds"))], send)
    assert pipeline.names == ("gate", "rounds")
    assert anyio.run(pipeline, request()) == "sent ns/echo"
    assert seen == ["gate", "rounds", "send"]


def test_a_stage_that_answers_ends_the_request() -> None:
    seen: list[str] = []

    async def refuse(call: Forwarded, rest: Next[str]) -> str:
        seen.append("gate")
        return "refused" if call.name == "secret" else await rest(call)

    async def later(call: Forwarded, rest: Next[str]) -> str:
        seen.append("later")
        return await rest(call)

    async def send(call: Forwarded) -> str:
        seen.append("send")
        return "sent"

    pipeline = Pipeline([("gate", refuse), ("later", later)], send)
    assert anyio.run(pipeline, request("secret")) == "refused"
    assert seen == ["gate"]
    assert anyio.run(pipeline, request("echo")) == "sent"
    assert seen == ["gate", "gate", "later", "send"]


def test_no_stages_is_the_send_alone() -> None:
    async def send(call: Forwarded) -> str:
        return call.external

    assert anyio.run(Pipeline([], send), request()) == "ns_echo"
