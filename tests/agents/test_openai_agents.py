"""The OpenAI Agents SDK adapter (actors.agents.openai_agents) under a real `Runner.run`.

An offline scripted model (`Scripted`, a `agents.models.interface.Model`) plays the model: each
turn it records the tools it was given and the input it saw, and answers with the function calls
(or the final message) of its script. The tools run on the two real MCP servers of
tests/servers/agent_server.py (``alpha``, ``beta``) through an `AsyncRuntime`, lazily started.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agents
import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelResponse,
    ModelSettings,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    Tool,
    Usage,
    set_tracing_disabled,
)
from agents.models.interface import Model, ModelTracing
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from actors import AsyncRuntime
from actors.agents.openai_agents import ActorsMCPServer, ToolCallFailed, tool_error_message
from actors.mcp.names import EXTERNAL_NAME
from actors.tools import ErrorType
from tests.agents.conftest import WAIT, eventually, kill_server, states
from tests.runtime.conftest import config, stdio_server
from tests.servers.agent_server import DOCUMENT_TEXT, DOCUMENT_URI, LINK_URI, PIXEL_PNG

# Nothing of a test run may go to OpenAI's trace exporter (nor start its thread).
set_tracing_disabled(True)

RUN = RunConfig(tracing_disabled=True)


def test_agents_is_the_sdk_not_this_test_package() -> None:
    assert Path(agents.__file__).parent.name == "agents"
    assert "site-packages" in agents.__file__, agents.__file__
    assert issubclass(ActorsMCPServer, agents.mcp.MCPServer)


# ---- the scripted model -------------------------------------------------------------------------


@dataclass
class Turn:
    """What the model was given on one turn."""

    tools: list[Tool]
    input: list[Any]

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    def tool(self, name: str) -> FunctionTool:
        [found] = [t for t in self.tools if t.name == name]
        assert isinstance(found, FunctionTool)
        return found

    def outputs(self) -> dict[str, Any]:
        """The tool outputs the model reads this turn, by call id."""
        return {
            item["call_id"]: item["output"]
            for item in self.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }


Reply = list[Any]
Step = Reply | Callable[[Turn], Reply | Awaitable[Reply]]


class Scripted(Model):
    """A model that answers each turn with the next step of its script. (Not a dataclass: the
    SDK takes a dataclass model apart, field by field, for the run's state.)"""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.turns: list[Turn] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        turn = Turn(list(tools), [input] if isinstance(input, str) else list(input))
        self.turns.append(turn)
        assert self.steps, f"the script ran out on turn {len(self.turns)}"
        step = self.steps.pop(0)
        reply = step(turn) if callable(step) else step
        output = await reply if inspect.isawaitable(reply) else reply
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run the model unstreamed")


def call(name: str, arguments: dict[str, Any] | None = None, call_id: str | None = None) -> Any:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id or name}",
        call_id=call_id or name,
        type="function_call",
        name=name,
        arguments=json.dumps(arguments or {}),
    )


def say(text: str) -> Any:
    return ResponseOutputMessage(
        id="msg_final",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[], logprobs=[])],
    )


def agent_of(model: Scripted, **tools: Any) -> Agent[Any]:
    return Agent(name="tester", instructions="Use the tools.", model=model, **tools)


def text_of(output: Any) -> str:
    """A tool output as text: the string, or its text items joined."""
    if isinstance(output, str):
        return output
    return "\n".join(item["text"] for item in output if item.get("type") == "input_text")


# ---- names, schemas, laziness -------------------------------------------------------------------


def test_names_schemas_and_laziness(agent_config: dict[str, Any], tmp_path: Path) -> None:
    cache = tmp_path / "schemas"

    async def learn() -> None:
        # Each server runs once, so the schema cache knows their lists.
        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            assert len(await ActorsMCPServer(rt).list_tools()) == 18
            assert await eventually(lambda: _true(len(list(cache.glob("*.json"))) == 2), WAIT)

    async def main() -> None:
        await learn()
        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            server = ActorsMCPServer(rt)
            await server.connect()
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}, "connecting starts nothing"
            specs = {spec.name: spec for spec in await rt.list_tools()}
            model = Scripted([[call("alpha__whoami")], [say("done")]])
            result = await Runner.run(agent_of(model, mcp_servers=[server]), "who?", run_config=RUN)
            await server.cleanup()

            assert result.final_output == "done"
            first = model.turns[0]
            assert sorted(first.names) == sorted(n.replace("/", "__") for n in specs)
            for name in first.names:
                assert EXTERNAL_NAME.match(name) and len(name) <= 64
                assert server.toolbox.internal(name) == name.replace("__", "/", 1)
            plan = first.tool("alpha__plan")
            assert plan.params_json_schema == specs["alpha/plan"].input_schema
            assert set(plan.params_json_schema["$defs"]) == {"Stop", "Trip"}
            assert plan.params_json_schema["properties"]["trip"] == {"$ref": "#/$defs/Trip"}
            assert plan.strict_json_schema is False
            forecast = first.tool("alpha__forecast").params_json_schema
            assert forecast["properties"]["units"] == {
                "default": "c",
                "enum": ["c", "f"],
                "title": "Units",
                "type": "string",
            }
            assert forecast["required"] == ["city"], "an optional argument stays optional"
            # The lists came from the cache; only the server called was started.
            assert re.fullmatch(r"alpha \d+", text_of(model.turns[1].outputs()["alpha__whoami"]))
            assert await states(rt) == {"alpha": "running", "beta": "idle"}

    asyncio.run(main())


