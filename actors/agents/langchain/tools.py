"""`McpActorsTool`: one of the runtime's tools as a LangChain ``BaseTool``; `langchain_tools`.

A tool declares the server's JSON Schema unchanged (``$defs`` and all) as its ``args_schema`` and
answers ``content_and_artifact``: LangChain content blocks for the model (`content_blocks`), and
a `ToolArtifact` (the structured output and the whole `ToolAnswer`) for the host. A failed call
raises `McpToolError`, a ``ToolException`` the tool itself turns into a
``ToolMessage(status="error")`` for the model. Progress becomes a custom callback event of the
tool's run (`PROGRESS_EVENT`) and, inside a LangGraph run, a chunk of the ``custom`` stream mode.

Owner: the host's event loop. A tool runs there only (``ainvoke``; ``invoke`` raises
``NotImplementedError``); it keeps nothing mutable.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Collection, Mapping
from typing import Any, Final, Literal, TypedDict, cast

from langchain_core.callbacks import AsyncCallbackManagerForToolRun
from langchain_core.messages.content import (
    ContentBlock,
    create_audio_block,
    create_file_block,
    create_image_block,
    create_text_block,
)
from langchain_core.tools import BaseTool, ToolException
from langgraph.config import get_stream_writer
from langgraph.types import StreamWriter
from pydantic import PrivateAttr

from actors.agents.answers import (
    AudioPart,
    ImagePart,
    LinkPart,
    Part,
    ResourcePart,
    TextPart,
    ToolAnswer,
    part_text,
)
from actors.agents.toolbox import AgentTool, Toolbox
from actors.runtime.async_facade import AsyncProgress, AsyncRuntime

__all__ = [
    "PROGRESS_EVENT",
    "McpActorsTool",
    "McpToolError",
    "ProgressChunk",
    "ToolArtifact",
    "content_blocks",
    "langchain_tools",
]

logger = logging.getLogger(__name__)

PROGRESS_EVENT: Final = "mcp_actors.progress"
"""The name of the custom callback event a tool's progress report becomes (`ProgressChunk`)."""


class ProgressChunk(TypedDict):
    """One progress report of a call in flight: a custom event's data, a ``custom`` stream chunk."""

    event: Literal["mcp_actors.progress"]
    tool: str
    """The tool's name as the model knows it (``namespace__tool``)."""
    tool_call_id: str | None
    progress: float
    total: float | None
    message: str | None


class ToolArtifact(TypedDict):
    """A ``ToolMessage``'s artifact: what the model is not shown but the host may want."""

    structured_content: Mapping[str, Any] | None
    """The tool's structured output (the key ``langchain.mcp`` gives it, too)."""
    answer: ToolAnswer
    """The whole answer, its `ToolResult` included."""


class McpToolError(ToolException):
    """A call that failed (``answer.ok`` is false): the tool turns it into an error ``ToolMessage``
    carrying the answer's content, so the model reads what went wrong and may try again."""

    def __init__(self, answer: ToolAnswer) -> None:
        super().__init__(answer.error or answer.text)
        self.answer = answer


