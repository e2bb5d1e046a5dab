"""`actors.agents.langchain`: a real ``create_agent`` loop, driven by a scripted chat model (offline),
calls the tools of the two real agent servers (tests/servers/agent_server.py over stdio) through
the runtime. Names and schemas as the model gets them, every kind of result and error as
LangChain's own messages, progress in LangChain's callbacks and LangGraph's custom stream, a
killed server restarted between turns, cancellation down to the server, a list change on the
next turn, and servers that start only when called."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import INVALID_TOOL_NAME_ERROR_TEMPLATE
from pydantic import Field

from actors import AsyncRuntime
from actors.agents.langchain import (
    PROGRESS_EVENT,
    McpActorsMiddleware,
    McpActorsTool,
    ToolArtifact,
    langchain_tools,
)
from actors.runtime.schema_cache import SchemaCache
from tests.agents.conftest import NAMESPACES, WAIT, eventually, kill_server, states
from tests.servers.agent_server import DOCUMENT_TEXT, DOCUMENT_URI, LINK_URI, PIXEL_PNG

TOOLS = ("boom", "count", "document", "forecast", "grow", "pixel", "plan", "wait", "whoami")
LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

Step = AIMessage | Callable[[list[BaseMessage]], Awaitable[AIMessage]]


class ScriptedModel(BaseChatModel):
    """A chat model that answers from its script, one step a turn, and keeps what each turn
    was bound with (``bound``) and shown (``seen``)."""

    steps: list[Any]
    bound: list[list[BaseTool]] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the agents run on the host's loop")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        self.bound.append(list(kwargs.get("tools", [])))
        step = self.steps[len(self.seen) - 1]
        message = step if isinstance(step, AIMessage) else await step(messages)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def names(self, turn: int) -> set[str]:
        return {tool.name for tool in self.bound[turn]}


def calls(*calls: tuple[str, dict[str, Any]], tag: str = "c") -> AIMessage:
    """A model turn that calls these tools (ids ``c0``, ``c1``, ... for the tag ``c``)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": n, "args": a, "id": f"{tag}{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)
        ],
    )


DONE = AIMessage(content="done")
ASK = {"messages": [{"role": "user", "content": "go"}]}


def tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def texts(message: ToolMessage) -> list[str]:
    assert isinstance(message.content, list), message
    return [block["text"] for block in message.content if isinstance(block, dict) and block["type"] == "text"]


def test_names_and_schemas_reach_the_model_as_the_servers_gave_them_and_servers_start_when_called(
    agent_config: dict[str, Any], tmp_path: Path
) -> None:
    cache = tmp_path / "schemas"

    async def scenario() -> None:
        # A first runtime lists both servers, so that the second knows their tools without them.
        async with AsyncRuntime.start(agent_config, schema_cache=SchemaCache(cache)) as rt:
            specs = {spec.name: spec for spec in await rt.list_tools()}
        agent_config["mcpServers"]["alpha"]["idleTimeout"] = 1  # the same server to the cache
        async with AsyncRuntime.start(agent_config, schema_cache=SchemaCache(cache)) as rt:
            tools = await langchain_tools(rt)
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}  # listed without a start
            assert {t.name for t in tools} == {f"{ns}__{tool}" for ns in NAMESPACES for tool in TOOLS}
            for tool in tools:
                assert isinstance(tool, McpActorsTool) and LEGAL.match(tool.name), tool.name
                assert tool.declared.tool == tool.name.replace("__", "/", 1)
                # The server's schema itself, $defs and all, is the tool's argument schema.
                assert tool.args_schema == specs[tool.declared.tool].input_schema
            plan = next(t for t in tools if t.name == "alpha__plan")
            assert isinstance(plan.args_schema, dict)
            assert plan.args_schema["$defs"]["Stop"]["properties"]["nights"]["minimum"] == 1
            assert plan.tool_call_schema["$defs"] == plan.args_schema["$defs"]
            # LangChain's own conversion for a provider inlines the $defs, losing no constraint.
            trip = convert_to_openai_tool(plan)["function"]["parameters"]["properties"]["trip"]
            assert trip["properties"]["stops"]["minItems"] == 1
            assert trip["properties"]["stops"]["items"]["properties"]["nights"]["minimum"] == 1
            assert {t.name for t in await langchain_tools(rt, namespaces=["beta"])} == {
                f"beta__{tool}" for tool in TOOLS
            }

            # Built with the tools and the middleware: the model gets each tool once, as listed now.
            middleware = McpActorsMiddleware(rt)
            model = ScriptedModel(steps=[calls(("alpha__whoami", {})), DONE])
            agent = create_agent(model, tools, middleware=[middleware])
            result = await agent.ainvoke(ASK)
            assert middleware.toolbox.internal("alpha__whoami") == "alpha/whoami"
            assert sorted(t.name for t in model.bound[0]) == sorted(t.name for t in tools)
            [answer] = tool_messages(result).values()
            assert answer.status == "success" and texts(answer)[0].startswith("alpha "), answer
            # Only the server called started; the other never did. The one called stops when idle.
            [alpha, beta] = await rt.status()
            assert (alpha.calls, alpha.restarts, beta.state, beta.calls) == (1, 0, "idle", 0), (alpha, beta)

            async def alpha_stopped() -> bool:
                return (await states(rt))["alpha"] == "stopped"

            assert await eventually(alpha_stopped, WAIT), await rt.status()
            # The tools are async, as the host's loop is; Toolbox options go to the Toolbox.
            with pytest.raises(NotImplementedError):
                plan.invoke({"trip": {}})
            with pytest.raises(TypeError):
                await langchain_tools(middleware.toolbox, timeout=1)

    asyncio.run(scenario())