async def _true(value: bool) -> bool:
    return value


# ---- results ------------------------------------------------------------------------------------


def test_results_reach_the_model_as_the_sdk_shows_them(agent_config: dict[str, Any]) -> None:
    trip = {"traveller": "Ada", "stops": [{"city": "Oslo", "nights": 2}, {"city": "Bergen", "nights": 1}]}
    model = Scripted(
        [
            [
                call("alpha__forecast", {"city": "Oslo"}),
                call("alpha__pixel"),
                call("alpha__document"),
                call("alpha__plan", {"trip": trip}),
                call("beta__boom", {"message": "the fuse blew"}),
            ],
            [say("done")],
        ]
    )

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            agent = agent_of(model, mcp_servers=[ActorsMCPServer(rt)])
            result = await Runner.run(agent, "show me everything", run_config=RUN)
            assert result.final_output == "done"

    asyncio.run(main())
    outputs = model.turns[1].outputs()
    forecast = json.loads(text_of(outputs["alpha__forecast"]))
    assert forecast == {"city": "Oslo", "temperature": 21.5, "units": "c", "summary": "Sunny in Oslo"}
    [image] = outputs["alpha__pixel"]
    assert image["type"] == "input_image"
    assert image["image_url"] == "data:image/png;base64," + base64.b64encode(PIXEL_PNG).decode()
    document = outputs["alpha__document"]
    assert [item["type"] for item in document] == ["input_text"] * 3
    assert document[0]["text"] == "Here are the notes."
    embedded = json.loads(document[1]["text"])
    assert embedded["type"] == "resource"
    assert (embedded["resource"]["uri"], embedded["resource"]["text"]) == (DOCUMENT_URI, DOCUMENT_TEXT)
    link = json.loads(document[2]["text"])
    assert (link["type"], link["uri"], link["name"]) == ("resource_link", LINK_URI, "archive")
    assert text_of(outputs["alpha__plan"]) == "Ada: Oslo -> Bergen, 3 nights"
    # A tool error is the model's tool output, classified, through the SDK's failure path.
    assert outputs["beta__boom"] == "server error: Error executing tool boom: the fuse blew"


def test_a_bad_argument_comes_back_to_the_model_as_a_tool_error(agent_config: dict[str, Any]) -> None:
    failures: list[ToolCallFailed] = []

    def failed(context: RunContextWrapper[Any], error: Exception) -> str:
        assert isinstance(error, ToolCallFailed), error
        failures.append(error)
        return f"{error.error_type}: {tool_error_message(context, error)}"

    model = Scripted(
        [
            [call("alpha__plan", {"trip": {"traveller": "Ada", "stops": []}})],
            [call("alpha__forecast", {"city": 7})],
            [say("gave up")],
        ]
    )

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            server = ActorsMCPServer(rt, failure_error_function=failed)
            result = await Runner.run(agent_of(model, mcp_servers=[server]), "plan", run_config=RUN)
            assert result.final_output == "gave up"
            assert [f.error_type for f in failures] == [ErrorType.VALIDATION] * 2

    asyncio.run(main())
    assert model.turns[1].outputs()["alpha__plan"] == (
        "validation: validation error: alpha/plan: trip/stops: [] should be non-empty"
    )
    assert "city" in model.turns[2].outputs()["alpha__forecast"]
    # Refused by the runtime's check of the schema, before anything was sent.
    assert [f.answer.result.refusal for f in failures] == ["schema", "schema"]


# ---- supervision, cancellation, list changes ----------------------------------------------------


