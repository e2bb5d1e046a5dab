"""`MockTransport` as a `ClientTransport`: what tests script on it comes back as a real server
would answer, directly and through `MCPToolAdapter`."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from actors.mcp.config import ServerConfig
from actors.mcp.list_requests import PROMPTS, RESOURCES, TEMPLATES, listed
from actors.mcp.loop import EventLoop
from actors.mcp.transport import ClientTransport, RemotePrompt, RemoteResource, Request, ServerReplyError
from actors.testing import BlockingAdapter, MockTransport
from tests.mcp.conftest import Recorder


def scripted() -> MockTransport:
    return MockTransport.full_capabilities(
        ["slow"],
        resources=[
            RemoteResource(uri="file:///notes.txt", name="notes", mime_type="text/plain"),
            "file:///raw",
        ],
        contents={
            "file:///notes.txt": "hello",
            "file:///raw": b"\x00\x01",
            "mem://made": lambda uri: f"made {uri}",
        },
        templates=["file:///{path}"],
        prompts=[RemotePrompt(name="greet", arguments=({"name": "who", "required": True},)), "plain"],
        prompt_handlers={"greet": lambda args: f"Hello, {args['who']}"},
        completer=lambda ref, argument, context: [
            w for w in ("alice", "bob") if w.startswith(argument["value"])
        ],
        progress={"slow": [(1, 2, "half"), (2, 2, "done")]},
    )


def run(loop: EventLoop, method: Any, *args: Any) -> Any:
    return loop.run(method, *args, timeout=10)


def test_the_mock_speaks_the_client_surface(loop: EventLoop) -> None:
    mock = scripted()
    assert isinstance(mock, ClientTransport)
    info = run(loop, mock.connect, None)
    assert {"resources", "prompts", "completions", "logging"} <= set(info.capabilities)

    resources = run(loop, listed, mock, RESOURCES, 5, None)
    assert [r.uri for r in resources] == ["file:///notes.txt", "file:///raw"]
    assert resources[0].mime_type == "text/plain" and resources.freshness is None
    assert [t.uri_template for t in run(loop, listed, mock, TEMPLATES, 5, None)] == ["file:///{path}"]
    assert [p.name for p in run(loop, listed, mock, PROMPTS, 5, None)] == ["greet", "plain"]

    assert run(loop, mock.read_resource, "file:///notes.txt", 5) == {
        "contents": [{"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "hello"}]
    }
    raw = run(loop, mock.read_resource, "file:///raw", 5)["contents"][0]
    assert base64.b64decode(raw["blob"]) == b"\x00\x01"
    assert run(loop, mock.read_resource, "mem://made", 5)["contents"][0]["text"] == "made mem://made"

    greeting = run(loop, mock.get_prompt, "greet", {"who": "Ada"}, 5)
    assert greeting["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello, Ada"}}]
    asked = Request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "a"}},
    )
    assert run(loop, mock.send, asked, 5)["completion"]["values"] == ["alice"]
    with pytest.raises(ServerReplyError, match="Method not found: skills/list") as unknown:
        run(loop, mock.send, Request("skills/list"), 5)
    assert unknown.value.code == -32601  # a method the mock has no answer for, as a server says it

    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    run(loop, mock.call_tool_with_progress, "slow", {}, 5, progress)
    assert seen == [(1, 2, "half"), (2, 2, "done")]


def test_unknown_resources_and_prompts_and_missing_arguments_are_refused(loop: EventLoop) -> None:
    mock = scripted()
    run(loop, mock.connect, None)
    with pytest.raises(ServerReplyError, match="Unknown resource: file:///nope") as unknown:
        run(loop, mock.read_resource, "file:///nope", 5)
    assert unknown.value.code == -32602
    with pytest.raises(ServerReplyError, match="Unknown prompt: nope"):
        run(loop, mock.get_prompt, "nope", {}, 5)
    with pytest.raises(ServerReplyError, match="Missing required arguments: who"):
        run(loop, mock.get_prompt, "greet", {}, 5)
    mock.crash()
    with pytest.raises(ConnectionError):
        run(loop, listed, mock, RESOURCES, 5, None)


def test_the_mock_tells_its_news_to_the_events(loop: EventLoop) -> None:
    mock, events = scripted(), Recorder()
    run(loop, mock.connect, events)
    assert not mock.update_resource("file:///notes.txt", "changed"), "not subscribed yet"
    run(loop, mock.subscribe_resource, "file:///notes.txt")
    assert mock.update_resource("file:///notes.txt", "changed")
    run(loop, mock.unsubscribe_resource, "file:///notes.txt")
    assert not mock.update_resource("file:///notes.txt")
    mock.add_resource("file:///new", "new")
    mock.add_prompt("late", lambda args: "late")
    mock.log("warning", {"msg": "careful"}, "mock-logger")
    assert events.news == [
        ("resource_updated", ("file:///notes.txt",)),
        ("resources_changed", ()),
        ("prompts_changed", ()),
        ("log", ("warning", "mock-logger", {"msg": "careful"})),
    ]
    assert run(loop, mock.read_resource, "file:///notes.txt", 5)["contents"][0]["text"] == "changed"
    assert run(loop, mock.read_resource, "file:///new", 5)["contents"][0]["text"] == "new"


def test_the_adapter_reads_and_gets_prompts_from_the_mock(loop: EventLoop) -> None:
    blocking = BlockingAdapter(ServerConfig(name="mock", command="unused"), scripted(), loop=loop)
    adapter = blocking.adapter
    try:
        blocking.connect(10)
        read = adapter.read_future("file:///notes.txt", 5).result(10)
        assert read.success and read.output == {
            "contents": [{"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "hello"}]
        }
        missing = adapter.read_future("file:///nope", 5).result(10)
        assert not missing.success and "Unknown resource" in (missing.error or "")
        prompt = adapter.prompt_future("greet", {"who": "Bo"}, 5).result(10)
        assert prompt.success and prompt.output["messages"][0]["content"]["text"] == "Hello, Bo"
    finally:
        blocking.disconnect()
