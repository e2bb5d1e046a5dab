"""The Anthropic SDK adapter (actors.agents.anthropic) against two real MCP servers
(tests/servers/agent_server.py over stdio, lazily started) and the real SDK, offline: the model's
turns are real `anthropic.types.Message` objects, and where a real `anthropic.AsyncAnthropic`
sends them, a scripted Messages API (an `httpx2.MockTransport`, the HTTP library this SDK uses)
answers and keeps each request body, whose ``tools`` and ``tool_result`` blocks must validate
as the SDK's own params."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message, TextBlock, ToolParam, ToolResultBlockParam, ToolUseBlock, Usage
from anthropic.types.tool_result_block_param import Content
from pydantic import TypeAdapter

from actors import AsyncRuntime, ErrorType, ToolResult
from actors.agents import ToolAnswer, Toolbox
from actors.agents.anthropic import AnthropicTools, result_content, run_agent_turns
from tests.agents.conftest import WAIT, eventually, kill_server, states
from tests.servers.agent_server import DOCUMENT_TEXT, DOCUMENT_URI, LINK_URI, PIXEL_PNG

MODEL = "claude-sonnet-4-5"
TOOLS = ("boom", "count", "document", "forecast", "grow", "pixel", "plan", "wait", "whoami")
LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Built here, at collection: building a validator holds the interpreter for a while.
TOOL_PARAM = TypeAdapter(ToolParam)
RESULT_BLOCK = TypeAdapter(ToolResultBlockParam)
CONTENT = TypeAdapter(Content)


def turn(*blocks: TextBlock | ToolUseBlock) -> Message:
    """An assistant turn as the API returns it: ``tool_use`` when it calls a tool."""
    calls = any(isinstance(block, ToolUseBlock) for block in blocks)
    return Message(
        id=f"msg_{id(blocks)}",
        type="message",
        role="assistant",
        model=MODEL,
        content=list(blocks),
        stop_reason="tool_use" if calls else "end_turn",
        usage=Usage(input_tokens=1, output_tokens=1),
    )


def use(block_id: str, name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(type="tool_use", id=block_id, name=name, input=arguments)


def said(text: str) -> TextBlock:
    return TextBlock(type="text", text=text)


class ScriptedClaude:
    """The Messages API, scripted: answers each request with the next turn, keeps each body."""

    def __init__(self, *turns: Message) -> None:
        self.turns: Iterator[Message] = iter(turns)
        self.requests: list[dict[str, Any]] = []

    def answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        return httpx2.Response(200, json=next(self.turns).model_dump(mode="json", exclude_none=True))

    def client(self) -> anthropic.AsyncAnthropic:
        transport = httpx2.MockTransport(self.answer)
        return anthropic.AsyncAnthropic(
            api_key="offline", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
        )


def sdk_valid(adapter: TypeAdapter[Any], value: Any) -> bool:
    """Whether ``value`` is one of the SDK's params as it is (validation drops unknown keys)."""
    return bool(adapter.validate_python(value) == value)


def valid_result(block: dict[str, Any]) -> bool:
    content = block.get("content", [])
    # The param's content is an iterable, which validation does not unroll: each block apart.
    return sdk_valid(RESULT_BLOCK, {k: v for k, v in block.items() if k != "content"}) and all(
        sdk_valid(CONTENT, item) for item in content
    )


def only(config: dict[str, Any], namespace: str) -> dict[str, Any]:
    """``config`` with one of its servers: listing the tools starts every uncached server."""
    return {**config, "mcpServers": {namespace: config["mcpServers"][namespace]}}


def texts(block: dict[str, Any]) -> list[str]:
    return [item["text"] for item in block.get("content", []) if item["type"] == "text"]


