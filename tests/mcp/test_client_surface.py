"""`SDKTransport` as a `ClientTransport`: resources, templates, prompts, completion, progress,
subscriptions, list changes, logging and the host's answers to server requests (sampling,
roots, elicitation), against the SDK fixture server (``--surface``) over stdio and Streamable
HTTP in both protocol eras, and against a hand-written server that answers badly.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from actors.mcp.config import ServerConfig
from actors.mcp.freshness import CACHE_HINT
from actors.mcp.list_requests import PROMPTS, RESOURCES, TEMPLATES, CatalogList, listed
from actors.mcp.loop import THREAD_NAME, EventLoop
from actors.mcp.request_functions import completion_request
from actors.mcp.sdk_transport import MODERN_PROTOCOL, SDKOptions, SDKTransport, StdioCommand
from actors.mcp.transport import ClientHandlers, ClientTransport, JSONObject, ServerReplyError
from tests.mcp.conftest import Recorder, http_transport, stdio_transport
from tests.servers.http_server import REPO_ROOT, HTTPServer

ERAS = ["legacy", MODERN_PROTOCOL]
SESSIONS = [("stdio", "legacy"), ("stdio", MODERN_PROTOCOL), ("http", "legacy"), ("http", MODERN_PROTOCOL)]
SURFACE = ("--surface", "--page-size", "1")
HANDLER_TIMEOUT = 2.0
ROOTS = [{"uri": "file:///tmp/root-a", "name": "a"}, {"uri": "file:///tmp/root-b"}]


async def sampling(params: JSONObject) -> JSONObject:
    """A model that echoes, or misbehaves when asked to ("raise", "hang", "garbage")."""
    text = params["messages"][0]["content"]["text"]
    if text == "raise":
        raise RuntimeError("no model today")
    if text == "hang":
        await anyio.sleep_forever()
    if text == "garbage":
        return {"nonsense": True}
    return {"role": "assistant", "content": {"type": "text", "text": f"echo {text}"}, "model": "test-model"}


async def elicitation(params: JSONObject) -> JSONObject:
    assert params["message"] == "Your name?"
    assert "name" in params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {"name": "Ada"}}


async def roots() -> list[JSONObject]:
    return ROOTS


HANDLERS = ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots)


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def text_of(outcome: Any) -> str:
    return str(outcome.content[0]["text"])


@pytest.fixture(scope="module")
def surface_http() -> Iterator[HTTPServer]:
    """The fixture server with the whole surface over Streamable HTTP, shared by the module."""
    with HTTPServer("streamable-http", extra_args=SURFACE) as server:
        yield server


class Session:
    """A connected transport and the events it reported."""

    def __init__(self, loop: EventLoop, transport: SDKTransport, events: Recorder) -> None:
        self.loop = loop
        self.transport = transport
        self.events = events

    @property
    def modern(self) -> bool:
        return self.transport.negotiated_protocol == MODERN_PROTOCOL

    def run(self, method: str, *args: Any, timeout: float = 20) -> Any:
        return self.loop.run(getattr(self.transport, method), *args, timeout=timeout)

    def listed(self, kind: CatalogList[Any]) -> Any:
        """A catalog list of the server's, as the runtime asks for it (a request value)."""
        version = self.transport.negotiated_protocol
        return self.loop.run(listed, self.transport, kind, 10, version, timeout=30)

    def call(self, tool: str, arguments: dict[str, Any], timeout: float = 10) -> Any:
        return self.run("call_tool", tool, arguments, timeout, timeout=timeout + 10)

    def round_trip(self) -> None:
        """A request answered after everything the server sent before it."""
        assert text_of(self.call("echo", {"text": "sync"})) == "sync"


@pytest.fixture(scope="module", params=SESSIONS, ids=["-".join(s) for s in SESSIONS])
def session(request: pytest.FixtureRequest, loop: EventLoop, surface_http: HTTPServer) -> Iterator[Session]:
    """A session with the host's handlers and log level ``warning``, in each way and era."""
    kind, protocol = request.param
    options: dict[str, Any] = {
        "protocol": protocol,
        "handlers": HANDLERS,
        "handler_timeout": HANDLER_TIMEOUT,
        "log_level": "warning",
    }
    if kind == "stdio":
        transport = stdio_transport(*SURFACE, **options)
    else:
        transport = http_transport(surface_http.url, **options)
    events = Recorder()
    loop.run(transport.connect, events, timeout=30)
    yield Session(loop, transport, events)
    loop.run(transport.close, timeout=15)
    assert not events.closed.is_set(), events.reasons


