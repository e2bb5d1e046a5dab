"""`MockTransport`: a scriptable in-memory MCP server for tests, in the spirit of httpx's.

It implements the `ClientTransport` protocol without a process or a socket: tools with Python
handlers (and scripted progress), resources and templates with their contents, prompts with
their messages, completion, resource subscriptions; scripted connect failures and hangs, a
crash after N calls (the server goes silent, so only a health probe notices), slow calls, and
the server's news (list changes, resource updates, log messages) on demand.

Unknown resources and prompts, and missing prompt arguments, are refused as a server would:
with a `ServerReplyError` (``-32602``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import anyio

from actors.mcp.transport import (
    CallOutcome,
    JSONObject,
    Progress,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    RemoteTool,
    Request,
    ServerInfo,
    ServerReplyError,
    TransportEvents,
)

__all__ = [
    "ANSWERS",
    "Completer",
    "MockAnswer",
    "MockTransport",
    "PromptBehaviour",
    "ResourceContent",
    "ToolBehaviour",
]

logger = logging.getLogger(__name__)

ToolBehaviour = Callable[[dict[str, Any]], Any]
"""Returns a dict (structured content, also sent as JSON text), a `CallOutcome`, or raises."""

ResourceContent = str | bytes | JSONObject | Callable[[str], Any]
"""What reading a resource gives: text, bytes (sent as a base64 blob), one MCP contents entry
(``{"uri", "mimeType", "text" | "blob"}``), or a function of the URI returning one of those."""

PromptBehaviour = Callable[[dict[str, str]], Any]
"""Returns the prompt's text (one user message), a ``GetPromptResult`` as JSON, or raises."""

Completer = Callable[[JSONObject, dict[str, str], dict[str, str] | None], Sequence[str]]
"""``complete(ref, argument, context)`` → the completion values."""

INVALID_PARAMS: Final = -32602
METHOD_NOT_FOUND: Final = -32601

_FULL_CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
}


