"""One agent framework with one MCP client, in a process of its own: a scripted agent's run.

Standalone on purpose, like `peer_client.py`: a framework's own MCP client may pin another
``mcp`` and run from its own virtual environment, so this imports nothing from the repository
except in the ``ours`` client.

    python agent_probe.py FRAMEWORK CLIENT --servers 10 --used 2 --turns 40 [--cache DIR]

FRAMEWORK: ``langchain``, ``pydantic-ai``, ``openai-agents``, ``anthropic``. CLIENT: ``own``
(the framework's own MCP client, configured as its docs show) or ``ours`` (mcp-actors through
`actors.agents`). Every server is `benchmarks/servers/bench_server.py` over stdio, namespaces
``s0`` .. ``s9``; the scripted model calls ``echo`` of the first ``--used`` servers in turn,
``--turns`` times, then answers.

Prints one JSON object: ``first_list_s`` (from the start of the run to the model's first turn,
which holds the tool list), ``turn_ms`` (each tool-calling turn, model call to model call:
the framework calling the tool through the client), ``processes`` and ``rss_mib`` (this process
and every descendant, at the end of the run, before the clients close) and the versions.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER = HERE / "servers" / "bench_server.py"
ECHO = {"text": "hello, agent"}


class Script:
    """The scripted model's plan and its clock: which tool each turn calls, when each turn began."""

    def __init__(self, names: list[str], turns: int) -> None:
        self.names = names
        self.turns = turns
        self.stamps: list[float] = []
        self.tools_seen: list[int] = []
        self.answers: list[str] | None = None
        """What the tools answered, where the framework tells: a run whose calls failed is no run."""

    def next_tool(self, tools_offered: int) -> str | None:
        """The tool the model calls this turn (None: the final answer); records the turn."""
        self.stamps.append(time.perf_counter())
        self.tools_seen.append(tools_offered)
        turn = len(self.stamps) - 1
        return self.names[turn % len(self.names)] if turn < self.turns else None


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def footprint() -> tuple[int, float]:
    """Processes below this one, and the resident memory of this one and all of them (MiB)."""
    me = os.getpid()
    below = _descendants(me)
    return len(below), _rss_mib(me) + sum(_rss_mib(pid) for pid in below)


def mcp_servers(count: int) -> dict[str, dict[str, Any]]:
    # The servers run on the harness's interpreter (the SDK 2.x server), whichever venv we are in.
    python = os.environ.get("AGENT_BENCH_SERVER_PYTHON", sys.executable)
    return {f"s{i}": {"command": python, "args": [str(SERVER)]} for i in range(count)}


# ---- ours: mcp-actors through actors.agents ------------------------------------------------------


@asynccontextmanager
async def _runtime(servers: int, cache: str | None) -> AsyncIterator[Any]:
    from actors import AsyncRuntime

    config = {"mcpServers": mcp_servers(servers), "builtin": {"enabled": False}}
    async with AsyncRuntime.start(config, schema_cache=cache) as rt:
        yield rt


# ---- the frameworks ------------------------------------------------------------------------------


async def run_pydantic_ai(client: str, script: Script, servers: int, cache: str | None) -> float:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        tool = script.next_tool(len(info.function_tools))
        if tool is None:
            return ModelResponse(parts=[TextPart("done")])
        offered = {t.name for t in info.function_tools}
        name = next(n for n in (tool, tool.replace("__", "_")) if n in offered)
        return ModelResponse(parts=[ToolCallPart(name, dict(ECHO))])

    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        if client == "ours":
            from actors.agents.pydantic_ai import McpActorsToolset

            rt = await stack.enter_async_context(_runtime(servers, cache))
            toolsets: list[Any] = [McpActorsToolset(rt)]
        else:
            from fastmcp.client.transports import StdioTransport
            from pydantic_ai.mcp import MCPToolset

            toolsets = [
                MCPToolset(StdioTransport(command=entry["command"], args=entry["args"]), id=ns).prefixed(ns)
                for ns, entry in mcp_servers(servers).items()
            ]
        agent = Agent(FunctionModel(model), toolsets=toolsets)
        async with agent:
            await agent.run("go")
            return started


