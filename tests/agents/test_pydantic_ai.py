"""`McpActorsToolset`: the runtime's tools in a real pydantic-ai `Agent`, driven by scripted
offline models (`FunctionModel`) against the two real agent servers over stdio.

The model sees legal, reversible names and the servers' own schemas; results reach it as
pydantic-ai's parts (structured output, `BinaryImage`, resource blocks); a bad argument or a tool
error comes back as a retry, a dead server's call as a failed tool result, never as an exception
in the host; a killed server is restarted for the next turn; cancelling the agent's task cancels
the call at the server; a list change reaches the next turn; progress is an event of the run; and
the servers start only when called."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, BinaryContent, BinaryImage, ImageUrl
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.toolsets import AbstractToolset

from actors import AsyncRuntime, ToolResult
from actors.agents import ToolAnswer, Toolbox
from actors.agents.pydantic_ai import RETRYABLE, McpActorsToolset, ToolProgress, tool_return
from actors.tools import ErrorType
from tests.agents.conftest import NAMESPACES, WAIT, eventually, kill_server, states
from tests.servers.agent_server import DOCUMENT_TEXT, DOCUMENT_URI, LINK_URI, PIXEL_PNG

LEGAL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOLS = ("boom", "count", "document", "forecast", "grow", "pixel", "plan", "wait", "whoami")

Turn = Callable[[list[ModelMessage], AgentInfo], Awaitable[ModelResponse]]


class Script:
    """A scripted model: its n-th request is answered by the n-th turn; it keeps what each saw."""

    def __init__(self, *turns: Turn) -> None:
        self.turns = turns
        self.seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((list(messages), info))
        assert len(self.seen) <= len(self.turns), (
            f"the agent asked the model more than {len(self.turns)} times"
        )
        return await self.turns[len(self.seen) - 1](messages, info)

    def agent(self, toolset: AbstractToolset[Any]) -> Agent[None, str]:
        # A profile that takes return schemas as they are (others get them in the description).
        profile = ModelProfile(supports_tool_return_schema=True)
        return Agent(FunctionModel(self, profile=profile), toolsets=[toolset])

    def names(self, turn: int) -> set[str]:
        """The tool names the model was offered on ``turn`` (from 1)."""
        return {tool.name for tool in self.seen[turn - 1][1].function_tools}


def calls(*parts: ToolCallPart) -> Turn:
    async def turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=list(parts))

    return turn


def say(text: str) -> Turn:
    async def turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return turn


def returned(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    """The tool returns of the last request the model was sent, by tool call id."""
    request = messages[-1]
    assert isinstance(request, ModelRequest), request
    return {p.tool_call_id: p for p in request.parts if isinstance(p, ToolReturnPart)}


def call(tool: str, args: dict[str, Any] | str, call_id: str) -> ToolCallPart:
    return ToolCallPart(tool_name=tool, args=args, tool_call_id=call_id)


# ---- names and schemas -------------------------------------------------------------------------


def test_the_model_sees_legal_reversible_names_and_the_servers_own_schemas(
    agent_config: dict[str, Any],
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            toolset = McpActorsToolset(rt, namespaces=["alpha"])
            trip = {
                "traveller": "Ada",
                "stops": [{"city": "Oslo", "nights": 2}, {"city": "Bergen", "nights": 1}],
            }
            script = Script(calls(call("alpha__plan", {"trip": trip}, "p")), say("planned"))
            # The output schemas are carried too; pydantic-ai sends them when asked to.
            result = await script.agent(toolset.include_return_schemas()).run("plan my trip")
            assert result.output == "planned"

            offered = {tool.name: tool for tool in script.seen[0][1].function_tools}
            assert set(offered) == {f"alpha__{tool}" for tool in TOOLS}, "only alpha's tools, all of them"
            assert all(LEGAL.match(name) for name in offered)
            assert {name: toolset.toolbox.internal(name) for name in offered} == {
                f"alpha__{tool}": f"alpha/{tool}" for tool in TOOLS
            }
            # The schemas as the server gave them: $defs and all, not re-modelled.
            specs = {spec.name: spec for spec in await rt.list_tools("alpha")}
            plan = offered["alpha__plan"].parameters_json_schema
            assert plan == specs["alpha/plan"].input_schema
            assert set(plan["$defs"]) >= {"Stop", "Trip"}, plan
            assert plan["$defs"]["Stop"]["properties"]["nights"]["minimum"] == 1
            assert offered["alpha__forecast"].return_schema == specs["alpha/forecast"].output_schema
            assert offered["alpha__plan"].description == "Plan a trip: its stops and nights."
            assert offered["alpha__pixel"].return_schema is None

            [answer] = returned(script.seen[1][0]).values()
            assert answer.outcome == "success"
            assert answer.content == {"result": "Ada: Oslo -> Bergen, 3 nights"}
            # A toolset limited to alpha lists alpha only: beta was never started.
            assert (await states(rt))["beta"] == "idle"

    asyncio.run(scenario())


# ---- results and errors ------------------------------------------------------------------------


def test_results_reach_the_model_as_pydantic_ai_parts(agent_config: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            script = Script(
                calls(
                    call("alpha__forecast", {"city": "Oslo"}, "forecast"),
                    call("alpha__pixel", "{}", "pixel"),  # arguments as JSON text, as most APIs send them
                    call("alpha__document", {}, "document"),
                    call("beta__boom", {"message": "the bridge is out"}, "boom"),
                ),
                say("seen"),
            )
            result = await script.agent(McpActorsToolset(rt)).run("show me everything")
            assert result.output == "seen"
            parts = returned(script.seen[1][0])

            assert parts["forecast"].outcome == "success"
            assert parts["forecast"].content == {
                "city": "Oslo",
                "temperature": 21.5,
                "units": "c",
                "summary": "Sunny in Oslo",
            }

            image = parts["pixel"].content
            assert isinstance(image, BinaryImage) and image.media_type == "image/png", image
            assert image.data == PIXEL_PNG
            assert parts["pixel"].files == [image]

            text, resource, link = parts["document"].content
            assert text == "Here are the notes."
            assert resource == {
                "type": "resource",
                "uri": DOCUMENT_URI,
                "mimeType": "text/plain",
                "text": DOCUMENT_TEXT,
            }
            assert link == {
                "type": "resource_link",
                "uri": LINK_URI,
                "name": "archive",
                "mimeType": "text/plain",
            }

            # A tool error is pydantic-ai's retry, the server's message in it: not an exception here.
            assert parts["boom"].outcome == "retried", parts["boom"]
            assert "the bridge is out" in parts["boom"].model_response_str()

    asyncio.run(scenario())


def test_a_bad_argument_comes_back_to_the_model_as_a_retry_and_it_recovers(
    agent_config: dict[str, Any],
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            script = Script(
                calls(call("alpha__forecast", {"city": "Oslo", "units": "kelvin"}, "bad")),
                calls(call("alpha__forecast", {"city": "Oslo", "units": "f"}, "good")),
                say("fixed"),
            )
            result = await script.agent(McpActorsToolset(rt)).run("weather in Oslo")
            assert result.output == "fixed"

            # pydantic-ai 2.68 carries a retry as the call's own return, outcome "retried" (what
            # RetryPromptPart was), with the runtime's validation message for the model to act on.
            [bad] = returned(script.seen[1][0]).values()
            assert bad.outcome == "retried", bad
            assert "kelvin" in bad.model_response_str() and "validation" in bad.model_response_str()
            [good] = returned(script.seen[2][0]).values()
            assert good.outcome == "success" and good.content["temperature"] == 70.7, good

    asyncio.run(scenario())


# The pid whoami answers (the server's own) is the pid the runtime reports and kills.
@pytest.mark.real_process
def test_a_server_killed_mid_run_fails_that_call_and_is_restarted_for_the_next_turn(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            killed: list[int] = []

            async def kill_when_waiting() -> None:
                assert await eventually(_exists(marker_dir / "alpha.wait.started"), WAIT)
                killed.append(await kill_server(rt, "alpha"))

            killer = asyncio.ensure_future(kill_when_waiting())
            script = Script(
                calls(call("alpha__wait", {"seconds": 300}, "wait")),
                calls(call("alpha__whoami", {}, "whoami")),
                say("recovered"),
            )
            result = await script.agent(McpActorsToolset(rt)).run("wait, then who are you?")
            await killer
            assert result.output == "recovered"

            # The call the kill cut short is a failed tool result the model sees: not a retry
            # prompt (it could not have done better), and not an exception in the host.
            [cut] = returned(script.seen[1][0]).values()
            assert cut.outcome == "failed", cut
            assert "connection" in cut.model_response_str()
            # The next turn's call ran on a new process.
            [who] = returned(script.seen[2][0]).values()
            assert who.outcome == "success", who
            name, pid = who.content["result"].split()
            assert name == "alpha" and int(pid) != killed[0]
            [alpha] = await rt.status("alpha")
            assert alpha.state == "running" and alpha.restarts >= 1, alpha

    asyncio.run(scenario())


def test_a_runtime_shut_down_mid_run_answers_the_model_cancelled_and_never_raises_in_the_host(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:

            async def shut_when_waiting() -> None:
                assert await eventually(_exists(marker_dir / "alpha.wait.started"), WAIT)
                await rt.aclose()

            closer = asyncio.ensure_future(shut_when_waiting())
            script = Script(
                calls(call("alpha__wait", {"seconds": 300}, "wait")),
                calls(call("alpha__whoami", {}, "whoami")),
                say("the tools are gone"),
            )
            result = await script.agent(McpActorsToolset(rt)).run("wait, then who are you?")
            await closer
            assert result.output == "the tools are gone"
            # The call the shutdown cut short, and the one after it: failed results, `cancelled`;
            # the turn after the shutdown was offered the tools last listed.
            for turn in (2, 3):
                [answer] = returned(script.seen[turn - 1][0]).values()
                assert answer.outcome == "failed", answer
                assert str(answer.content).startswith("cancelled: "), answer
            assert script.names(3) == script.names(1)

    asyncio.run(scenario())


def test_a_failure_the_model_cannot_correct_is_a_failed_result_unless_made_retryable(
    agent_config: dict[str, Any],
) -> None:
    assert ErrorType.TIMEOUT not in RETRYABLE

    async def outcome(rt: AsyncRuntime, toolset: McpActorsToolset) -> str:
        script = Script(calls(call("alpha__wait", {"seconds": 300}, "wait")), say("gave up"))
        assert (await script.agent(toolset).run("wait")).output == "gave up"
        [timed_out] = returned(script.seen[1][0]).values()
        assert "timeout" in timed_out.model_response_str(), timed_out
        return timed_out.outcome

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            await rt.start_server("alpha")  # so that the calls' short timeout is spent waiting
            assert await outcome(rt, McpActorsToolset(rt, timeout=1.0)) == "failed"
            retrying = McpActorsToolset(rt, timeout=1.0, retryable=RETRYABLE | {ErrorType.TIMEOUT})
            assert await outcome(rt, retrying) == "retried"

    asyncio.run(scenario())


# ---- cancellation and progress -----------------------------------------------------------------


def test_cancelling_the_agents_task_cancels_the_call_at_the_server(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    # A call timeout far beyond the test's waits: only the cancellation can end the call in time.
    agent_config["mcpServers"]["beta"]["callTimeout"] = 3600

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            script = Script(calls(call("beta__wait", {"seconds": 3000}, "wait")), say("never"))
            run = asyncio.ensure_future(script.agent(McpActorsToolset(rt)).run("wait for it"))
            assert await eventually(_exists(marker_dir / "beta.wait.started"), WAIT)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert await eventually(_exists(marker_dir / "beta.wait.cancelled"), WAIT)
            assert len(script.seen) == 1
            # The server goes on serving.
            answer = await rt.call_tool("beta/whoami", timeout=WAIT)
            assert answer.success, answer

    asyncio.run(scenario())


def test_progress_reports_are_events_of_the_run(agent_config: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            script = Script(calls(call("alpha__count", {"steps": 3}, "count")), say("counted"))
            agent = script.agent(McpActorsToolset(rt))
            events: list[ToolProgress] = []
            async with agent.iter("count to three") as run:
                async for node in run:
                    if Agent.is_call_tools_node(node):
                        async with node.stream(run.ctx) as stream:
                            events.extend([e async for e in stream if isinstance(e, ToolProgress)])
            assert run.result is not None and run.result.output == "counted"
            assert [(e.progress, e.total, e.message) for e in events] == [
                (float(i), 3.0, f"step {i}") for i in (1, 2, 3)
            ]
            assert {(e.tool_call_id, e.tool_name) for e in events} == {("count", "alpha__count")}
            [answer] = returned(script.seen[1][0]).values()
            assert answer.content == {"result": "counted 3"}

    asyncio.run(scenario())


# ---- list changes and laziness -----------------------------------------------------------------


def test_a_list_change_reaches_the_model_on_its_next_turn(agent_config: dict[str, Any]) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()

        def lists_changed(namespace: str, kind: str) -> None:  # on a host thread
            if (namespace, kind) == ("alpha", "tools"):
                loop.call_soon_threadsafe(changed.set)

        async with AsyncRuntime.start(agent_config, on_lists_changed=lists_changed) as rt:
            script = Script(
                calls(call("alpha__grow", {"tool": "sprout"}, "grow")),
                calls(call("alpha__sprout", {}, "sprout")),
                say("grown"),
            )
            async with script.agent(McpActorsToolset(rt)).iter("grow a tool") as run:
                async for node in run:
                    if Agent.is_model_request_node(node) and len(script.seen) == 1:
                        # The grow call has run (the node before this one). The change reaches the
                        # runtime a moment after the answer: once it has re-listed, the request this
                        # node makes, the model's next turn, must offer the new tool.
                        await asyncio.wait_for(changed.wait(), WAIT)
            assert run.result is not None and run.result.output == "grown"
            assert "alpha__sprout" not in script.names(1)
            assert "alpha__sprout" in script.names(2)
            [sprout] = returned(script.seen[2][0]).values()
            assert sprout.outcome == "success" and "I am sprout" in str(sprout.content), sprout

    asyncio.run(scenario())


def test_the_servers_stay_lazy_until_a_call(agent_config: dict[str, Any], tmp_path: Path) -> None:
    cache = tmp_path / "schemas"

    async def scenario() -> None:
        # A first runtime lists both servers, which writes the schema cache.
        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            await rt.list_tools()
            assert await eventually(_count(cache, 2), WAIT), "the schema cache was not written"

        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            toolset = McpActorsToolset(rt)
            idle = dict.fromkeys(NAMESPACES, "idle")
            assert await states(rt) == idle
            seen_at_first_turn: dict[str, str] = {}

            async def first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
                # The tools were listed for this turn: from the cache, starting nothing.
                seen_at_first_turn.update(await states(rt))
                return ModelResponse(parts=[call("alpha__whoami", {}, "who")])

            script = Script(first, say("done"))
            agent = script.agent(toolset)
            async with toolset, agent:
                assert await states(rt) == idle, "entering the toolset (or the agent) started a server"
                result = await agent.run("who is there?")
            assert result.output == "done"
            assert len(script.names(1)) == 2 * len(TOOLS)
            assert seen_at_first_turn == idle
            assert await states(rt) == {"alpha": "running", "beta": "idle"}

    asyncio.run(scenario())


# ---- the mapping itself ------------------------------------------------------------------------


def test_every_kind_of_part_maps_onto_pydantic_ai_without_loss() -> None:
    png = base64.b64encode(PIXEL_PNG).decode()
    wav = base64.b64encode(b"RIFF....WAVE").decode()
    blob = base64.b64encode(b"%PDF-1.7").decode()
    content = [
        {"type": "text", "text": "all of it"},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "audio", "data": wav, "mimeType": "audio/wav"},
        {
            "type": "resource",
            "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": blob},
        },
        {
            "type": "resource_link",
            "uri": "https://example.org/cat.png",
            "name": "cat",
            "mimeType": "image/png",
        },
        {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes", "description": "the notes"},
    ]
    items = tool_return(ToolAnswer.of(ToolResult.ok({"content": content})))
    text, image, audio, document, cat, notes = items
    assert text == "all of it"
    assert isinstance(image, BinaryImage) and image.data == PIXEL_PNG
    assert isinstance(audio, BinaryContent) and audio.is_audio and audio.data == b"RIFF....WAVE"
    assert isinstance(document, BinaryContent) and document.data == b"%PDF-1.7"
    assert document.media_type == "application/pdf" and document.identifier == "file:///r.pdf"
    assert (
        isinstance(cat, ImageUrl)
        and cat.url == "https://example.org/cat.png"
        and cat.media_type == "image/png"
    )
    assert notes == {
        "type": "resource_link",
        "uri": "file:///notes.txt",
        "name": "notes",
        "description": "the notes",
    }

    # Structured output stands for the text that mirrors it; other parts follow it.
    structured = {
        "content": [{"type": "text", "text": json.dumps({"n": 1})}, content[1]],
        "structuredContent": {"n": 1},
    }
    first, picture = tool_return(ToolAnswer.of(ToolResult.ok(structured)))
    assert first == {"n": 1} and isinstance(picture, BinaryImage)
    assert tool_return(ToolAnswer.of(ToolResult.ok({"content": []}))) is None


def test_a_toolbox_brings_its_own_namespaces(agent_config: dict[str, Any]) -> None:
    runtime = AsyncRuntime.start(agent_config)  # not entered: a toolset is only configuration
    box = Toolbox(runtime, namespaces=["beta"])
    assert McpActorsToolset(box, id="mine").toolbox is box
    with pytest.raises(TypeError, match="Toolbox"):
        McpActorsToolset(box, namespaces=["alpha"])


def _exists(path: Path) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return path.exists()

    return check


def _count(folder: Path, n: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return folder.is_dir() and len(list(folder.glob("*.json"))) >= n

    return check