def fresh(loop: EventLoop, protocol: str, **options: Any) -> SDKTransport:
    transport = stdio_transport(*SURFACE, protocol=protocol, **options)
    loop.run(transport.connect, timeout=30)
    return transport


# -- lists, reads, prompts, completion ----------------------------------------------------------


def test_is_a_client_transport(session: Session) -> None:
    assert isinstance(session.transport, ClientTransport)
    assert session.transport.negotiated_protocol is not None


def test_lists_follow_every_page(session: Session) -> None:
    resources = {r.uri: r for r in session.listed(RESOURCES)}
    assert {"fixture://greeting", "fixture://blob"} <= set(resources)
    greeting = resources["fixture://greeting"]
    assert (greeting.name, greeting.description, greeting.mime_type) == (
        "greeting",
        "A greeting.",
        "text/plain",
    )

    templates = session.listed(TEMPLATES)
    assert [(t.uri_template, t.name) for t in templates] == [("fixture://items/{item}", "item")]

    prompts = {p.name: p for p in session.listed(PROMPTS)}
    assert {"greet", "plain"} <= set(prompts)
    assert prompts["greet"].description == "Greet someone."
    arguments = {a["name"]: a for a in prompts["greet"].arguments}
    assert arguments["name"]["required"] is True
    assert not arguments["punctuation"].get("required", False)
    assert prompts["plain"].arguments == ()


def test_read_text_blob_and_template_resources(session: Session) -> None:
    text = session.run("read_resource", "fixture://greeting", 10)
    greeting = {"uri": "fixture://greeting", "mimeType": "text/plain", "text": "hello from the fixture"}
    assert text["contents"] == [greeting]
    # The caching hint travels beside the answer (the adapter moves it to the result's metadata).
    assert set(text) - {CACHE_HINT} <= {"contents", "_meta"}, "protocol bookkeeping in the answer"
    # Hints are a 2026-07-28 thing; the fixture sets none, so the SDK's default goes out.
    assert text.get(CACHE_HINT) == ({"ttlMs": 0, "cacheScope": "private"} if session.modern else None)

    blob = session.run("read_resource", "fixture://blob", 10)["contents"][0]
    assert blob["mimeType"] == "application/octet-stream"
    assert base64.b64decode(blob["blob"]) == bytes(range(8))

    item = session.run("read_resource", "fixture://items/kiwi", 10)["contents"][0]
    assert item["text"] == "item kiwi"


def test_get_prompt(session: Session) -> None:
    answer = session.run("get_prompt", "greet", {"name": "Ada", "punctuation": "?"}, 10)
    assert answer["description"] == "Greet someone."
    assert answer["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello, Ada?"}}]
    assert set(answer) <= {"description", "messages", "_meta"}


def test_unknown_resource_unknown_prompt_and_missing_arguments_are_reply_errors(session: Session) -> None:
    with pytest.raises(ServerReplyError, match="Unknown resource") as unknown:
        session.run("read_resource", "fixture://nope", 10)
    assert unknown.value.code == -32602
    with pytest.raises(ServerReplyError):
        session.run("get_prompt", "nope", {}, 10)
    with pytest.raises(ServerReplyError):
        session.run("get_prompt", "greet", {}, 10)
    session.round_trip()


def test_complete_prompt_and_template_arguments(session: Session) -> None:
    # Completion is a request value sent through the transport's one `send` (no method of its own).
    def complete(ref: dict[str, Any], argument: dict[str, str], context: dict[str, str] | None) -> Any:
        return session.loop.run(completion_request(ref, argument, context, 10), session.transport, timeout=20)

    people = complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "al"}, None)
    assert people == {"values": ["alice", "albert"], "total": 2, "hasMore": False}
    fruit = complete(
        {"type": "ref/resource", "uri": "fixture://items/{item}"},
        {"name": "item", "value": "ap"},
        {"other": "x"},
    )
    assert fruit["values"] == ["apple", "apricot"]
    with pytest.raises(ServerReplyError):  # the server's own refusal of a reference it has no kind for
        complete({"type": "ref/tool", "name": "x"}, {"name": "a", "value": ""}, None)


# -- progress and logging -----------------------------------------------------------------------