class MockTransport:
    """An MCP server in memory. Reusable: it can be connected again after a close."""

    kind = "mock"

    def __init__(
        self,
        tools: Iterable[RemoteTool | str] = (),
        handlers: dict[str, ToolBehaviour] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        connect_failures: int = 0,
        hang_on_connect: bool = False,
        fail_on_close: bool = False,
        crash_after: int | None = None,
        call_delay: float = 0.0,
        server_name: str = "mock",
        resources: Iterable[RemoteResource | str] = (),
        contents: Mapping[str, ResourceContent] | None = None,
        templates: Iterable[RemoteResourceTemplate | str] = (),
        prompts: Iterable[RemotePrompt | str] = (),
        prompt_handlers: Mapping[str, PromptBehaviour] | None = None,
        completer: Completer | None = None,
        progress: Mapping[str, Sequence[tuple[float, float | None, str | None]]] | None = None,
    ) -> None:
        self.tools: list[RemoteTool] = [RemoteTool(name=t) if isinstance(t, str) else t for t in tools]
        self.handlers: dict[str, ToolBehaviour] = dict(handlers or {})
        self.capabilities = dict(
            capabilities if capabilities is not None else {"tools": {"listChanged": True}}
        )
        self.connect_failures = connect_failures
        self.hang_on_connect = hang_on_connect
        self.fail_on_close = fail_on_close
        self.crash_after = crash_after
        self.call_delay = call_delay
        """Each tool call, resource read, prompt get and completion takes this long first."""
        self.server_name = server_name
        self.resources: list[RemoteResource] = [_resource(r) for r in resources]
        self.contents: dict[str, ResourceContent] = dict(contents or {})
        """Contents by URI; a listed resource without an entry reads as its own URI in text."""
        self.templates: list[RemoteResourceTemplate] = [
            RemoteResourceTemplate(uri_template=t, name=t) if isinstance(t, str) else t for t in templates
        ]
        self.prompts: list[RemotePrompt] = [
            RemotePrompt(name=p) if isinstance(p, str) else p for p in prompts
        ]
        self.prompt_handlers: dict[str, PromptBehaviour] = dict(prompt_handlers or {})
        self.completer = completer
        self.progress: dict[str, Sequence[tuple[float, float | None, str | None]]] = dict(progress or {})
        """Tool name → the ``(progress, total, message)`` steps it reports before answering."""
        self.connects = 0
        self.closes = 0
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reads: list[str] = []
        self.subscriptions: set[str] = set()
        self.connected = False
        self.crashed = False
        self._calls_this_connection = 0
        self._events: TransportEvents | None = None

    @classmethod
    def full_capabilities(cls, tools: Iterable[RemoteTool | str] = (), **script: Any) -> MockTransport:
        """A server that offers tools, resources (with subscriptions), prompts, completion and
        logging; ``script`` takes the other keyword arguments."""
        return cls(tools, capabilities=_FULL_CAPABILITIES, **script)

    @property
    def pid(self) -> int | None:
        return None

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        if self.hang_on_connect:
            await anyio.sleep_forever()
        if self.connect_failures > 0:
            self.connect_failures -= 1
            raise ConnectionError(f"{self.server_name} refused the connection")
        self.connects += 1
        self.connected, self.crashed = True, False
        self._calls_this_connection = 0
        self.subscriptions.clear()
        self._events = events
        return ServerInfo(
            name=self.server_name,
            version="1.0",
            protocol_version="mock",
            capabilities=dict(self.capabilities),
        )

    def _require_alive(self) -> None:
        if not self.connected or self.crashed:
            raise ConnectionError(f"{self.server_name} is not answering")

    async def _delay(self, timeout: float | None) -> None:
        if self.call_delay:
            with anyio.fail_after(timeout if timeout is not None else float("inf")):
                await anyio.sleep(self.call_delay)

    # ---- tools ----------------------------------------------------------------------------

    async def list_tools(self) -> list[RemoteTool]:
        self._require_alive()
        return list(self.tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        self._require_alive()
        self.calls.append((name, arguments))
        self._calls_this_connection += 1
        if self.crash_after is not None and self._calls_this_connection > self.crash_after:
            self.crashed = True
            raise ConnectionError(f"{self.server_name} crashed")
        await self._delay(timeout)
        if self.crash_after is not None and self._calls_this_connection >= self.crash_after:
            # The call is answered, then the server dies silently: only a probe can tell.
            self.crashed = True
        behaviour = self.handlers.get(name)
        value = behaviour(arguments) if behaviour is not None else {"ok": True}
        if isinstance(value, CallOutcome):
            return value
        return CallOutcome(
            content=[{"type": "text", "text": json.dumps(value)}],
            structured_content=value if isinstance(value, dict) else {"result": value},
        )

    async def call_tool_with_progress(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress
    ) -> CallOutcome:
        """Report the tool's scripted `progress` steps, then answer as `call_tool`."""
        self._require_alive()
        for done, total, message in self.progress.get(name, ()):
            await progress(done, total, message)
        return await self.call_tool(name, arguments, timeout)

    # ---- resources ------------------------------------------------------------------------

    async def read_resource(self, uri: str, timeout: float | None) -> JSONObject:
        self._require_alive()
        self.reads.append(uri)
        await self._delay(timeout)
        listed = next((r for r in self.resources if r.uri == uri), None)
        content = self.contents.get(uri)
        if content is None and listed is None:
            raise ServerReplyError(f"Unknown resource: {uri}", INVALID_PARAMS)
        if callable(content):
            content = content(uri)
        mime_type = listed.mime_type if listed is not None else None
        return {"contents": [_contents(uri, uri if content is None else content, mime_type)]}

    async def subscribe_resource(self, uri: str) -> None:
        self._require_alive()
        self.subscriptions.add(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        self._require_alive()
        self.subscriptions.discard(uri)

    # ---- prompts and completion -----------------------------------------------------------

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float | None) -> JSONObject:
        self._require_alive()
        await self._delay(timeout)
        prompt = next((p for p in self.prompts if p.name == name), None)
        if prompt is None:
            raise ServerReplyError(f"Unknown prompt: {name}", INVALID_PARAMS)
        required = [a.get("name") for a in prompt.arguments if a.get("required")]
        if missing := [a for a in required if a not in arguments]:
            raise ServerReplyError(
                f"Missing required arguments: {', '.join(map(str, missing))}", INVALID_PARAMS
            )
        behaviour = self.prompt_handlers.get(name)
        value = behaviour(dict(arguments)) if behaviour is not None else prompt.description or name
        if isinstance(value, dict):
            return value
        message = {"role": "user", "content": {"type": "text", "text": str(value)}}
        answer: JSONObject = {"messages": [message]}
        if prompt.description:
            answer["description"] = prompt.description
        return answer

    async def send(self, request: Request, timeout: float | None) -> JSONObject:
        """A request as a value (`actors.mcp.transport.RequestTransport`), answered by the
        method's entry in `ANSWERS`; a method it has none for, as a server would (-32601)."""
        self._require_alive()
        answer = ANSWERS.get(request.method)
        if answer is None:
            raise ServerReplyError(f"Method not found: {request.method}", METHOD_NOT_FOUND)
        if answer.delayed:
            await self._delay(timeout)
        return answer.reply(self, request.params)

    def _resources(self, params: JSONObject) -> JSONObject:
        return {"resources": [_json(resource) for resource in self.resources]}

    def _templates(self, params: JSONObject) -> JSONObject:
        return {"resourceTemplates": [_json(template) for template in self.templates]}

    def _prompts(self, params: JSONObject) -> JSONObject:
        return {"prompts": [_json(prompt) for prompt in self.prompts]}

    def _complete(self, params: JSONObject) -> JSONObject:
        argument, context = params.get("argument") or {}, params.get("context")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        ref, completer = params.get("ref") or {}, self.completer
        values = list(completer(ref, argument, arguments)) if completer is not None else []
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}

    async def probe(self) -> None:
        self._require_alive()

    async def close(self) -> None:
        self.closes += 1
        self.connected = False
        self._events = None
        if self.fail_on_close:
            raise RuntimeError(f"{self.server_name} failed to close cleanly")

    # ---- the server's news, on demand -------------------------------------------------------

    def add_tool(self, tool: RemoteTool | str) -> None:
        """Add a tool and tell the client its list changed (as a server's notification would)."""
        self.tools.append(RemoteTool(name=tool) if isinstance(tool, str) else tool)
        self._tell("on_tools_changed")

    def add_resource(self, resource: RemoteResource | str, content: ResourceContent | None = None) -> None:
        """Add a resource (and its contents) and tell the client the resource list changed."""
        added = _resource(resource)
        self.resources.append(added)
        if content is not None:
            self.contents[added.uri] = content
        self._tell("on_resources_changed")

    def add_prompt(self, prompt: RemotePrompt | str, behaviour: PromptBehaviour | None = None) -> None:
        """Add a prompt and tell the client the prompt list changed."""
        added = _prompt(prompt)
        self.prompts.append(added)
        if behaviour is not None:
            self.prompt_handlers[added.name] = behaviour
        self._tell("on_prompts_changed")

    def update_resource(self, uri: str, content: ResourceContent | None = None) -> bool:
        """Change a resource; subscribers are told (True) if the client subscribed to it."""
        if content is not None:
            self.contents[uri] = content
        if uri not in self.subscriptions:
            return False
        self._tell("on_resource_updated", uri)
        return True

    def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """Send a log message (``notifications/message``)."""
        self._tell("on_log", level, logger_name, data)

    def crash(self) -> None:
        """Die silently now."""
        self.crashed = True

    def die(self, reason: str = "process exited") -> None:
        """Die and say so, as a process exit seen by the transport would."""
        self.crashed = True
        self._tell("on_closed", reason)

    def _tell(self, news: str, *args: Any) -> None:
        handler = getattr(self._events, news, None) if self._events is not None else None
        if handler is not None:
            handler(*args)