# The pid whoami answers (the server's own) is the pid the runtime reports and kills.
@pytest.mark.real_process
def test_a_server_killed_mid_run_is_restarted_and_the_next_turn_succeeds(
    agent_config: dict[str, Any],
) -> None:
    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            killed: list[int] = []

            async def kill_then_ask(turn: Turn) -> Reply:
                killed.append(await kill_server(rt, "alpha"))
                return [call("alpha__whoami", call_id="second")]

            model = Scripted([[call("alpha__whoami", call_id="first")], kill_then_ask, [say("done")]])
            agent = agent_of(model, mcp_servers=[ActorsMCPServer(rt)])
            assert (await Runner.run(agent, "who?", run_config=RUN)).final_output == "done"
            first = text_of(model.turns[1].outputs()["first"])
            second = text_of(model.turns[2].outputs()["second"])
            assert first == f"alpha {killed[0]}"
            assert re.fullmatch(r"alpha \d+", second) and second != first, (first, second)
            [status] = await rt.status("alpha")
            assert status.state == "running" and status.pid == int(second.split()[1]), status
            assert status.restarts == 1 and status.last_error, status

    asyncio.run(main())


def test_a_runtime_shut_down_mid_run_answers_the_model_cancelled_and_never_raises_in_the_host(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    started = marker_dir / "alpha.wait.started"

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:

            async def shut_when_waiting() -> None:
                assert await eventually(lambda: _true(started.exists()), WAIT), "the call never started"
                await rt.aclose()

            closer = asyncio.ensure_future(shut_when_waiting())
            model = Scripted(
                [
                    [call("alpha__wait", {"seconds": 300}, call_id="wait")],
                    [call("alpha__whoami", call_id="whoami")],
                    [say("the tools are gone")],
                ]
            )
            agent = agent_of(model, mcp_servers=[ActorsMCPServer(rt)])
            result = await Runner.run(agent, "wait, then who are you?", run_config=RUN)
            await closer
            assert result.final_output == "the tools are gone"
            # The call the shutdown cut short, and the one after it: tool errors, `cancelled`;
            # the turn after the shutdown was offered the tools last listed.
            assert text_of(model.turns[1].outputs()["wait"]).startswith("cancelled"), model.turns[1]
            assert text_of(model.turns[2].outputs()["whoami"]).startswith("cancelled"), model.turns[2]
            assert model.turns[2].names == model.turns[0].names

    asyncio.run(main())


def test_cancelling_the_run_cancels_the_call_at_the_server(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    started, cancelled = marker_dir / "alpha.wait.started", marker_dir / "alpha.wait.cancelled"

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            model = Scripted([[call("alpha__wait", {"seconds": 120})], [say("waited")]])
            agent = agent_of(model, mcp_servers=[ActorsMCPServer(rt)])
            run = asyncio.ensure_future(Runner.run(agent, "wait", run_config=RUN))
            assert await eventually(lambda: _true(started.exists()), WAIT), "the call never started"
            assert not cancelled.exists()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert await eventually(lambda: _true(cancelled.exists()), WAIT), "the server was not told"
            assert len(model.turns) == 1

    asyncio.run(main())


class _AfterGrowing(RunHooks[Any]):
    """Holds the run after ``grow`` until the runtime lists the grown tool: the server announces
    its list change, and the runtime re-lists, a little after the call's answer."""

    def __init__(self, rt: AsyncRuntime, tool: str) -> None:
        self.rt = rt
        self.tool = tool

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object
    ) -> None:
        if tool.name == "alpha__grow":

            async def listed() -> bool:
                return self.tool in {spec.name for spec in await self.rt.list_tools("alpha")}

            assert await eventually(listed, WAIT), f"{self.tool} was never listed"


def test_a_list_change_reaches_the_model_on_its_next_turn(agent_config: dict[str, Any]) -> None:
    model = Scripted(
        [
            [call("alpha__grow", {"tool": "sprout"})],
            lambda turn: [call("alpha__sprout")] if "alpha__sprout" in turn.names else [say("not there")],
            [say("done")],
        ]
    )

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            agent = agent_of(model, mcp_servers=[ActorsMCPServer(rt)])
            hooks = _AfterGrowing(rt, "alpha/sprout")
            result = await Runner.run(agent, "grow", run_config=RUN, hooks=hooks)
            assert result.final_output == "done"

    asyncio.run(main())
    assert "alpha__sprout" not in model.turns[0].names
    assert "alpha__sprout" in model.turns[1].names
    assert text_of(model.turns[1].outputs()["alpha__grow"]) == "grew sprout"
    assert text_of(model.turns[2].outputs()["alpha__sprout"]) == "I am sprout"


# ---- FunctionTools, structured output, progress -------------------------------------------------


def test_function_tools_structured_output_and_progress(agent_config: dict[str, Any]) -> None:
    reports: list[tuple[str, float, float | None, str | None]] = []

    async def progress(tool: str, done: float, total: float | None, message: str | None) -> None:
        reports.append((tool, done, total, message))

    model = Scripted(
        [
            [call("beta__forecast", {"city": "Rome", "units": "f"}), call("beta__count", {"steps": 3})],
            [call("beta__boom", {"message": "nope"})],
            [say("done")],
        ]
    )

    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            server = ActorsMCPServer(rt, namespaces=["beta"], progress=progress, use_structured_content=True)
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}
            tools = await server.function_tools()
            assert await states(rt) == {"alpha": "idle", "beta": "running"}, "only beta was listed"
            assert all(isinstance(t, FunctionTool) and t.name.startswith("beta__") for t in tools)
            [plan] = [t for t in tools if t.name == "beta__plan"]
            assert "$defs" in plan.params_json_schema and plan.strict_json_schema is False
            result = await Runner.run(agent_of(model, tools=tools), "weather", run_config=RUN)
            assert result.final_output == "done"
            assert await states(rt) == {"alpha": "idle", "beta": "running"}

    asyncio.run(main())
    outputs = model.turns[1].outputs()
    # With use_structured_content the SDK shows the structured output alone, exactly.
    assert json.loads(text_of(outputs["beta__forecast"])) == {
        "city": "Rome",
        "temperature": 70.7,
        "units": "f",
        "summary": "Sunny in Rome",
    }
    assert text_of(outputs["beta__count"]) == '{"result": "counted 3"}'
    assert reports == [("beta__count", float(n), 3.0, f"step {n}") for n in (1, 2, 3)]
    assert model.turns[2].outputs()["beta__boom"] == "server error: Error executing tool boom: nope"