def test_definitions_have_legal_reversible_names_and_the_servers_own_schemas(
    agent_config: dict[str, Any],
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}  # nothing started yet
            toolbox = Toolbox(rt)
            tools = AnthropicTools(toolbox)
            params = await tools.tools()
            assert {p["name"] for p in params} == {f"{ns}__{t}" for ns in ("alpha", "beta") for t in TOOLS}
            specs = {spec.name: spec for spec in await rt.list_tools()}
            for param in params:
                assert LEGAL.match(param["name"]), param["name"]
                spec = specs[str(toolbox.internal(param["name"]))]
                assert sdk_valid(TOOL_PARAM, param), param
                assert param["input_schema"] == spec.input_schema
                assert param["description"] == spec.description
            [plan] = [p for p in params if p["name"] == "alpha__plan"]
            schema: Any = plan["input_schema"]
            assert set(schema["$defs"]) == {"Trip", "Stop"}
            assert schema["properties"]["trip"] == {"$ref": "#/$defs/Trip"}
            assert schema["$defs"]["Stop"]["properties"]["nights"]["minimum"] == 1
            # The SDK's tool runner is offered the same definitions.
            assert [t.to_dict() for t in await tools.beta_tools()] == params

    asyncio.run(scenario())


def test_one_turn_of_parallel_calls_comes_back_as_the_apis_tool_results(agent_config: dict[str, Any]) -> None:
    """Through the real client: the tools it sends, then one ``tool_result`` per ``tool_use``
    in order, each mapped (text, image, structured output, resource, link, errors)."""
    trip = {"traveller": "Ada", "stops": [{"city": "Oslo", "nights": 2}, {"city": "Bergen", "nights": 1}]}
    calls = [
        use("u1", "alpha__forecast", city="Oslo"),
        use("u2", "beta__pixel"),
        use("u3", "alpha__document"),
        use("u4", "beta__boom", message="bang"),
        use("u5", "alpha__plan", trip=trip),
        use("u6", "alpha__forecast", city=3),
        use("u7", "gamma__nothing"),
        use("u8", "beta__count", steps=3),
    ]
    claude = ScriptedClaude(turn(said("Let me look."), *calls), turn(said("Done.")))
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    async def scenario() -> list[dict[str, Any]]:
        async with AsyncRuntime.start(agent_config) as rt:
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}
            tools = AnthropicTools(Toolbox(rt))
            client = claude.client()
            messages: list[Any] = [{"role": "user", "content": "Plan my trip."}]
            try:
                final = await run_agent_turns(
                    client, tools, messages=messages, model=MODEL, max_tokens=512, progress=progress
                )
            finally:
                await client.close()
            assert final.stop_reason == "end_turn" and final.content == [said("Done.")]
            assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
            assert claude.requests[0]["tools"] == await tools.tools()
            assert all(sdk_valid(TOOL_PARAM, tool) for tool in claude.requests[0]["tools"])
            answer: list[dict[str, Any]] = claude.requests[1]["messages"][-1]["content"]
            assert claude.requests[1]["messages"][-1]["role"] == "user"
            return answer

    results = asyncio.run(scenario())
    assert [r["tool_use_id"] for r in results] == [c.id for c in calls]
    assert all(valid_result(r) for r in results), results
    forecast, pixel, document, boom, plan, bad, unknown, count = results
    # Structured output: the server's JSON text carries it, so it is not sent twice.
    assert [json.loads(t) for t in texts(forecast)] == [
        {"city": "Oslo", "temperature": 21.5, "units": "c", "summary": "Sunny in Oslo"}
    ]
    assert pixel["content"] == [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(PIXEL_PNG).decode(),
            },
        }
    ]
    assert texts(document)[0] == "Here are the notes."
    assert texts(document)[1] == f"[resource {DOCUMENT_URI}]\n{DOCUMENT_TEXT}"
    assert LINK_URI in texts(document)[2] and len(document["content"]) == 3
    assert texts(plan) == ["Ada: Oslo -> Bergen, 3 nights"] and "is_error" not in plan
    assert texts(count) == ["counted 3"]
    assert reports == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)]
    # Failures are results for the model, classified.
    assert boom["is_error"] is True and texts(boom) == ["server error: Error executing tool boom: bang"]
    assert bad["is_error"] is True and texts(bad)[0].startswith("validation error: alpha/forecast: city")
    assert unknown["is_error"] is True and texts(unknown)[0].startswith("not found:")
    assert not any("is_error" in r for r in (forecast, pixel, document, plan, count))


