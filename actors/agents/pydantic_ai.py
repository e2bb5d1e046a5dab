"""`McpActorsToolset`: the runtime's tools as a pydantic-ai toolset, for ``Agent(toolsets=[...])``.

pydantic-ai's own extension point for tools is `AbstractToolset`: the agent asks it for its tools
at every run step (`get_tools`) and has it run each call (`call_tool`). This toolset answers both
through a `Toolbox`, so every call goes through the runtime as any call does: a server starts on
its first call (entering the toolset starts none), is idle-stopped, supervised and restarted.

- Names: ``namespace__tool`` (legal for every model API, at most 64 characters, reversible).
- Schemas: the server's input schema as it gave it (JSON Schema 2020-12, ``$defs`` and all).
  pydantic-ai's own check only asks for an object, as its MCP toolset's does; the runtime checks
  the arguments against the schema before anything is sent.
- Lists: fetched afresh at every step, so a server's list change reaches the model on the first
  step that begins after the runtime re-listed.
- Results (`tool_return`): text as text, images and audio as `BinaryContent`, structured output
  as its object, an embedded resource as its block (a blob as `BinaryContent`), a resource link
  as its block (an http(s) image link as an `ImageUrl`).
- Errors: a failure the model can correct (`RETRYABLE`: bad arguments, a tool error, a tool gone)
  is a `ModelRetry`, within the tool's retry budget; any other (a timeout, a server down or given
  up) a `ToolFailed`, which the model sees without being told to retry. Neither reaches the host.
- Progress: each report of a server is a `ToolProgress` event in the run's event stream.
- Cancellation: cancelling the agent's task cancels the call at the server (`AsyncRuntime`).

Owner: the host's event loop, the agent's. The toolset keeps no mutable state of its own (the
`Toolbox`'s name map is thread-safe); `AsyncRuntime` hands progress from the runtime's host
threads to the awaiting task on this loop.
"""

from __future__ import annotations

import base64
import binascii
import copy
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

from pydantic_ai import BinaryContent, CustomEvent, ImageUrl, ModelRetry, RunContext, ToolFailed
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from actors.agents.answers import AudioPart, ImagePart, Part, ResourcePart, TextPart, ToolAnswer
from actors.agents.toolbox import AgentTool, Toolbox
from actors.runtime.async_facade import AsyncProgress, AsyncRuntime
from actors.tools import ErrorType

__all__ = ["RETRYABLE", "McpActorsToolset", "ToolProgress", "tool_return"]

logger = logging.getLogger(__name__)

RETRYABLE: frozenset[ErrorType] = frozenset(
    {ErrorType.VALIDATION, ErrorType.SERVER_ERROR, ErrorType.NOT_FOUND}
)
"""The failures a model can put right itself, answered with `ModelRetry`: its arguments broke the
schema, the tool said it failed, the tool is gone. The others (``timeout``, ``connection``,
``failed``, ``auth``, ...) are answered with `ToolFailed`: a retry prompt would not help."""

# Any object, as pydantic-ai's MCP toolset accepts: re-modelling the server's schema in pydantic
# could refuse what the server accepts; the runtime checks the schema itself before sending.
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


@dataclass(kw_only=True)
class ToolProgress(CustomEvent, name="mcp_actors.progress"):
    """A server's progress report on a call, in the run's event stream (`RunContext.emit`): it
    reaches ``event_stream_handler``, ``Agent.iter`` and ``run_stream_events``. pydantic-ai stamps
    ``tool_call_id`` and ``tool_name``, which say whose call it is."""

    progress: float
    total: float | None = None
    message: str | None = None