def test_function_tools_are_strict_only_where_the_schema_already_is(tmp_path: Path) -> None:
    """The built-in tools (no process to start): ``file-write`` has a strict-compatible schema,
    ``file-edit`` an optional argument that strict mode would make required."""
    model = Scripted(
        [
            [call("builtin__file-write", {"path": "note.txt", "content": "hello"})],
            [call("builtin__file-read", {"path": "note.txt"})],
            [say("done")],
        ]
    )

    async def main() -> None:
        options = {"mcpServers": {}, "builtin": {"enabled": True, "workspace": str(tmp_path)}}
        async with AsyncRuntime.start(options) as rt:
            specs = {spec.name.replace("/", "__"): spec for spec in await rt.list_tools()}
            tools = {tool.name: tool for tool in await ActorsMCPServer(rt).function_tools()}
            assert tools.keys() == specs.keys()
            write, edit = tools["builtin__file-write"], tools["builtin__file-edit"]
            assert write.strict_json_schema and not edit.strict_json_schema
            assert write.params_json_schema == specs["builtin__file-write"].input_schema
            assert edit.params_json_schema == specs["builtin__file-edit"].input_schema
            assert "replace_all" not in edit.params_json_schema["required"]
            result = await Runner.run(agent_of(model, tools=list(tools.values())), "note", run_config=RUN)
            assert result.final_output == "done"

    asyncio.run(main())
    assert (tmp_path / "note.txt").read_text() == "hello"
    # A built-in tool's output is its structured output, as JSON text.
    read = json.loads(text_of(model.turns[2].outputs()["builtin__file-read"]))
    assert (read["path"], read["content"], read["truncated"]) == ("note.txt", "hello", False), read


def test_prompts_and_names_never_given_out(agent_config: dict[str, Any]) -> None:
    async def main() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            server = ActorsMCPServer(rt)
            with pytest.raises(ToolCallFailed) as raised:
                await server.call_tool("alpha__never_listed", {})
            assert raised.value.error_type == ErrorType.NOT_FOUND
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}
            with pytest.raises(ToolCallFailed) as missing:
                await server.get_prompt("alpha__none")
            assert missing.value.error_type == ErrorType.NOT_FOUND
        async with AsyncRuntime.start(config({"fx": stdio_server("fixture_server", "--surface")})) as rt:
            server = ActorsMCPServer(rt)
            listed = (await server.list_prompts()).prompts
            assert [(p.name, p.description) for p in listed] == [
                ("fx__greet", "Greet someone."),
                ("fx__plain", "A prompt without arguments."),
            ]
            assert [(a.name, a.required) for a in listed[0].arguments or []] == [
                ("name", True),
                ("punctuation", False),
            ]
            greeting = await server.get_prompt("fx__greet", {"name": "Ada"})
            [message] = greeting.messages
            assert message.content.type == "text" and message.content.text == "Hello, Ada!"

    asyncio.run(main())