def test_progress_reaches_the_callback_on_the_loop(session: Session) -> None:
    seen: list[tuple[float, float | None, str | None, str]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message, threading.current_thread().name))

    outcome = session.run("call_tool_with_progress", "progress", {"steps": 3}, 10, progress)
    assert text_of(outcome) == "done 3"
    session.round_trip()
    assert sorted(seen) == [(float(i), 3.0, f"step {i}", THREAD_NAME) for i in (1, 2, 3)]


def test_log_messages_at_or_above_the_level_reach_the_events(session: Session) -> None:
    text = unique("log-")
    assert text_of(session.call("log", {"text": text})) == "logged"
    assert session.events.wait_for(lambda: len(session.events.logs(text)) >= 2), session.events.news
    session.round_trip()
    logs = session.events.logs(text)
    assert sorted(level for level, _, _ in logs) == ["error", "warning"]
    assert all(logger == "fixture" and data == {"level": level, "text": text} for level, logger, data in logs)


# -- the host's answers to the server's requests -------------------------------------------------


def test_sampling_roots_and_elicitation_are_answered_by_the_handlers(session: Session) -> None:
    assert text_of(session.call("sample", {"prompt": "hi"})) == "model said: echo hi"
    assert text_of(session.call("roots", {})) == "file:///tmp/root-a,file:///tmp/root-b"
    assert text_of(session.call("elicit_name", {})) == "accept Ada"


@pytest.mark.parametrize("misbehaviour", ["raise", "hang", "garbage"])
def test_a_failing_handler_gives_the_server_an_error_and_the_session_goes_on(
    session: Session, misbehaviour: str
) -> None:
    # Handshake era: the server's request gets an error answer, which fails its tool call.
    # 2026-07-28: the SDK's input-required round fails the call on our side.
    try:
        outcome = session.call("sample", {"prompt": misbehaviour}, timeout=HANDLER_TIMEOUT + 15)
    except ServerReplyError as exc:
        failure = str(exc)
    else:
        assert outcome.is_error, outcome
        failure = text_of(outcome)
    expected = {"raise": "no model today", "hang": "no answer within", "garbage": "not a CreateMessageResult"}
    assert expected[misbehaviour] in failure
    assert text_of(session.call("sample", {"prompt": "again"})) == "model said: echo again"


@pytest.mark.parametrize("protocol", ERAS)
def test_without_handlers_the_capabilities_are_not_declared(loop: EventLoop, protocol: str) -> None:
    transport = fresh(loop, protocol)
    try:
        for tool in ("sample", "roots", "elicit_name"):
            try:
                outcome = loop.run(transport.call_tool, tool, {"prompt": "x"} if tool == "sample" else {}, 10)
            except ServerReplyError as exc:
                failure = str(exc)
            else:
                assert outcome.is_error, (tool, outcome)
                failure = text_of(outcome)
            assert "capability" in failure or "not supported" in failure, (tool, failure)
    finally:
        loop.run(transport.close, timeout=15)


@pytest.mark.parametrize("protocol", ERAS)
def test_ask_without_a_handler_declines(loop: EventLoop, protocol: str) -> None:
    transport = fresh(loop, protocol, elicitation="ask")
    try:
        assert text_of(loop.run(transport.call_tool, "elicit_name", {}, 10)) == "decline"
    finally:
        loop.run(transport.close, timeout=15)


@pytest.mark.parametrize("protocol", ERAS)
def test_a_handler_overrides_the_elicitation_policy(loop: EventLoop, protocol: str) -> None:
    transport = fresh(loop, protocol, elicitation="decline", handlers=ClientHandlers(elicitation=elicitation))
    try:
        assert text_of(loop.run(transport.call_tool, "elicit_name", {}, 10)) == "accept Ada"
    finally:
        loop.run(transport.close, timeout=15)


def test_for_server_offers_sampling_only_where_the_config_allows_it() -> None:
    denied = SDKTransport.for_server(ServerConfig(name="x", command="srv"), handlers=HANDLERS)
    allowed = SDKTransport.for_server(
        ServerConfig(name="x", command="srv", sampling="allow", log_level="error"), handlers=HANDLERS
    )
    assert denied.options.handlers == ClientHandlers(elicitation=elicitation, roots=roots)
    assert allowed.options.handlers == HANDLERS
    assert (denied.options.log_level, allowed.options.log_level) == (None, "error")