class McpActorsToolset(AbstractToolset[Any]):
    """The tools of an `AsyncRuntime` (or of a `Toolbox`) for a pydantic-ai agent.

    ``namespaces`` limits the tools to those servers and ``timeout`` is each call's (None: the
    server's ``callTimeout``); both only with a runtime (a `Toolbox` has its own). ``id`` is the
    toolset's id (pydantic-ai's durable execution needs one). ``max_retries`` is each tool's retry
    budget (None: the agent's). ``retryable``: the error types answered with `ModelRetry`.
    ``progress``: emit the servers' progress reports as `ToolProgress` events. ``skills``: offer the
    servers' skills too, as ``load_skill`` and ``read_skill_file`` (`actors.agents.skills`).

    The host owns the runtime: open it before the agent runs, close it after; entering and
    leaving the toolset (pydantic-ai does, per run) starts and stops nothing.
    """

    def __init__(
        self,
        source: AsyncRuntime | Toolbox,
        *,
        namespaces: Collection[str] | None = None,
        timeout: float | None = None,
        id: str | None = None,
        max_retries: int | None = None,
        retryable: Collection[ErrorType] = RETRYABLE,
        progress: bool = True,
        skills: bool = False,
    ) -> None:
        self.toolbox = Toolbox.of(source, namespaces, timeout, skills)
        self._id = id
        self.max_retries = max_retries
        self.retryable = frozenset(retryable)
        self.progress = progress

    @property
    def id(self) -> str | None:
        return self._id

    async def __aenter__(self) -> Self:
        # Only checks the host opened the runtime; the servers stay as they are (lazy).
        if self.toolbox.runtime.runtime.closed:
            raise UserError(f"{self.label}: the runtime is shut down")
        return self

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # Listed afresh at every step, so a list change reaches the model on its next turn.
        return {tool.name: self._tool(_definition(tool), ctx) for tool in await self.toolbox.tools()}

    async def get_tool_for_tool_def(self, tool_def: ToolDefinition, ctx: RunContext[Any]) -> ToolsetTool[Any]:
        # A name this toolbox gave out needs no listing (durable execution rebuilds tools so).
        if self.toolbox.internal(tool_def.name) is None:
            return await super().get_tool_for_tool_def(tool_def, ctx)
        return self._tool(tool_def, ctx)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        answer = await self.toolbox.call(name, tool_args, progress=_emitter(ctx) if self.progress else None)
        if answer.ok:
            return tool_return(answer)
        message = answer.text or answer.error or f"{name} failed"
        if answer.error_type in self.retryable:
            raise ModelRetry(message)
        raise ToolFailed(message)

    def _tool(self, tool_def: ToolDefinition, ctx: RunContext[Any]) -> ToolsetTool[Any]:
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        return ToolsetTool(toolset=self, tool_def=tool_def, max_retries=retries, args_validator=_ANY_OBJECT)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r}, namespaces={self.toolbox.namespaces!r})"


def _definition(tool: AgentTool) -> ToolDefinition:
    """``tool`` as pydantic-ai declares it to a model: the server's schemas as they are."""
    # Copies: a model profile may rewrite a schema for its API; the runtime's stays as it was sent.
    output = copy.deepcopy(dict(tool.output_schema)) if tool.output_schema is not None else None
    return ToolDefinition(
        name=tool.name,
        description=tool.description or None,
        parameters_json_schema=copy.deepcopy(dict(tool.input_schema)),
        return_schema=output,
        # None lets the host choose whether the model sees it; a tool without one has none to send.
        include_return_schema=None if output is not None else False,
        metadata={"tool": tool.tool, "read_only": tool.read_only},
    )


def tool_return(answer: ToolAnswer) -> Any:
    """What pydantic-ai hands the model for a successful ``answer``: one item, or a list of them.

    Where the tool gave structured output, it stands for the text parts (which, by MCP's
    convention, carry the same object as JSON); the other parts follow it.
    """
    items = [
        _item(part) for part in answer.parts if answer.structured is None or not isinstance(part, TextPart)
    ]
    if answer.structured is not None:
        items.insert(0, dict(answer.structured))
    if not items:
        return None
    return items[0] if len(items) == 1 else items


def _item(part: Part) -> Any:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart | AudioPart):
        return BinaryContent.narrow_type(BinaryContent(data=part.raw(), media_type=part.mime_type))
    if isinstance(part, ResourcePart):
        if part.text is None and part.blob is not None:
            # The URI as the identifier: pydantic-ai shows it to the model beside the file.
            media = part.mime_type or "application/octet-stream"
            content = BinaryContent(data=_decoded(part.blob), media_type=media, identifier=part.uri)
            return BinaryContent.narrow_type(content)
        return _block({"type": "resource", "uri": part.uri, "mimeType": part.mime_type, "text": part.text})
    if part.mime_type is not None and part.mime_type.startswith("image/") and _web(part.uri):
        return ImageUrl(url=part.uri, media_type=part.mime_type)
    return _block(
        {
            "type": "resource_link",
            "uri": part.uri,
            "name": part.name,
            "mimeType": part.mime_type,
            "description": part.description,
        }
    )


def _block(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _web(uri: str) -> bool:
    return urlsplit(uri).scheme in ("http", "https")


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _emitter(ctx: RunContext[Any]) -> AsyncProgress:
    """Each progress report as a `ToolProgress` event of the call's run (awaited in order)."""
    streaming = True

    async def emit(progress: float, total: float | None, message: str | None) -> None:
        nonlocal streaming
        if not streaming:
            return
        try:
            await ctx.emit(ToolProgress(progress=progress, total=total, message=message))
        except UserError:  # a context with no event stream (a tool called outside a run)
            streaming = False
            logger.debug("agents: %s reports progress, but its context has no event stream", ctx.tool_name)

    return emit