def test_every_part_of_an_answer_reaches_the_model() -> None:
    """What the API has no block for becomes a line: nothing the server sent is dropped."""
    png = base64.b64encode(PIXEL_PNG).decode()
    pdf = base64.b64encode(b"%PDF-1.4 tiny").decode()
    content = [
        {"type": "text", "text": ""},
        {"type": "image", "data": base64.b64encode(b"BM..").decode(), "mimeType": "image/bmp"},
        {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        {"type": "audio", "data": base64.b64encode(b"RIFF").decode(), "mimeType": "audio/wav"},
        {
            "type": "resource",
            "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": pdf},
        },
        {"type": "resource", "resource": {"uri": "file:///p.png", "mimeType": "image/png", "blob": png}},
        {"type": "resource", "resource": {"uri": "file:///n.txt", "mimeType": "text/plain", "blob": "aGk="}},
        {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAEC"}},
        {"type": "resource_link", "uri": "file:///y", "name": "y", "description": "the y file"},
        {"type": "novel", "what": 1},
    ]
    structured = {"rows": [1, 2]}
    answer = ToolAnswer.of(ToolResult.ok({"content": content, "structuredContent": structured}))
    blocks: list[Any] = result_content(answer)
    assert all(sdk_valid(CONTENT, block) for block in blocks), blocks
    assert [b["type"] for b in blocks] == [
        *("text", "text", "text", "document", "text", "image", "text", "text", "text", "text", "text")
    ]
    lines = [b.get("text") for b in blocks]
    assert lines[0] == "[image image/bmp, 4 bytes]"
    assert lines[1] == "[image image/png, 0 bytes]"
    assert lines[2] == "[audio audio/wav, 4 bytes]"
    assert blocks[3] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
        "title": "file:///a.pdf",
    }
    assert lines[4] == "[resource file:///p.png]"
    assert blocks[5]["source"] == {"type": "base64", "media_type": "image/png", "data": png}
    assert lines[6] == "[resource file:///n.txt]\nhi"
    assert lines[7] == "[resource file:///x.bin application/octet-stream, 3 bytes]"
    assert lines[8] == "[resource link y: file:///y]\nthe y file"
    assert json.loads(str(lines[9])) == {"type": "novel", "what": 1}
    assert json.loads(str(lines[10])) == structured  # no text carried it: sent as JSON text
    # The error's text starts with its type's label, from `error_type`, whatever the text says.
    failed = ToolAnswer.of(ToolResult(success=False, error="it took too long", error_type=ErrorType.TIMEOUT))
    assert result_content(failed) == [{"type": "text", "text": "timeout: it took too long"}]