async def run_openai_agents(client: str, script: Script, servers: int, cache: str | None) -> float:
    from agents import Agent, RunConfig, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)
    prefix = "" if client == "ours" else "mcp_"
    turns = [[function_call(f"{prefix}{name}", dict(ECHO), call_id=f"c{i}")] for i, name in _plan(script)]
    model = _StampedScriptedModel(ScriptedModel, [*turns, [assistant_message("done")]], script)
    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        if client == "ours":
            from actors.agents.openai_agents import ActorsMCPServer

            rt = await stack.enter_async_context(_runtime(servers, cache))
            agent = Agent(name="bench", model=model, mcp_servers=[ActorsMCPServer(rt)])
        else:
            from agents.mcp import MCPServerManager, MCPServerStdio

            own = [
                MCPServerStdio(entry, name=ns, client_session_timeout_seconds=60, cache_tools_list=False)
                for ns, entry in mcp_servers(servers).items()
            ]
            manager = await stack.enter_async_context(MCPServerManager(own))
            agent = Agent(
                name="bench",
                model=model,
                mcp_servers=manager.active_servers,
                mcp_config={"include_server_in_tool_names": True},
            )
        await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True), max_turns=script.turns + 5)
        return started


def _StampedScriptedModel(base: type, turns: list[Any], script: Script) -> Any:
    class Stamped(base):  # type: ignore[misc,valid-type]
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            tools = kwargs.get("tools", args[3] if len(args) > 3 else [])
            script.next_tool(len(tools))
            return await super().get_response(*args, **kwargs)

    return Stamped(turns)


def _plan(script: Script) -> list[tuple[int, str]]:
    return [(i, script.names[i % len(script.names)]) for i in range(script.turns)]


async def run_anthropic(client: str, script: Script, servers: int, cache: str | None) -> float:
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    def turn(tools_offered: int, number: int) -> Message:
        tool = script.next_tool(tools_offered)
        content: list[Any] = (
            [TextBlock(type="text", text="done")]
            if tool is None
            else [ToolUseBlock(type="tool_use", id=f"toolu_{number}", name=tool, input=dict(ECHO))]
        )
        return Message(
            id=f"msg_{number}",
            type="message",
            role="assistant",
            model="scripted",
            content=content,
            stop_reason="end_turn" if tool is None else "tool_use",
            usage=Usage(input_tokens=1, output_tokens=1),
        )

    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        if client == "ours":
            from actors.agents import Toolbox
            from actors.agents.anthropic import AnthropicTools

            rt = await stack.enter_async_context(_runtime(servers, cache))
            tools = AnthropicTools(Toolbox(rt))
            for number in range(script.turns + 1):
                message = turn(len(await tools.tools()), number)
                if message.stop_reason != "tool_use":
                    break
                await tools.run(message)
        else:
            # The Anthropic SDK has no MCP client of its own: its docs' MCP client example holds
            # one `ClientSession` per server, opened up front, and lists every one each turn.
            from mcp import ClientSession, StdioServerParameters
            from mcp.client.stdio import stdio_client

            sessions: dict[str, Any] = {}
            for ns, entry in mcp_servers(servers).items():
                read, write = await stack.enter_async_context(
                    stdio_client(StdioServerParameters(command=entry["command"], args=entry["args"]))
                )
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions[ns] = session
            for number in range(script.turns + 1):
                listed = [
                    (ns, tool.name) for ns, s in sessions.items() for tool in (await s.list_tools()).tools
                ]
                message = turn(len(listed), number)
                if message.stop_reason != "tool_use":
                    break
                for block in message.content:
                    if isinstance(block, ToolUseBlock):
                        ns, _, name = block.name.partition("__")
                        await sessions[ns].call_tool(name, dict(block.input))
        return started


