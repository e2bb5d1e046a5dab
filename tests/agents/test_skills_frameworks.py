"""The skill tools (`actors.agents.skills`) through each framework's own API, offline: a scripted
model of each framework is offered ``load_skill`` (its description listing the skills) and
``read_skill_file`` when the adapter is made with ``skills=True``, calls them, and reads the
tagged, verified text; the real skills server answers over stdio through a real `AsyncRuntime`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from anthropic.types import Message, TextBlock, ToolUseBlock
from anthropic.types import Usage as AnthropicUsage
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import ModelResponse as PydanticResponse
from pydantic_ai.messages import TextPart as PydanticText
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors import AsyncRuntime
from actors.agents.anthropic import AnthropicTools, run_agent_turns
from actors.agents.langchain import McpActorsMiddleware
from actors.agents.openai_agents import ActorsMCPServer
from actors.agents.pydantic_ai import McpActorsToolset
from actors.agents.skills import LOAD_SKILL, READ_SKILL_FILE
from tests.agents.conftest import skills_server
from tests.agents.test_langchain import ScriptedModel
from tests.agents.test_openai_agents import Scripted
from tests.runtime.conftest import config
from tests.servers.skills_server import SAMPLE

set_tracing_disabled(True)

LABEL = "docs/pdf-processing"
LISTED = f'- {LABEL}: pdf-processing, from MCP server "docs": Extract, fill, and assemble PDF documents'
LOAD = {"label": LABEL}
READ = {"label": LABEL, "path": "references/FORMS.md"}
SKILL_MD = SAMPLE["pdf-processing/SKILL.md"]
FORMS = SAMPLE["pdf-processing/references/FORMS.md"]
FORMS_TAG = f'[file references/FORMS.md of MCP skill {LABEL}, served by MCP server "docs": untrusted]'


def servers(folder: Path) -> dict[str, Any]:
    return config({"docs": skills_server(folder)})


def check_load(text: str) -> None:
    """``text`` is the loaded SKILL.md as it is, after the line that tags its origin."""
    tag, _, body = text.partition("\n")
    assert tag.startswith(f"[MCP skill {LABEL} (pdf-processing)") and "untrusted" in tag, tag
    assert body == SKILL_MD


# ---- pydantic-ai --------------------------------------------------------------------------------


def test_pydantic_ai_offers_the_skill_tools_and_returns_their_text(skills_folder: Path) -> None:
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    async def model(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
        seen.append((list(messages), info))
        if len(seen) == 1:
            return PydanticResponse(parts=[ToolCallPart(LOAD_SKILL, LOAD, "load")])
        if len(seen) == 2:
            return PydanticResponse(parts=[ToolCallPart(READ_SKILL_FILE, READ, "read")])
        return PydanticResponse(parts=[PydanticText("done")])

    async def scenario() -> None:
        async with AsyncRuntime.start(servers(skills_folder)) as rt:
            agent = PydanticAgent(FunctionModel(model), toolsets=[McpActorsToolset(rt, skills=True)])
            assert (await agent.run("use a skill")).output == "done"

        offered = {tool.name: tool for tool in seen[0][1].function_tools}
        assert set(offered) == {LOAD_SKILL, READ_SKILL_FILE}
        assert LISTED in (offered[LOAD_SKILL].description or "").splitlines()
        assert offered[READ_SKILL_FILE].parameters_json_schema["required"] == ["label", "path"]
        first, second = _returns(seen[1][0]), _returns(seen[2][0])
        check_load(first["load"])
        assert second["read"] == f"{FORMS_TAG}\n{FORMS}"

    asyncio.run(scenario())


def _returns(messages: list[ModelMessage]) -> dict[str, Any]:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return {p.tool_call_id: p.content for p in request.parts if isinstance(p, ToolReturnPart)}


# ---- LangChain / LangGraph ----------------------------------------------------------------------


def _calls(tag: str, *calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": n, "args": a, "id": f"{tag}{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)
        ],
    )


def test_langchain_offers_the_skill_tools_and_returns_their_text(skills_folder: Path) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(servers(skills_folder)) as rt:
            steps = [_calls("a", (LOAD_SKILL, LOAD)), _calls("b", (READ_SKILL_FILE, READ)), AIMessage("done")]
            model = ScriptedModel(steps=steps)
            agent = create_agent(model, middleware=[McpActorsMiddleware(rt, skills=True)])
            result = await agent.ainvoke({"messages": [{"role": "user", "content": "use a skill"}]})

        bound = {tool.name: tool for tool in model.bound[0]}
        assert set(bound) == {LOAD_SKILL, READ_SKILL_FILE}
        assert LISTED in bound[LOAD_SKILL].description.splitlines()
        answers = {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}
        assert answers["a0"].status == "success" and answers["b0"].status == "success"
        check_load(_text(answers["a0"]))
        assert _text(answers["b0"]) == f"{FORMS_TAG}\n{FORMS}"

    asyncio.run(scenario())


def _text(message: ToolMessage) -> str:
    assert isinstance(message.content, list), message
    return "".join(block["text"] for block in message.content if isinstance(block, dict))


# ---- OpenAI Agents SDK --------------------------------------------------------------------------


def _function_call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", call_id=call_id, type="function_call", name=name, arguments=json.dumps(arguments)
    )


def test_openai_agents_offers_the_skill_tools_and_returns_their_text(skills_folder: Path) -> None:
    done = ResponseOutputMessage(
        id="msg_final",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text="done", annotations=[], logprobs=[])],
    )
    model = Scripted(
        [[_function_call(LOAD_SKILL, LOAD, "load")], [_function_call(READ_SKILL_FILE, READ, "read")], [done]]
    )

    async def scenario() -> None:
        async with AsyncRuntime.start(servers(skills_folder)) as rt:
            agent = Agent(name="tester", model=model, mcp_servers=[ActorsMCPServer(rt, skills=True)])
            result = await Runner.run(agent, "use a skill", run_config=RunConfig(tracing_disabled=True))
            assert result.final_output == "done"

        tools = {tool.name: tool for tool in model.turns[0].tools}
        assert set(tools) == {LOAD_SKILL, READ_SKILL_FILE}
        assert LISTED in getattr(tools[LOAD_SKILL], "description", "").splitlines()
        outputs = {call_id: output for turn in model.turns for call_id, output in turn.outputs().items()}
        check_load(_output_text(outputs["load"]))
        assert _output_text(outputs["read"]) == f"{FORMS_TAG}\n{FORMS}"

    asyncio.run(scenario())


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(item["text"] for item in output if item.get("type") == "input_text")


# ---- Anthropic Messages API ---------------------------------------------------------------------


def _turn(*blocks: TextBlock | ToolUseBlock) -> Message:
    calls = any(isinstance(block, ToolUseBlock) for block in blocks)
    return Message(
        id=f"msg_{len(blocks)}_{calls}",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=list(blocks),
        stop_reason="tool_use" if calls else "end_turn",
        usage=AnthropicUsage(input_tokens=1, output_tokens=1),
    )


def test_anthropic_offers_the_skill_tools_and_returns_their_text(skills_folder: Path) -> None:
    turns = iter(
        [
            _turn(ToolUseBlock(type="tool_use", id="load", name=LOAD_SKILL, input=LOAD)),
            _turn(ToolUseBlock(type="tool_use", id="read", name=READ_SKILL_FILE, input=READ)),
            _turn(TextBlock(type="text", text="done")),
        ]
    )
    requests: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=next(turns).model_dump(mode="json", exclude_none=True))

    async def scenario() -> None:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
        client = anthropic.AsyncAnthropic(api_key="offline", max_retries=0, http_client=http)
        async with AsyncRuntime.start(servers(skills_folder)) as rt, client:
            tools = AnthropicTools(rt, skills=True)
            last = await run_agent_turns(
                client, tools, messages=[{"role": "user", "content": "use a skill"}], model="m", max_tokens=64
            )
            assert last.stop_reason == "end_turn"

        offered = {tool["name"]: tool for tool in requests[0]["tools"]}
        assert set(offered) == {LOAD_SKILL, READ_SKILL_FILE}
        assert LISTED in offered[LOAD_SKILL]["description"].splitlines()
        results = {
            block["tool_use_id"]: block
            for request in requests
            for message in request["messages"]
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        }
        assert not any(block.get("is_error") for block in results.values())
        check_load("".join(item["text"] for item in results["load"]["content"]))
        assert "".join(item["text"] for item in results["read"]["content"]) == f"{FORMS_TAG}\n{FORMS}"

    asyncio.run(scenario())
