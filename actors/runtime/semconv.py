"""A request's span in the OpenTelemetry semantic conventions for MCP (an ``mcp.client`` span).

Named ``{mcp.method.name} {target}``: ``tools/call echo``, ``prompts/get greet``, and the
method alone where there is no low-cardinality target (``resources/read``,
``completion/complete``, ``tasks/get``). Attributes: ``mcp.method.name``,
``gen_ai.operation.name`` (``execute_tool``) and ``gen_ai.tool.name`` for a tool call,
``gen_ai.prompt.name``, ``mcp.resource.uri``, ``mcp.protocol.version`` (once negotiated),
``network.transport`` (``pipe`` over stdio, ``tcp`` over HTTP) with ``server.address`` and
``server.port``, beside the runtime's own ``mcp_actors.*``. A tool call's arguments and result
(``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) only when the host opts in, as the
GenAI instrumentations do: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; each is
at most `CONTENT_LIMIT` characters, and is built without serialising more than that (a big
result costs the loop no more than a small one).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit

from actors.mcp.config import ServerConfig
from actors.runtime.messages import CallTool, Complete, GetPrompt, ReadResource, ServerRequest
from actors.runtime.skill_messages import SkillAction, SkillRequest
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, UpdateTask

__all__ = [
    "CAPTURE_CONTENT",
    "CONTENT_LIMIT",
    "bounded_json",
    "capturing",
    "method_of",
    "request_attributes",
    "span_name",
]

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that opts in to arguments and results on spans (``true``)."""
CONTENT_LIMIT = 4096
"""Characters of arguments or of a result recorded at most; more is cut, and says so."""
_CUT = "…(cut)"


_SKILL_METHODS = {
    SkillAction.LIST: "skills/list",
    SkillAction.GET: "skills/get",
    SkillAction.LOAD: "resources/read",
    SkillAction.READ: "resources/read",
    SkillAction.DIRECTORY: "resources/directory/read",
}


def method_of(call: ServerRequest) -> str:
    """The MCP method ``call`` sends."""
    match call:
        case CallTool() | StartTask():
            return "tools/call"
        case ReadResource():
            return "resources/read"
        case GetPrompt():
            return "prompts/get"
        case Complete():
            return "completion/complete"
        case GetTask():
            return "tasks/get"
        case UpdateTask():
            return "tasks/update"
        case CancelTask():
            return "tasks/cancel"
        case SkillRequest(action=action):
            return _SKILL_METHODS[action]


def span_name(call: ServerRequest) -> str:
    """``{mcp.method.name} {target}``, the target a tool's or a prompt's name."""
    match call:
        case CallTool() | StartTask():
            return f"tools/call {call.tool}"
        case GetPrompt():
            return f"prompts/get {call.prompt}"
    return method_of(call)


def capturing() -> bool:
    """Whether the host opted in to arguments and results on spans."""
    return os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"


def request_attributes(
    call: ServerRequest, namespace: str, config: ServerConfig | None = None, protocol: str | None = None
) -> dict[str, Any]:
    """The attributes of ``call``'s span (made only for a span that records)."""
    attributes: dict[str, Any] = {
        "mcp.method.name": method_of(call),
        "mcp_actors.namespace": namespace,
        "mcp_actors.target": call.target,
    }
    match call:
        case CallTool() | StartTask():
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = call.tool
            if capturing():
                attributes["gen_ai.tool.call.arguments"] = bounded_json(call.arguments)
        case GetPrompt():
            attributes["gen_ai.prompt.name"] = call.prompt
        case ReadResource():
            attributes["mcp.resource.uri"] = call.uri
    if protocol:
        attributes["mcp.protocol.version"] = protocol
    if config is not None:
        attributes.update(_network(config))
    return attributes


def _network(config: ServerConfig) -> dict[str, Any]:
    if config.transport == "stdio":
        return {"network.transport": "pipe"}
    try:
        url = urlsplit(config.url or "")
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return {"network.transport": "tcp"}
    return {"network.transport": "tcp", "server.address": url.hostname or "", "server.port": port}


def bounded_json(value: Any, limit: int = CONTENT_LIMIT) -> str:
    """``value`` as JSON, at most ``limit`` characters (then cut, ending in ``…(cut)``), written
    a piece at a time so that no more than the limit is ever serialised."""
    pieces: list[str] = []
    room = limit

    def emit(text: str) -> bool:
        """Add ``text`` (what fits of it); False once past the limit."""
        nonlocal room
        pieces.append(text[: max(room, 0)])
        room -= len(text)
        return room >= 0

    def walk(item: Any) -> bool:
        if isinstance(item, dict):
            if not emit("{"):
                return False
            for index, (key, inner) in enumerate(item.items()):
                if index and not emit(","):
                    return False
                if not emit(json.dumps(str(key)[: max(room, 0) + 1]) + ":") or not walk(inner):
                    return False
            return emit("}")
        if isinstance(item, list | tuple):
            if not emit("["):
                return False
            for index, inner in enumerate(item):
                if (index and not emit(",")) or not walk(inner):
                    return False
            return emit("]")
        if isinstance(item, str):
            # One character past the room: a string that fits is written whole, one that does
            # not is cut.
            return emit(json.dumps(item[: max(room, 0) + 1]))
        return emit(json.dumps(item, default=str))

    walk(value)
    text = "".join(pieces)
    return text if room >= 0 else text + _CUT