def test_calls_run_at_once_and_cancelling_the_turn_cancels_them_at_the_servers(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            # Not listed first: the names are learnt when the turn needs them.
            tools = AnthropicTools(Toolbox(rt))
            waits = turn(use("w1", "alpha__wait", seconds=300), use("w2", "beta__wait", seconds=300))
            running = asyncio.ensure_future(tools.run(waits))
            started = [marker_dir / f"{ns}.wait.started" for ns in ("alpha", "beta")]

            async def both_started() -> bool:
                return running.done() or all(path.exists() for path in started)

            # One after the other, the second would not start while the first sleeps.
            assert await eventually(both_started, WAIT) and not running.done()
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
            cancelled = [marker_dir / f"{ns}.wait.cancelled" for ns in ("alpha", "beta")]

            async def both_cancelled() -> bool:
                return all(path.exists() for path in cancelled)

            assert await eventually(both_cancelled, WAIT), "the calls went on at the servers"
            # The next turn is answered, in the order asked, though the first call ends last.
            results = await tools.run(turn(use("a", "alpha__wait", seconds=0.5), use("b", "beta__whoami")))
            assert [(r["tool_use_id"], r.get("is_error")) for r in results] == [("a", None), ("b", None)]
            waited, whoami = (texts(dict(result)) for result in results)
            assert waited == ["waited 0.5"] and whoami[0].startswith("beta "), results

    asyncio.run(scenario())


# The pid whoami answers (the server's own) is the pid the runtime reports and kills.
@pytest.mark.real_process
def test_a_server_killed_mid_turn_answers_an_error_and_is_restarted_for_the_next(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    async def scenario() -> None:
        async with AsyncRuntime.start(only(agent_config, "alpha")) as rt:
            tools = AnthropicTools(Toolbox(rt))
            await tools.tools()
            [first] = await tools.run(turn(use("p1", "alpha__whoami")))
            _, pid = texts(dict(first))[0].split()
            waiting = asyncio.ensure_future(tools.run(turn(use("w", "alpha__wait", seconds=300))))

            async def started() -> bool:
                return waiting.done() or (marker_dir / "alpha.wait.started").exists()

            assert await eventually(started, WAIT)
            assert await kill_server(rt, "alpha") == int(pid)
            [lost] = await asyncio.wait_for(waiting, WAIT)
            assert lost["is_error"] is True and texts(dict(lost))[0].startswith("connection error"), lost
            [again] = await tools.run(turn(use("p2", "alpha__whoami")))
            assert "is_error" not in again
            name, new_pid = texts(dict(again))[0].split()
            assert name == "alpha" and new_pid != pid
            [status] = await rt.status("alpha")
            assert status.state == "running" and status.restarts >= 1, status

    asyncio.run(scenario())


def test_a_runtime_shut_down_mid_run_answers_the_model_cancelled_and_never_raises_in_the_host(
    agent_config: dict[str, Any], marker_dir: Path
) -> None:
    claude = ScriptedClaude(
        turn(use("w", "alpha__wait", seconds=300)), turn(use("p", "alpha__whoami")), turn(said("gone"))
    )

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:

            async def shut_when_waiting() -> None:
                assert await eventually(_exists(marker_dir / "alpha.wait.started"), WAIT)
                await rt.aclose()

            closer = asyncio.ensure_future(shut_when_waiting())
            client = claude.client()
            messages: list[Any] = [{"role": "user", "content": "Wait, then who are you?"}]
            try:
                final = await run_agent_turns(
                    client, AnthropicTools(rt), messages=messages, model=MODEL, max_tokens=256
                )
            finally:
                await client.close()
            await closer
            assert final.stop_reason == "end_turn"
            # The call the shutdown cut short, and the one after it: errors, `cancelled`; the
            # request after the shutdown declared the tools last listed.
            for request in claude.requests[1:]:
                [answered] = request["messages"][-1]["content"]
                assert answered["is_error"] is True and texts(answered)[0].startswith("cancelled"), answered
            assert claude.requests[2]["tools"] == claude.requests[0]["tools"]

    asyncio.run(scenario())


def _exists(path: Path) -> Any:
    async def check() -> bool:
        return path.exists()

    return check


def test_a_tool_list_change_reaches_the_model_on_its_next_turn(agent_config: dict[str, Any]) -> None:
    grown = "t" * 70  # too long for a plain external name: it is shortened, and maps back
    claude = ScriptedClaude(turn(use("g", "alpha__grow", tool=grown)))

    async def scenario() -> None:
        async with AsyncRuntime.start(only(agent_config, "alpha")) as rt:
            toolbox = Toolbox(rt)
            tools = AnthropicTools(toolbox)
            client = claude.client()
            messages: list[Any] = [{"role": "user", "content": "Grow a tool."}]
            try:
                first = await client.messages.create(
                    model=MODEL, max_tokens=256, messages=messages, tools=await tools.tools()
                )
                messages += [first.to_param(), await tools.reply(first)]

                async def announced() -> bool:
                    return f"alpha/{grown}" in {spec.name for spec in await rt.list_tools("alpha")}

                # The server's notification is relisted asynchronously: wait for it to land.
                assert await eventually(announced, WAIT)
                # The next turn is declared afresh, and the model calls the new tool by its name.
                declared = await tools.tools()
                [new] = [p["name"] for p in declared if toolbox.internal(p["name"]) == f"alpha/{grown}"]
                assert LEGAL.match(new) and new.startswith("alpha__t")
                claude.turns = iter([turn(use("n", new)), turn(said("It answered."))])
                final = await run_agent_turns(client, tools, messages=messages, model=MODEL, max_tokens=256)
            finally:
                await client.close()
            assert final.stop_reason == "end_turn"
            before, after = ({t["name"] for t in r["tools"]} for r in claude.requests[:2])
            assert after - before == {new}
            [answered] = claude.requests[2]["messages"][-1]["content"]
            assert answered["tool_use_id"] == "n" and texts(answered) == [f"I am {grown}"]

    asyncio.run(scenario())


def test_servers_start_on_their_first_call_and_stop_when_idle(
    agent_config: dict[str, Any], tmp_path: Path
) -> None:
    """With a schema cache the definitions start nothing; a call starts its one server, which
    stops again when idle."""
    cache = tmp_path / "schemas"

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            listed = await AnthropicTools(Toolbox(rt)).tools()  # learns (and caches) the lists
        agent_config["mcpServers"]["beta"]["idleTimeout"] = 1
        async with AsyncRuntime.start(agent_config, schema_cache=cache) as rt:
            tools = AnthropicTools(Toolbox(rt))
            assert await tools.tools() == listed
            assert await states(rt) == {"alpha": "idle", "beta": "idle"}
            [answer] = await tools.run(turn(use("b", "beta__whoami")))
            assert texts(dict(answer))[0].startswith("beta ")
            assert (await states(rt))["alpha"] == "idle"

            async def stopped() -> bool:
                return (await states(rt))["beta"] != "running"

            assert await eventually(stopped, WAIT), "beta did not stop when idle"

    asyncio.run(scenario())


def test_the_sdks_own_tool_runner_runs_the_tools(agent_config: dict[str, Any]) -> None:
    """``client.beta.messages.tool_runner`` takes `beta_tools`: results and errors as ours."""
    claude = ScriptedClaude(
        turn(
            use("p", "alpha__pixel"), use("b", "beta__boom", message="no"), use("f", "beta__forecast", city=1)
        ),
        turn(said("Seen.")),
    )

    async def scenario() -> None:
        async with AsyncRuntime.start(agent_config) as rt:
            tools = AnthropicTools(Toolbox(rt))
            client = claude.client()
            try:
                runner = client.beta.messages.tool_runner(
                    model=MODEL,
                    max_tokens=256,
                    messages=[{"role": "user", "content": "Show me."}],
                    tools=await tools.beta_tools(),
                    thread=False,
                )
                final = await runner.until_done()
            finally:
                await client.close()
            assert [block.type for block in final.content] == ["text"]

    asyncio.run(scenario())
    assert claude.requests[0]["tools"] == claude.requests[1]["tools"]
    pixel, boom, bad = claude.requests[1]["messages"][-1]["content"]
    assert all(valid_result(r) for r in (pixel, boom, bad))
    assert (
        pixel["tool_use_id"] == "p" and pixel["content"][0]["type"] == "image" and not pixel.get("is_error")
    )
    assert boom["is_error"] is True and texts(boom) == ["server error: Error executing tool boom: no"]
    assert bad["is_error"] is True and texts(bad)[0].startswith("validation error:")
