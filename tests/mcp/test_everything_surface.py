"""`SDKTransport`'s client surface against ``@modelcontextprotocol/server-everything`` over stdio
(handshake era only: the server does not speak 2026-07-28), with every handler declared:
resources (paged), templates, reads, prompts, completion, subscriptions, progress, logging,
sampling, roots, elicitation, and a tool that requires task augmentation.

The server comes from tests/interop (``npm ci --prefix tests/interop``; ``make test`` does it).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from actors.mcp.list_requests import PROMPTS, RESOURCES, TEMPLATES, CatalogList, listed
from actors.mcp.loop import EventLoop
from actors.mcp.request_functions import completion_request
from actors.mcp.sdk_transport import SDKOptions, SDKTransport, StdioCommand
from actors.mcp.transport import ClientHandlers, JSONObject, ServerReplyError
from tests.interop.conftest import node, npm_server
from tests.mcp.conftest import Recorder

ROOT_URI = "file:///tmp/everything-root"
TEXT = "demo://resource/dynamic/text/{resourceId}"


async def sampling(params: JSONObject) -> JSONObject:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo {text}"}, "model": "test-model"}


async def elicitation(params: JSONObject) -> JSONObject:
    return {"action": "decline"}


async def roots() -> list[JSONObject]:
    return [{"uri": ROOT_URI, "name": "everything"}]


class Everything:
    def __init__(self, loop: EventLoop, transport: SDKTransport, events: Recorder) -> None:
        self.loop, self.transport, self.events = loop, transport, events

    def run(self, method: str, *args: Any, timeout: float = 30) -> Any:
        return self.loop.run(getattr(self.transport, method), *args, timeout=timeout)

    def listed(self, kind: CatalogList[Any]) -> Any:
        """A catalog list of the server's, as the runtime asks for it (a request value)."""
        version = self.transport.negotiated_protocol
        return self.loop.run(listed, self.transport, kind, 10, version, timeout=30)

    def ask(self, request: Any, timeout: float = 30) -> Any:
        """A request function (`actors.mcp.request_functions`) run over the transport."""
        return self.loop.run(request, self.transport, timeout=timeout)

    def call(self, tool: str, arguments: dict[str, Any], timeout: float = 20) -> str:
        outcome = self.run("call_tool", tool, arguments, timeout, timeout=timeout + 10)
        assert not outcome.is_error, outcome
        return "\n".join(str(block.get("text", "")) for block in outcome.content)


@pytest.fixture(scope="module")
def everything(loop: EventLoop) -> Iterator[Everything]:
    transport = SDKTransport(
        StdioCommand(node(), (npm_server("server-everything"), "stdio")),
        SDKOptions(
            server_name="everything",
            protocol="legacy",
            protocol_memo={},
            handlers=ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots),
            log_level="debug",
        ),
    )
    events = Recorder()
    loop.run(transport.connect, events, timeout=60)
    yield Everything(loop, transport, events)
    loop.run(transport.close, timeout=15)
    assert not events.closed.is_set(), events.reasons


def test_resources_templates_and_reads(everything: Everything) -> None:
    resources = everything.listed(RESOURCES)
    uris = [r.uri for r in resources]
    assert len(uris) == len(set(uris)), "a page was listed twice"
    assert any(uri.startswith("demo://resource/static/document/") for uri in uris), uris

    templates = {t.uri_template: t for t in everything.listed(TEMPLATES)}
    assert TEXT in templates
    assert templates[TEXT].mime_type == "text/plain"

    text = everything.run("read_resource", "demo://resource/dynamic/text/1", 20)["contents"][0]
    assert text["text"].startswith("Resource 1: This is a plaintext resource")
    blob = everything.run("read_resource", "demo://resource/dynamic/blob/2", 20)["contents"][0]
    assert base64.b64decode(blob["blob"]).startswith(b"Resource 2: This is a base64 blob")
    with pytest.raises(ServerReplyError, match="Unknown resource"):
        everything.run("read_resource", "demo://resource/dynamic/text/0", 20)


def test_prompts_and_completion(everything: Everything) -> None:
    prompts = {p.name: p for p in everything.listed(PROMPTS)}
    assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(prompts)
    assert [a["name"] for a in prompts["args-prompt"].arguments] == ["city", "state"]

    answer = everything.run("get_prompt", "args-prompt", {"city": "Lyon"}, 20)
    assert "Lyon" in answer["messages"][0]["content"]["text"]
    with pytest.raises(ServerReplyError):
        everything.run("get_prompt", "args-prompt", {}, 20)
    with pytest.raises(ServerReplyError):
        everything.run("get_prompt", "no-such-prompt", {}, 20)

    departments = everything.ask(
        completion_request(
            {"type": "ref/prompt", "name": "completable-prompt"},
            {"name": "department", "value": "Eng"},
            None,
            20,
        )
    )
    assert departments["values"] == ["Engineering"]
    ids = everything.ask(
        completion_request(
            {"type": "ref/resource", "uri": TEXT}, {"name": "resourceId", "value": "5"}, None, 20
        )
    )
    assert ids["values"] == ["5"]


def test_progress_of_a_long_operation(everything: Everything) -> None:
    seen: list[tuple[float, float | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total))

    outcome = everything.run(
        "call_tool_with_progress",
        "trigger-long-running-operation",
        {"duration": 0.6, "steps": 3},
        20,
        progress,
    )
    assert "Steps: 3" in outcome.content[0]["text"]
    everything.call("echo", {"message": "sync"})
    assert sorted(seen) == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]


def test_subscription_updates_and_log_messages(everything: Everything) -> None:
    events = everything.events
    uri = "demo://resource/dynamic/text/7"
    everything.run("subscribe_resource", uri)
    # The server acknowledges a subscription with an info log message.
    assert events.wait_for(lambda: bool(events.logs(f"Received Subscribe Resource request for URI: {uri}")))
    assert "Started" in everything.call("toggle-subscriber-updates", {})
    try:
        assert events.wait_for(lambda: events.count("resource_updated", uri) >= 1)
    finally:
        assert "Stopped" in everything.call("toggle-subscriber-updates", {})
        everything.run("unsubscribe_resource", uri)


def test_sampling_roots_and_elicitation(everything: Everything) -> None:
    sampled = everything.call("trigger-sampling-request", {"prompt": "hi"})
    assert "echo Resource trigger-sampling-request context: hi" in sampled
    assert ROOT_URI in everything.call("get-roots-list", {})
    assert "declined" in everything.call("trigger-elicitation-request", {})


def test_a_tool_that_requires_tasks_is_flagged(everything: Everything) -> None:
    events = everything.events
    # Registered after the handshake, and announced (over stdio) with tools/list_changed.
    assert events.wait_for(lambda: events.tools_changed_count >= 1)
    tools = {tool.name: tool for tool in everything.run("list_tools")}
    assert tools["simulate-research-query"].task_support == "required"
    assert tools["echo"].task_support in (None, "forbidden")