@dataclasses.dataclass(frozen=True)
class MockAnswer:
    """How the mock answers one method sent as a request value: ``reply(mock, params)``;
    ``delayed``: after the mock's ``delay``, as its calls are (else at once, as its lists)."""

    reply: Callable[[MockTransport, JSONObject], JSONObject]
    delayed: bool = False


ANSWERS: Final[Mapping[str, MockAnswer]] = {
    "completion/complete": MockAnswer(MockTransport._complete, delayed=True),
    "resources/list": MockAnswer(MockTransport._resources),
    "resources/templates/list": MockAnswer(MockTransport._templates),
    "prompts/list": MockAnswer(MockTransport._prompts),
}
"""How the mock answers each method sent as a request value (`MockTransport.send`)."""


def _json(entry: RemoteResource | RemoteResourceTemplate | RemotePrompt) -> JSONObject:
    """A listed entry as a server sends it (camelCase keys, unset fields left out)."""
    fields = dataclasses.asdict(entry)
    return {
        _camel(key): list(value) if isinstance(value, tuple) else value
        for key, value in fields.items()
        if value not in (None, ())
    }


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def _resource(resource: RemoteResource | str) -> RemoteResource:
    if isinstance(resource, RemoteResource):
        return resource
    return RemoteResource(uri=resource, name=resource.rsplit("/", 1)[-1] or resource)


def _prompt(prompt: RemotePrompt | str) -> RemotePrompt:
    return RemotePrompt(name=prompt) if isinstance(prompt, str) else prompt


def _contents(uri: str, content: Any, mime_type: str | None) -> JSONObject:
    if isinstance(content, dict):
        return {"uri": uri, **content}
    if isinstance(content, bytes):
        blob = base64.b64encode(content).decode("ascii")
        return {"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}
    return {"uri": uri, "mimeType": mime_type or "text/plain", "text": str(content)}