class McpActorsTool(BaseTool):
    """One of the runtime's tools as a LangChain tool: build it with `of`."""

    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    _toolbox: Toolbox = PrivateAttr()
    _declared: AgentTool = PrivateAttr()

    @classmethod
    def of(cls, toolbox: Toolbox, declared: AgentTool) -> McpActorsTool:
        """The tool ``declared`` (from ``toolbox.tools()``), called through ``toolbox``."""
        tool = cls(
            name=declared.name,
            description=declared.description,
            # A copy, so that nothing LangChain does to it can reach the runtime's own schema.
            args_schema=copy.deepcopy(dict(declared.input_schema)),
            handle_tool_error=_error_content,
            metadata={"mcp_actors": {"tool": declared.tool, "read_only": declared.read_only}},
        )
        tool._toolbox, tool._declared = toolbox, declared
        return tool

    @property
    def declared(self) -> AgentTool:
        """The tool as the toolbox declared it (its ``namespace/tool``, schemas, read-only)."""
        return self._declared

    @property
    def toolbox(self) -> Toolbox:
        """The toolbox it calls through."""
        return self._toolbox

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        # The model's arguments go to the server whole, whatever their names: spread as keywords
        # they could meet LangChain's own (``run_manager``, ``config``, ``callbacks``).
        _, arguments = super()._to_args_and_kwargs(tool_input, tool_call_id)
        return (), {"arguments": arguments, "tool_call_id": tool_call_id}

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self.name} runs on the host's event loop: use ainvoke or astream")

    async def _arun(
        self, *args: Any, run_manager: AsyncCallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[list[ContentBlock], ToolArtifact]:
        arguments: dict[str, Any] = kwargs["arguments"]
        progress = _progress(self.name, kwargs.get("tool_call_id"), run_manager)
        answer = await self._toolbox.call(self.name, arguments, progress=progress)
        if not answer.ok:
            raise McpToolError(answer)
        return content_blocks(answer), ToolArtifact(structured_content=answer.structured, answer=answer)


async def langchain_tools(
    source: AsyncRuntime | Toolbox,
    *,
    namespaces: Collection[str] | None = None,
    timeout: float | None = None,
    skills: bool = False,
) -> list[BaseTool]:
    """The runtime's tools now, as LangChain tools (``namespaces``, ``timeout``, ``skills``:
    `Toolbox`'s, for a runtime; ``skills`` adds ``load_skill`` and ``read_skill_file``). For an
    agent that should see list changes, use `McpActorsMiddleware`."""
    toolbox = Toolbox.of(source, namespaces, timeout, skills)
    return [McpActorsTool.of(toolbox, declared) for declared in await toolbox.tools()]


def content_blocks(answer: ToolAnswer) -> list[ContentBlock]:
    """An answer's parts as LangChain content blocks: text and images as they are; an embedded
    text resource and a resource link as text that names their URI (a model cannot fetch an
    ``agent://`` URL); a binary resource as an image, audio or file block by its MIME type."""
    blocks = [_block(part) for part in answer.parts]
    if not blocks:
        # Some providers refuse an empty tool message.
        text = json.dumps(answer.structured, ensure_ascii=False) if answer.structured else ""
        blocks = [create_text_block(text or "(no content)")]
    return blocks


def _block(part: Part) -> ContentBlock:
    match part:
        case TextPart(text=text):
            return create_text_block(text)
        case ImagePart(data=data, mime_type=mime):
            return create_image_block(base64=data, mime_type=mime)
        case AudioPart(data=data, mime_type=mime):
            return create_audio_block(base64=data, mime_type=mime)
        case ResourcePart(blob=str(blob), mime_type=mime) if part.text is None:
            kind = (mime or "").partition("/")[0]
            if kind == "image":
                return create_image_block(base64=blob, mime_type=mime)
            if kind == "audio":
                return create_audio_block(base64=blob, mime_type=mime)
            return create_file_block(base64=blob, mime_type=mime or "application/octet-stream")
        case ResourcePart() | LinkPart():
            return create_text_block(part_text(part))


def _error_content(error: ToolException) -> str | list[dict[str, Any]]:
    """``handle_tool_error``: what the model reads of a failed call."""
    if isinstance(error, McpToolError):
        return cast("list[dict[str, Any]]", content_blocks(error.answer))
    return str(error)


def _progress(
    tool: str, tool_call_id: str | None, run_manager: AsyncCallbackManagerForToolRun | None
) -> AsyncProgress | None:
    """Where a call's progress goes: the tool run's callbacks, and LangGraph's custom stream."""
    writer = _stream_writer()
    if run_manager is None and writer is None:
        return None

    async def report(done: float, total: float | None, message: str | None) -> None:
        # On the awaiting task, in order, before the call's answer (`AsyncRuntime.call_tool`).
        event = ProgressChunk(
            event=PROGRESS_EVENT,
            tool=tool,
            tool_call_id=tool_call_id,
            progress=done,
            total=total,
            message=message,
        )
        if run_manager is not None:
            # As ``adispatch_custom_event`` does from inside a tool: an event of the tool's run.
            await run_manager.get_child().on_custom_event(PROGRESS_EVENT, event, run_id=run_manager.run_id)
        if writer is not None:
            writer(event)

    return report


def _stream_writer() -> StreamWriter | None:
    """The running LangGraph node's stream writer, or None outside a graph."""
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError):
        return None