async def run_langchain(client: str, script: Script, servers: int, cache: str | None) -> float:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            offered = {getattr(t, "name", None) for t in tools}

            def answer(_: Any) -> AIMessage:
                tool = script.next_tool(len(offered))
                if tool is None:
                    return AIMessage(content="done")
                # langchain-mcp-adapters names a tool "server_tool" (one underscore).
                name = tool if tool in offered else tool.replace("__", "_")
                call = {"name": name, "args": dict(ECHO), "id": f"c{time.time_ns()}"}
                return AIMessage(content="", tool_calls=[call])

            from langchain_core.runnables import RunnableLambda

            return RunnableLambda(answer)

    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        if client == "ours":
            from actors.agents.langchain import langchain_tools

            rt = await stack.enter_async_context(_runtime(servers, cache))
            tools = await langchain_tools(rt)
        else:
            from langchain_mcp_adapters.client import MultiServerMCPClient

            connections = {
                ns: {"transport": "stdio", "command": entry["command"], "args": entry["args"]}
                for ns, entry in mcp_servers(servers).items()
            }
            # The docs' usage: get_tools() opens a session per server to list, and each tool
            # call opens a new session (a new server process) of its own.
            tools = await MultiServerMCPClient(connections, tool_name_prefix=True).get_tools()
        agent = create_agent(Scripted(messages=iter(())), tools)
        state = await agent.ainvoke(
            {"messages": [("user", "go")]}, {"recursion_limit": 4 * script.turns + 10}
        )
        script.answers = [str(m.content) for m in state["messages"] if getattr(m, "type", "") == "tool"]
        return started


FRAMEWORKS: dict[str, Callable[[str, Script, int, str | None], Any]] = {
    "langchain": run_langchain,
    "pydantic-ai": run_pydantic_ai,
    "openai-agents": run_openai_agents,
    "anthropic": run_anthropic,
}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


async def probe(
    framework: str, client: str, servers: int, used: int, turns: int, cache: str | None
) -> dict[str, Any]:
    script = Script([f"s{i}__echo" for i in range(used)], turns)
    sampled: dict[str, Any] = {}
    original = script.next_tool

    def next_tool(tools_offered: int) -> str | None:
        tool = original(tools_offered)
        if tool is None:  # the last turn: every call is made, no client has closed yet
            sampled["processes"], sampled["rss_mib"] = footprint()
        return tool

    script.next_tool = next_tool  # type: ignore[method-assign]
    started = await FRAMEWORKS[framework](client, script, servers, cache)
    gaps = [(b - a) * 1000 for a, b in zip(script.stamps, script.stamps[1:], strict=False)]
    if script.answers is not None and (
        len(script.answers) != turns or any(ECHO["text"] not in answer for answer in script.answers)
    ):
        raise SystemExit(f"the tool calls did not all answer {ECHO['text']!r}: {script.answers[:3]}")
    return {
        "framework": framework,
        "client": client,
        "servers": servers,
        "used": used,
        "turns": turns,
        "first_list_s": script.stamps[0] - started if script.stamps else None,
        "tools_offered": script.tools_seen[0] if script.tools_seen else 0,
        "turn_ms": {"median": statistics.median(gaps), "p90": sorted(gaps)[int(0.9 * (len(gaps) - 1))]}
        if gaps
        else None,
        **sampled,
        "versions": {
            name: _version(name)
            for name in (
                "mcp",
                "langchain",
                "langchain-mcp-adapters",
                "pydantic-ai-slim",
                "openai-agents",
                "anthropic",
                "fastmcp",
            )
            if _version(name)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("framework", choices=sorted(FRAMEWORKS))
    parser.add_argument("client", choices=["own", "ours"])
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--used", type=int, default=2)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--cache", default=None, help="the schema cache folder (ours)")
    args = parser.parse_args()
    result = asyncio.run(probe(args.framework, args.client, args.servers, args.used, args.turns, args.cache))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