class Progress(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any, UUID]] = []

    async def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data, run_id))


def test_every_kind_of_result_reaches_the_model_as_langchain_messages_and_progress_as_events(
    agent_config: dict[str, Any],
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            tools = await langchain_tools(rt, namespaces=["alpha"])
            model = ScriptedModel(
                steps=[
                    calls(
                        ("alpha__forecast", {"city": "Oslo"}),
                        ("alpha__pixel", {}),
                        ("alpha__document", {}),
                        ("alpha__boom", {"message": "it broke"}),
                        ("alpha__forecast", {"city": 42}),
                        (
                            "alpha__plan",
                            {"trip": {"traveller": "Ada", "stops": [{"city": "Rome", "nights": 2}]}},
                        ),
                        ("alpha__count", {"steps": 3}),
                    ),
                    DONE,
                ]
            )
            agent = create_agent(model, tools)
            handler = Progress()
            streamed: list[Any] = []
            result: dict[str, Any] = {}
            async for mode, chunk in agent.astream(
                ASK, {"callbacks": [handler]}, stream_mode=["custom", "values"]
            ):
                if mode == "custom":
                    streamed.append(chunk)
                else:
                    result = chunk
            answers = tool_messages(result)
            forecast, pixel, document, boom, bad, plan, count = (answers[f"c{i}"] for i in range(7))

            # Structured output: the text for the model, the structured content in the artifact.
            artifact: ToolArtifact = forecast.artifact
            assert artifact["structured_content"] == {
                "city": "Oslo",
                "temperature": 21.5,
                "units": "c",
                "summary": "Sunny in Oslo",
            }
            assert artifact["answer"].ok and artifact["answer"].result.success
            assert '"summary": "Sunny in Oslo"' in texts(forecast)[0]
            # An image as LangChain's standard image block.
            [image] = pixel.content
            assert isinstance(image, dict)
            assert (image["type"], image["mime_type"]) == ("image", "image/png")
            assert image["base64"] == artifact_image(pixel)
            # An embedded resource and a link as text that names them; the parts in the artifact.
            notes = texts(document)
            assert notes[0] == "Here are the notes."
            assert notes[1] == f"[resource {DOCUMENT_URI}]\n{DOCUMENT_TEXT}"
            assert notes[2] == f"[resource link archive: {LINK_URI}]"
            assert [type(p).__name__ for p in document.artifact["answer"].parts] == [
                "TextPart",
                "ResourcePart",
                "LinkPart",
            ]
            # The server's tool error and a refused argument: error messages the model reads.
            assert boom.status == "error" and texts(boom) == ["Error executing tool boom: it broke"]
            assert bad.status == "error"
            assert texts(bad) == ["validation error: alpha/forecast: city: 42 is not of type 'string'"]
            assert plan.status == "success" and texts(plan) == ["Ada: Rome, 2 nights"]
            assert texts(count) == ["counted 3"]
            # The model's next turn was shown all of them.
            assert [m.tool_call_id for m in model.seen[1] if isinstance(m, ToolMessage)] == [
                f"c{i}" for i in range(7)
            ]
            assert result["messages"][-1].content == "done"

            # Progress, in order: LangChain custom events of the tool's run, LangGraph's custom stream.
            reports = [(p["progress"], p["total"], p["message"]) for p in streamed]
            assert reports == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)], streamed
            assert all(p["tool"] == "alpha__count" and p["tool_call_id"] == "c6" for p in streamed)
            assert [(name, data) for name, data, _ in handler.events] == [
                (PROGRESS_EVENT, p) for p in streamed
            ]
            assert len({run_id for *_, run_id in handler.events}) == 1  # the one tool run's

    asyncio.run(scenario())