# -- list changes and subscriptions -------------------------------------------------------------


def test_resource_and_prompt_list_changes_are_reported_once(session: Session) -> None:
    events = session.events
    resources_before, prompts_before = events.count("resources_changed"), events.count("prompts_changed")
    name = unique("r")
    session.call("add_resource", {"name": name})
    assert events.wait_for(lambda: events.count("resources_changed") > resources_before)
    assert f"fixture://added/{name}" in {r.uri for r in session.listed(RESOURCES)}
    prompt = unique("p")
    session.call("add_prompt", {"name": prompt})
    assert events.wait_for(lambda: events.count("prompts_changed") > prompts_before)
    assert prompt in {p.name for p in session.listed(PROMPTS)}
    session.round_trip()
    assert events.count("resources_changed") == resources_before + 1
    assert events.count("prompts_changed") == prompts_before + 1
    assert events.threads == {THREAD_NAME}


def test_updates_of_subscribed_resources_are_reported_once(session: Session) -> None:
    events = session.events
    first, second = f"fixture://items/{unique('a')}", f"fixture://items/{unique('b')}"

    session.run("subscribe_resource", first)
    session.call("touch", {"uri": first})
    assert events.wait_for(lambda: events.count("resource_updated", first) >= 1)

    # A second subscription (on 2026-07-28: a new listen stream); the first still reports.
    session.run("subscribe_resource", second)
    session.call("touch", {"uri": first})
    session.call("touch", {"uri": second})
    assert events.wait_for(
        lambda: events.count("resource_updated", first) >= 2 and events.count("resource_updated", second) >= 1
    )
    session.round_trip()
    assert (events.count("resource_updated", first), events.count("resource_updated", second)) == (2, 1)

    session.run("unsubscribe_resource", first)
    session.call("touch", {"uri": first})
    session.call("touch", {"uri": second})
    assert events.wait_for(lambda: events.count("resource_updated", second) >= 2)
    session.round_trip()
    assert events.count("resource_updated", first) == 2, "an update after unsubscribing"
    session.run("unsubscribe_resource", second)


def test_an_unsubscribed_resource_is_not_reported(session: Session) -> None:
    uri = f"fixture://items/{unique('never')}"
    session.call("touch", {"uri": uri})
    session.round_trip()
    session.round_trip()
    assert session.events.count("resource_updated", uri) == 0


# -- a server that answers badly or not at all ---------------------------------------------------


@pytest.fixture(scope="module")
def raw(loop: EventLoop) -> Iterator[SDKTransport]:
    transport = SDKTransport(
        StdioCommand(sys.executable, ("-m", "tests.mcp.raw_server"), None, str(REPO_ROOT)),
        SDKOptions(server_name="raw", protocol="legacy", protocol_memo={}, request_timeout=5),
    )
    loop.run(transport.connect, timeout=30)
    yield transport
    loop.run(transport.close, timeout=15)


def test_a_malformed_answer_is_a_reply_error(loop: EventLoop, raw: SDKTransport) -> None:
    with pytest.raises(ServerReplyError, match=r"answer to resources/read raw://garbage is malformed"):
        loop.run(raw.read_resource, "raw://garbage", 5, timeout=15)
    with pytest.raises(ServerReplyError, match=r"answer to prompts/list is malformed"):
        loop.run(listed, raw, PROMPTS, 5, raw.negotiated_protocol, timeout=15)
    assert loop.run(raw.read_resource, "raw://hello", 5, timeout=15)["contents"][0]["text"] == "hello"


def test_an_unanswered_request_times_out_and_the_server_is_told(loop: EventLoop, raw: SDKTransport) -> None:
    with pytest.raises(TimeoutError, match=r"resources/read raw://silent got no answer within 0\.5s"):
        loop.run(raw.read_resource, "raw://silent", 0.5, timeout=15)
    with pytest.raises(TimeoutError, match="prompts/get 'p' got no answer"):
        loop.run(raw.get_prompt, "p", {}, 0.5, timeout=15)
    cancelled = json.loads(
        loop.run(raw.read_resource, "raw://cancelled", 5, timeout=15)["contents"][0]["text"]
    )
    assert len(cancelled) == 2, cancelled
    with pytest.raises(ServerReplyError, match="Unknown resource") as unknown:
        loop.run(raw.read_resource, "raw://other", 5, timeout=15)
    assert unknown.value.code == -32602