def artifact_image(message: ToolMessage) -> str:
    [part] = message.artifact["answer"].parts
    assert part.raw() == PIXEL_PNG
    return str(part.data)


class AfterRelist(AgentMiddleware[AgentState[Any], Any, Any]):
    """Holds a model turn until the runtime has listed ``tool``, once a call of ``grower`` answered.

    The runtime lists a server's tools again when the server says they changed, a few ms after
    the call that changed them answers; a turn that starts sooner sees the change one turn
    later. This waits for that, so the test shows what the adapter does with the new list."""

    def __init__(self, rt: AsyncRuntime, grower: str, tool: str) -> None:
        self.rt, self.grower, self.tool = rt, grower, tool

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        if any(isinstance(m, ToolMessage) and m.name == self.grower for m in request.messages):

            async def listed() -> bool:
                return self.tool in {spec.name for spec in await self.rt.list_tools()}

            assert await eventually(listed, WAIT), f"the runtime never listed {self.tool}"
        return await handler(request)


def test_a_list_change_reaches_the_model_on_its_next_turn(agent_config: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            model = ScriptedModel(
                steps=[
                    calls(("alpha__grow", {"tool": "sprout"}), tag="g"),
                    calls(("alpha__sprout", {}), tag="s"),
                    DONE,
                ]
            )
            # Built with no tool at all: the middlewares list them before every model call.
            middlewares = [McpActorsMiddleware(rt, namespaces=[ns]) for ns in NAMESPACES]
            agent = create_agent(
                model, middleware=[AfterRelist(rt, "alpha__grow", "alpha/sprout"), *middlewares]
            )
            result = await agent.ainvoke(ASK)
            assert {"alpha__grow", "beta__grow"} <= model.names(0) and "alpha__sprout" not in model.names(0)
            assert "alpha__sprout" in model.names(1)
            grown = next(t for t in model.bound[1] if t.name == "alpha__sprout")
            assert grown.description == "Grown at run time: sprout"
            answers = tool_messages(result)
            assert texts(answers["g0"]) == ["grew sprout"]
            # The agent's tool node was built without it, and ran it.
            assert answers["s0"].status == "success" and texts(answers["s0"]) == ["I am sprout"]
            assert "beta__sprout" not in model.names(2)

    asyncio.run(scenario())


# The pid whoami answers (the server's own) is the pid the runtime reports and kills.
@pytest.mark.real_process
def test_a_server_killed_between_turns_is_restarted_and_the_next_turn_succeeds(
    agent_config: dict[str, Any],
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            killed: list[int] = []

            async def kill_then_ask_again(messages: list[BaseMessage]) -> AIMessage:
                killed.append(await kill_server(rt, "alpha"))
                return calls(("alpha__whoami", {}), tag="again")

            model = ScriptedModel(steps=[calls(("alpha__whoami", {})), kill_then_ask_again, DONE])
            agent = create_agent(model, middleware=[McpActorsMiddleware(rt)])
            result = await agent.ainvoke(ASK)
            answers = tool_messages(result)
            first, again = texts(answers["c0"])[0], texts(answers["again0"])[0]
            assert first == f"alpha {killed[0]}"
            assert answers["again0"].status == "success" and again.startswith("alpha "), again
            assert again != first  # a new process
            [status] = await rt.status("alpha")
            assert status.state == "running" and status.restarts >= 1, status

    asyncio.run(scenario())


def test_cancelling_the_agents_task_cancels_the_call_at_the_server(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            model = ScriptedModel(steps=[calls(("alpha__wait", {"seconds": 300})), DONE])
            agent = create_agent(model, middleware=[McpActorsMiddleware(rt)])
            task = asyncio.ensure_future(agent.ainvoke(ASK))

            async def started() -> bool:
                return (marker_dir / "alpha.wait.started").exists() or task.done()

            assert await eventually(started, WAIT) and not task.done(), task
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

            async def cancelled() -> bool:
                return (marker_dir / "alpha.wait.cancelled").exists()

            assert await eventually(cancelled, WAIT), "the server's wait was never cancelled"
            # The runtime goes on: the next run's call answers.
            model = ScriptedModel(steps=[calls(("alpha__whoami", {})), DONE])
            result = await create_agent(model, middleware=[McpActorsMiddleware(rt)]).ainvoke(ASK)
            assert texts(tool_messages(result)["c0"])[0].startswith("alpha ")

    asyncio.run(scenario())


def test_a_tool_name_the_model_made_up_is_answered_with_the_tools_it_was_offered(
    agent_config: dict[str, Any],
) -> None:
    made_up = calls(("alpha__nope", {"run_manager": 1, "city": "Oslo"}), ("beta__whoami", {}))

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            # The agent built with the tools: LangChain's tool node answers with their names.
            static = ScriptedModel(steps=[made_up, DONE])
            tools = await langchain_tools(rt)
            expected = tool_messages(await create_agent(static, tools).ainvoke(ASK))["c0"]
            assert expected.status == "error" and "alpha__whoami" in str(expected.content), expected
            # Middlewares (one per namespace, the agent built with no tool): the same answer,
            # naming every tool the model was offered; a real tool of the inner one still runs.
            model = ScriptedModel(steps=[made_up, DONE])
            middlewares = [McpActorsMiddleware(rt, namespaces=[ns]) for ns in NAMESPACES]
            answers = tool_messages(await create_agent(model, middleware=middlewares).ainvoke(ASK))
            offered = [tool.name for tool in model.bound[0]]
            assert sorted(offered) == sorted(tool.name for tool in tools)
            made, real = answers["c0"], answers["c1"]
            assert (made.status, made.name) == ("error", "alpha__nope"), made
            assert made.content == INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
                requested_tool="alpha__nope", available_tools=", ".join(offered)
            )
            assert sorted(str(made.content).split("[")[1].rstrip("].").split(", ")) == sorted(
                str(expected.content).split("[")[1].rstrip("].").split(", ")
            )
            assert real.status == "success" and texts(real)[0].startswith("beta "), real

    asyncio.run(scenario())


def test_a_runtime_shut_down_mid_run_answers_the_model_cancelled_and_never_raises_in_the_host(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:

            async def shut_when_waiting() -> None:
                async def started() -> bool:
                    return (marker_dir / "alpha.wait.started").exists()

                assert await eventually(started, WAIT)
                await rt.aclose()

            closer = asyncio.ensure_future(shut_when_waiting())
            model = ScriptedModel(
                steps=[
                    calls(("alpha__wait", {"seconds": 300}), tag="w"),
                    calls(("alpha__whoami", {}), tag="p"),
                    AIMessage(content="the tools are gone"),
                ]
            )
            result = await create_agent(model, middleware=[McpActorsMiddleware(rt)]).ainvoke(ASK)
            await closer
            assert result["messages"][-1].content == "the tools are gone"
            # The call the shutdown cut short, and the one after it: error messages, `cancelled`;
            # the turn after the shutdown was offered the tools last listed.
            answers = tool_messages(result)
            for answer in (answers["w0"], answers["p0"]):
                assert answer.status == "error" and texts(answer)[0].startswith("cancelled"), answer
            assert model.names(2) == model.names(0)

    asyncio.run(scenario())
